"""Background scan benchmark: 10,000 existing ~6 KB pods against 20 mutateExisting policies.

The fake API server (tests/fakekube) runs in its own process, seeded with the pods; the controller
runs here, through the real kubernetes client, from the first list to an empty queue. 5 policies
change every pod (labels and annotations: a running pod accepts those), 5 target resources that do
not exist, 5 select no pod by objectSelector and 5 reject every pod in a targetMatchCondition.
Reports wall time, evaluations/s, writes, and where the workers' time went (CEL vs API calls).

    python benchmarks/controller_bench.py [--pods 10000] [--cel-engine compiled|interpreted]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]
from workloads import realistic_pod  # noqa: E402

RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}
LABEL = '[JSONPatch{{op: "add", path: "/metadata/labels/scan-{i}", value: string(object.spec.containers.size())}}]'
ANNOTATE = (
    '[JSONPatch{{op: "add", path: "/metadata/annotations/images-{i}", '
    'value: object.spec.containers.map(c, c.image.split(":")[0]).join(",")}}]'
)


def _policy(name: str, expression: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "evaluation": {"admission": {"enabled": False}, "mutateExisting": {"enabled": True}},
        "matchConstraints": {"resourceRules": [RULE]},
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}],
    }
    body.update(spec)
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": name}, "spec": body}


def scan_policies() -> list[dict[str, Any]]:
    docs = [_policy(f"label-{i}", (LABEL if i % 2 else ANNOTATE).format(i=i)) for i in range(5)]
    for i in range(5):
        other = {**RULE, "resources": ["configmaps"]}
        docs.append(_policy(f"other-kind-{i}", LABEL.format(i=i), matchConstraints={"resourceRules": [other]}))
        selector = {"matchLabels": {"tier": f"none-{i}"}}
        unselected = {"resourceRules": [RULE], "objectSelector": selector}
        docs.append(_policy(f"no-selector-{i}", LABEL.format(i=i), matchConstraints=unselected))
        condition = [{"name": "gpu", "expression": f'object.spec.containers.exists(c, c.image.startsWith("cuda-{i}"))'}]
        docs.append(_policy(f"no-condition-{i}", LABEL.format(i=i), targetMatchConditions=condition))
    return docs


def run_fake_server(pods: int, pipe: Connection) -> None:
    from tests.fakekube import FakeApiServer

    server = FakeApiServer(history_size=4 * pods + 1000).start()
    template = realistic_pod()
    for index in range(pods):
        pod = {**template, "metadata": {**template["metadata"], "name": f"checkout-{index:05d}"}}
        server.store.create(pod)
    path = server.kubeconfig(Path(tempfile.mkdtemp()) / "kubeconfig")
    pipe.send(str(path))
    pipe.recv()  # until told to stop
    server.stop()


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cel-engine", choices=("compiled", "interpreted"), default=None)
    args = parser.parse_args()
    if args.cel_engine:
        os.environ["CELMUT_CEL_ENGINE"] = args.cel_engine

    from celmut.cel.backends import select
    from celmut.controller.run import Controller, ControllerConfig
    from celmut.kube.client import Cluster
    from celmut.service.settings import ServiceSettings

    policy_dir = Path(tempfile.mkdtemp(prefix="celmut-scan-bench-"))
    for document in scan_policies():
        (policy_dir / f"{document['metadata']['name']}.yaml").write_text(yaml.safe_dump(document))

    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(target=run_fake_server, args=(args.pods, child), daemon=True)
    server.start()
    kubeconfig = parent.recv()
    try:
        cluster = Cluster.connect(kubeconfig, timeout=30)
        service = ServiceSettings(policy_paths=(str(policy_dir),))
        config = ControllerConfig(service, rate=1e6, workers=args.workers, scan_interval=0)
        controller = Controller(config, cluster)
        server_cpu, own_cpu = cpu_seconds(server.pid), time.process_time()
        started = time.perf_counter()
        controller.start()
        listed = time.perf_counter()
        while not controller.idle():
            time.sleep(0.05)
        finished = time.perf_counter()
        server_cpu, own_cpu = cpu_seconds(server.pid) - server_cpu, time.process_time() - own_cpu
        controller.stop()
    finally:
        parent.send("stop")
        server.join(timeout=30)

    actions = controller.report.summary()  # a running controller counts its targets (and keeps the last few)
    timing = controller.reconciler.timings
    busy = sum(timing.values())
    evaluations = controller.metrics.evaluations._value.get() + controller.reconciler.evaluations
    print(f"engine {select.resolve()}; {args.pods:,} pods × 20 mutateExisting policies; {args.workers} workers")
    print(f"  start (policies, list, scan queued) {listed - started:6.2f} s")
    print(f"  queue drained                        {finished - listed:6.2f} s")
    print(f"  wall time                            {finished - started:6.2f} s   (target < 30 s)")
    print(f"  targets {sum(actions.values()):,}: {', '.join(f'{n:,} {a}' for a, n in sorted(actions.items()))}")
    writes = controller.metrics.writes._value.get()
    print(f"  evaluations {evaluations:,.0f} ({evaluations / (finished - started):,.0f}/s); writes {writes:,.0f}")
    print(f"  CPU: controller process {own_cpu:.1f} s, fake API server process {server_cpu:.1f} s")
    if busy:
        print(
            "  worker time: "
            + ", ".join(f"{name} {seconds:.1f} s ({seconds / busy:.0%})" for name, seconds in timing.items())
        )


if __name__ == "__main__":
    main()
