"""``celmut manifests``: print the install YAML for clusters without Helm.

The same objects as the Helm chart's defaults (``charts/celmut``): the CRDs, the webhook and
controller Deployments, Service, PodDisruptionBudget, RBAC and the MutatingWebhookConfiguration, plus
the Namespace. Apply with ``celmut manifests | kubectl apply --server-side -f -``; uninstall with
``celmut manifests | kubectl delete -f -``.

The policies.kyverno.io CRDs, and the wgpolicyk8s.io report CRDs, are printed only when celmut owns
them (``--kyverno-crds auto``, the default, asks the cluster of the current kubeconfig context — the
one kubectl applies to — and prints each one that does not exist yet or that celmut installed; the
others are Kyverno's, and so are left out of the install *and* of the uninstall). ``--kyverno-crds
include`` or ``skip`` decides without a cluster; without any kubeconfig ``auto`` includes them. The
choice is reported on stderr.
"""

from __future__ import annotations

import argparse
import re
import sys

import yaml

from celmut.cli import webhook_flags
from celmut.cli.help import BAD_INPUT, EXIT_BAD_INPUT, EXIT_OK
from celmut.install.kyverno_crds import kyverno_crds
from celmut.install.manifests import InstallOptions, manifests
from celmut.install.report_crds import report_crds
from celmut.install.webhook_config import parse_label_selector
from celmut.service import flags

EXIT_CODES = {EXIT_OK: "the manifests were printed", EXIT_BAD_INPUT: BAD_INPUT}
CEL_ENGINES = ("auto", "celpy", "cpp")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    defaults = InstallOptions()
    p = sub.add_parser(
        "manifests", help="print plain install manifests (the Helm chart's defaults)", description=__doc__
    )
    p.add_argument("--namespace", default=defaults.namespace, help=f"where celmut runs (default {defaults.namespace})")
    p.add_argument("--name", default=defaults.name, help=f"name of every object (default {defaults.name})")
    p.add_argument("--image", default=defaults.image, help=f"container image (default {defaults.image})")
    p.add_argument("--replicas", type=int, default=defaults.replicas, help="webhook replicas (default 2)")
    p.add_argument("--cel-engine", choices=CEL_ENGINES, default=defaults.cel_engine, help="CEL engine of the pods")
    webhook_flags.add_call_policies(p)
    p.add_argument("--timeout", type=int, default=defaults.timeout_seconds, help="webhook timeoutSeconds (1-30)")
    webhook_flags.add_namespace_exclusions(p)
    p.add_argument("--namespace-selector", metavar="SELECTOR", help="only namespaces it selects (a LabelSelector)")
    p.add_argument(
        "--kyverno-crds",
        choices=KYVERNO_CRD_CHOICES,
        default="auto",
        help="the policies.kyverno.io and wgpolicyk8s.io CRDs: auto (default: each one the cluster does not "
        "have, or has from celmut), include, or skip (Kyverno owns them)",
    )
    p.add_argument(
        "--skip-kyverno-crds", dest="kyverno_crds", action="store_const", const="skip", help="--kyverno-crds skip"
    )
    p.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig for --kyverno-crds auto (default: kubectl's)")
    flags.add_policy_selector(p)
    p.add_argument(
        "--kyverno-exceptions-namespace",
        metavar="NS",
        help="where the controller keeps the PolicyExceptions that make Kyverno skip celmut's policies "
        "(default: --namespace; '' for none)",
    )
    p.set_defaults(run=run)


KYVERNO_CRD_CHOICES = ("auto", "include", "skip")


def _kyverno_crds(choice: str, kubeconfig: str | None) -> tuple[str, ...]:
    """The Kyverno CRDs to print; ValueError when ``auto`` cannot ask the cluster it is configured for."""
    names = tuple(crd.name for crd in kyverno_crds() + report_crds())  # the CRDs others may own
    if choice != "auto":
        return names if choice == "include" else ()
    from celmut.kube.client import Cluster, ClusterError, NotFound  # the client loads only for auto
    from celmut.policy.selection import PART_OF, crd_is_celmuts

    try:
        cluster = Cluster.connect(kubeconfig, timeout=10)
    except ClusterError as ex:
        if kubeconfig is None and ex.reason == "Config":  # no cluster configured: rendering offline
            print("# --kyverno-crds auto: no kubeconfig, the policies.kyverno.io CRDs are included", file=sys.stderr)
            return names
        raise ValueError(f"--kyverno-crds auto: {ex}") from None
    chosen: list[str] = []
    try:
        for name in names:
            try:
                crd = cluster.get("apiextensions.k8s.io/v1", "customresourcedefinitions", "", name)
            except NotFound:
                chosen.append(name)
                print(f"# {name}: not in the cluster, included", file=sys.stderr)
                continue
            if crd_is_celmuts(crd):
                chosen.append(name)
                print(f"# {name}: installed by celmut, included", file=sys.stderr)
            else:
                owner = ((crd.get("metadata") or {}).get("labels") or {}).get(PART_OF, "not celmut")
                print(f"# {name}: owned by {owner} (Kyverno), left out", file=sys.stderr)
    except ClusterError as ex:
        raise ValueError(
            f"--kyverno-crds auto: cannot tell who owns the policies.kyverno.io CRDs ({ex}); "
            "give --kyverno-crds include or skip"
        ) from None
    finally:
        cluster.close()
    return tuple(chosen)


def run(args: argparse.Namespace) -> int:
    for what, value in (("--namespace", args.namespace), ("--name", args.name)):
        if len(value) > 50 or not _DNS_LABEL.match(value):
            print(
                f"error: {what} {value!r}: must be a lowercase RFC 1123 label of at most 50 characters", file=sys.stderr
            )
            return EXIT_BAD_INPUT
    if not 1 <= args.timeout <= 30:
        print(f"error: --timeout {args.timeout}: must be 1-30 seconds", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.replicas < 0:
        print("error: --replicas must not be negative", file=sys.stderr)
        return EXIT_BAD_INPUT
    exceptions_namespace = args.kyverno_exceptions_namespace
    if exceptions_namespace and (len(exceptions_namespace) > 63 or not _DNS_LABEL.match(exceptions_namespace)):
        print(f"error: --kyverno-exceptions-namespace {exceptions_namespace!r}: not a namespace name", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        namespace_selector = parse_label_selector(args.namespace_selector, "--namespace-selector")
        crds = _kyverno_crds(args.kyverno_crds, args.kubeconfig)
    except ValueError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return EXIT_BAD_INPUT
    excluded, fail_excluded = webhook_flags.excluded_namespaces(args)
    options = InstallOptions(
        namespace=args.namespace,
        name=args.name,
        image=args.image,
        replicas=args.replicas,
        cel_engine=args.cel_engine,
        failure_policy=args.failure_policy,
        reinvocation_policy=args.reinvocation_policy,
        timeout_seconds=args.timeout,
        kyverno_crds=crds,
        policy_selector=args.policy_selector,
        kyverno_exceptions=exceptions_namespace != "",
        kyverno_exceptions_namespace=exceptions_namespace or "",
        excluded_namespaces=excluded,
        fail_excluded_namespaces=fail_excluded,
        namespace_selector=namespace_selector,
    )
    print(yaml.safe_dump_all(manifests(options), sort_keys=False, width=120), end="")
    return EXIT_OK
