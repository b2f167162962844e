"""``celmut version``: the client's version and, with ``--from-cluster``, what the cluster runs.

Like ``kyverno version`` (and ``kubectl version``: client first, then the server side), this prints
the version of this celmut and which build of its hot path runs (compiled with mypyc, or pure
Python, and why: ``CELMUT_PURE=1`` forces the pure one); ``--from-cluster`` then lists each celmut
Deployment of the current kubeconfig context (label ``app.kubernetes.io/name=celmut``, set by the
Helm chart and by ``celmut manifests``): namespace/name, component, the image tag of its celmut
container, the ``app.kubernetes.io/version`` label and ready/desired replicas. Read-only: one list request.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from celmut import __version__
from celmut.cli.help import BAD_INPUT, EXIT_BAD_INPUT, EXIT_OK
from celmut.native import current_build

EXIT_CODES = {EXIT_OK: "printed", EXIT_BAD_INPUT: BAD_INPUT + "; no cluster connection with --from-cluster"}
SELECTOR = "app.kubernetes.io/name=celmut"
COLUMNS = ("DEPLOYMENT", "COMPONENT", "IMAGE TAG", "VERSION LABEL", "READY")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("version", help="print the client version (and the cluster's, with --from-cluster)",
                       description=__doc__)  # fmt: skip
    p.add_argument("--from-cluster", action="store_true", help="also list the celmut Deployments the cluster runs")
    p.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig for --from-cluster (default: ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context for --from-cluster (default: the current one)")
    p.add_argument("-n", "--namespace", help="with --from-cluster: only this namespace (default: all)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    print(f"Client Version: celmut {__version__}")
    print(f"Build: {current_build().describe()}")
    if not args.from_cluster:
        for flag in ("kubeconfig", "context", "namespace"):
            if getattr(args, flag) is not None:
                print(f"error: --{flag} is read with --from-cluster only", file=sys.stderr)
                return EXIT_BAD_INPUT
        return EXIT_OK
    from celmut.kube.client import Cluster

    cluster = Cluster.connect(args.kubeconfig, context=args.context)
    try:
        listed = cluster.list_all("apps/v1", "deployments", args.namespace or "", label_selector=SELECTOR)
    finally:
        cluster.close()
    rows = [deployment_row(d) for d in listed.get("items") or []]
    if not rows:
        where = f"namespace {args.namespace}" if args.namespace else "the cluster"
        print(f"Server: no celmut Deployment ({SELECTOR}) in {where}")
        return EXIT_OK
    print("Server:")
    widths = [max(len(r[i]) for r in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
    for row in [COLUMNS, *sorted(rows)]:
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return EXIT_OK


def image_tag(image: str) -> str:
    """The tag (or digest) of an image reference; ``latest`` when it has none, as the runtime reads it."""
    if "@" in image:
        return image.split("@", 1)[1]
    name = image.rsplit("/", 1)[-1]
    return name.split(":", 1)[1] if ":" in name else "latest"


def deployment_row(deployment: dict[str, Any]) -> tuple[str, str, str, str, str]:
    meta = deployment.get("metadata") or {}
    labels = meta.get("labels") or {}
    containers = ((deployment.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []
    chosen = next((c for c in containers if c.get("name") in ("celmut", "webhook", "controller")), None)
    chosen = chosen or (containers[0] if containers else {})
    status = deployment.get("status") or {}
    ready = f"{status.get('readyReplicas', 0)}/{(deployment.get('spec') or {}).get('replicas', 1)}"
    return (
        f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        str(labels.get("app.kubernetes.io/component", "-")),
        image_tag(str(chosen.get("image", ""))) if chosen.get("image") else "-",
        str(labels.get("app.kubernetes.io/version", "-")),
        ready,
    )
