"""``celmut manifests``: print the install YAML for clusters without Helm.

The same objects as the Helm chart's defaults (``charts/celmut``): the CRDs, the webhook and
controller Deployments, Service, PodDisruptionBudget, RBAC and the MutatingWebhookConfiguration, plus
the Namespace. Apply with ``celmut manifests | kubectl apply --server-side -f -``; next to Kyverno add
``--skip-kyverno-crds`` (its CRDs are Kyverno's to manage).
"""

from __future__ import annotations

import argparse
import re
import sys

import yaml

from celmut.cli.help import BAD_INPUT, EXIT_BAD_INPUT, EXIT_OK
from celmut.install.manifests import InstallOptions, manifests
from celmut.install.webhook_config import parse_label_selector

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
    p.add_argument(
        "--failure-policy",
        choices=("Ignore", "Fail"),
        default=defaults.failure_policy,
        help="when the webhook serving Fail policies cannot be called (default Ignore: admit unchanged)",
    )
    p.add_argument("--reinvocation-policy", choices=("Never", "IfNeeded"), default=defaults.reinvocation_policy)
    p.add_argument("--timeout", type=int, default=defaults.timeout_seconds, help="webhook timeoutSeconds (1-30)")
    p.add_argument("--exclude-namespace", action="append", default=[], metavar="NS", help="never sent (repeat)")
    p.add_argument(
        "--fail-exclude-namespace",
        action="append",
        metavar="NS",
        help="never sent to the Fail webhook (repeat; default kube-system; '' for none)",
    )
    p.add_argument("--namespace-selector", metavar="SELECTOR", help="only namespaces it selects (a LabelSelector)")
    p.add_argument("--skip-kyverno-crds", action="store_true", help="leave out the policies.kyverno.io CRDs")
    p.set_defaults(run=run)


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
    try:
        namespace_selector = parse_label_selector(args.namespace_selector, "--namespace-selector")
    except ValueError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return EXIT_BAD_INPUT
    fail_excluded = ("kube-system",) if args.fail_exclude_namespace is None else args.fail_exclude_namespace
    options = InstallOptions(
        namespace=args.namespace,
        name=args.name,
        image=args.image,
        replicas=args.replicas,
        cel_engine=args.cel_engine,
        failure_policy=args.failure_policy,
        reinvocation_policy=args.reinvocation_policy,
        timeout_seconds=args.timeout,
        kyverno_crds=not args.skip_kyverno_crds,
        excluded_namespaces=tuple(n for n in args.exclude_namespace if n),
        fail_excluded_namespaces=tuple(n for n in fail_excluded if n),
        namespace_selector=namespace_selector,
    )
    print(yaml.safe_dump_all(manifests(options), sort_keys=False, width=120), end="")
    return EXIT_OK
