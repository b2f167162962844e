"""``celmut manifests``: print the install YAML for clusters without Helm.

The same objects as the Helm chart's defaults (``charts/celmut``), in two parts. ``celmut manifests
--crds``: what holds the user's objects — the Namespace and the CRDs — applied first (``celmut manifests
--crds | kubectl apply -f -``) and never piped to ``kubectl delete``. ``celmut manifests``: the webhook
and controller Deployments, Service, PodDisruptionBudget, RBAC and the MutatingWebhookConfiguration, so
``celmut manifests | kubectl delete -f -`` (the uninstall) and ``kubectl apply --prune`` never delete a
CRD or the Namespace, nor the policies in them. The controller registers, and keeps, the webhook that
refuses an invalid policy at ``kubectl apply`` (a ValidatingWebhookConfiguration owned by its own
ClusterRole, so deleting the manifests deletes it; ``--no-policy-validation`` for none).

The CRDs another product may own (Kyverno's policies.kyverno.io kinds, its GlobalContextEntry, the
wgpolicyk8s.io report kinds) are printed only while celmut may write them (``--kyverno-crds auto``,
the default, asks the cluster of the current kubeconfig context — the one kubectl applies to — and
prints each one that does not exist yet or that celmut installed; the others are left alone).
``--kyverno-crds include`` or ``skip`` decides without a cluster; without any kubeconfig ``auto``
includes them. The choice is reported on stderr.
"""
# Which CRDs are shared, and why celmut never deletes them: celmut/install/shared_crds.py.

from __future__ import annotations

import argparse
import sys

import yaml

from celmut import cel_engines, names
from celmut.cli import webhook_flags
from celmut.cli.help import BAD_INPUT, EXIT_BAD_INPUT, EXIT_OK
from celmut.install.manifests import InstallOptions, crd_manifests, manifests
from celmut.install.shared_crds import SHARED_CRDS
from celmut.install.webhook_config import parse_label_selector
from celmut.service import flags

EXIT_CODES = {EXIT_OK: "the manifests were printed", EXIT_BAD_INPUT: BAD_INPUT}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    defaults = InstallOptions()
    p = sub.add_parser(
        "manifests", help="print plain install manifests (the Helm chart's defaults)", description=__doc__
    )
    p.add_argument("--namespace", default=defaults.namespace, help=f"where celmut runs (default {defaults.namespace})")
    p.add_argument("--name", default=defaults.name, help=f"name of every object (default {defaults.name})")
    p.add_argument("--image", default=defaults.image, help=f"container image (default {defaults.image})")
    p.add_argument("--replicas", type=int, default=defaults.replicas, help="webhook replicas (default 2)")
    p.add_argument(
        "--cel-engine",
        choices=flags.CHOICES,
        default=defaults.cel_engine,
        help=f"CEL engine of the pods: compiled or interpreted (default {defaults.cel_engine})",
    )
    webhook_flags.add_call_policies(p)
    p.add_argument("--timeout", type=int, default=defaults.timeout_seconds, help="webhook timeoutSeconds (1-30)")
    webhook_flags.add_namespace_exclusions(p)
    p.add_argument("--namespace-selector", metavar="SELECTOR", help="only namespaces it selects (a LabelSelector)")
    p.add_argument(
        "--crds",
        action="store_true",
        help="print only the Namespace and the CRDs (apply them first; never pipe them to kubectl delete: "
        "they hold the policies)",
    )
    p.add_argument(
        "--static-rules",
        action="store_true",
        help="render the webhook configuration with the chart's static rules (webhook.managedRules: false); "
        "default: the controller writes it from the policies",
    )
    p.add_argument(
        "--no-policy-validation",
        dest="policy_validation",
        action="store_false",
        help="do not have the controller register the webhook that refuses invalid policies at kubectl apply "
        "(policyValidation.enabled: false)",
    )
    p.add_argument(
        "--kyverno-crds",
        choices=KYVERNO_CRD_CHOICES,
        default="auto",
        help="with --crds, the CRDs Kyverno may own: auto (default: each one the cluster does not have, or has "
        "from celmut), include, or skip (Kyverno owns them)",
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
    names = tuple(row.name for row in SHARED_CRDS)
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
        if not names.is_dns_label(value, max_length=50):
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
    if exceptions_namespace and not names.is_dns_label(exceptions_namespace):
        print(f"error: --kyverno-exceptions-namespace {exceptions_namespace!r}: not a namespace name", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        namespace_selector = parse_label_selector(args.namespace_selector, "--namespace-selector")
        crds = _kyverno_crds(args.kyverno_crds, args.kubeconfig) if args.crds else ()
    except ValueError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return EXIT_BAD_INPUT
    excluded, fail_excluded = webhook_flags.excluded_namespaces(args)
    cel_engine, deprecation = cel_engines.normalize(args.cel_engine, {})  # argparse checked the name
    if deprecation is not None:
        print(f"warning: {deprecation}", file=sys.stderr)
    options = InstallOptions(
        namespace=args.namespace,
        name=args.name,
        image=args.image,
        replicas=args.replicas,
        cel_engine=cel_engine,
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
        managed_rules=not args.static_rules,
        policy_validation=args.policy_validation,
    )
    printed = crd_manifests(options) if args.crds else manifests(options)
    print(yaml.safe_dump_all(printed, sort_keys=False, width=120), end="")
    return EXIT_OK
