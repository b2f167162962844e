"""``celmut webhook-config``: print the MutatingWebhookConfiguration for the loaded policies.

``(--service NAME --namespace NS | --url URL) --ca-bundle FILE [--policies PATH…]``. One webhook
per failurePolicy, rules from the policies (autogen included), ``sideEffects: NoneOnDryRun``,
``admissionReviewVersions: [v1]``, celmut's own namespace excluded, and an opt-out label.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from celmut.compile.pipeline import compile_paths
from celmut.install.webhook_config import webhook_configuration
from celmut.runtime.ownership import DEFAULT_OPT_OUT_LABEL

EXIT_OK, EXIT_BAD_INPUT = 0, 2


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("webhook-config", help="print the MutatingWebhookConfiguration", description=__doc__)
    p.add_argument("--policies", action="append", default=[], metavar="PATH", help="policy files or directories")
    p.add_argument("--service", metavar="NAME", help="the webhook Service name")
    p.add_argument("--namespace", metavar="NS", help="the webhook Service namespace (also excluded from mutation)")
    p.add_argument("--url", metavar="URL", help="the webhook URL (instead of a Service)")
    p.add_argument(
        "--ca-bundle", metavar="FILE", required=True, help="PEM bundle of the CA that signed the certificate"
    )
    p.add_argument("--name", default="celmut", help="MutatingWebhookConfiguration name")
    p.add_argument("--timeout", type=int, default=10, help="timeoutSeconds (1-30, default 10)")
    p.add_argument("--opt-out-label", default=DEFAULT_OPT_OUT_LABEL, help="objects with this label are skipped")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if bool(args.url) == bool(args.service):
        print("error: give --service NAME --namespace NS, or --url URL", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.service and not args.namespace:
        print("error: --service needs --namespace", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        ca_bundle = Path(args.ca_bundle).read_bytes()
    except OSError as ex:
        print(f"error: {args.ca_bundle}: {ex.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    compilation = compile_paths(*args.policies)
    if compilation.errors:
        for error in compilation.errors:
            print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    configuration = webhook_configuration(
        compilation.compiled.policies,
        ca_bundle=ca_bundle,
        service=(args.service, args.namespace) if args.service else None,
        url=args.url,
        name=args.name,
        timeout_seconds=args.timeout,
        own_namespace=args.namespace or "celmut",
        opt_out_label=args.opt_out_label,
    )
    print(yaml.safe_dump(configuration, sort_keys=False), end="")
    return EXIT_OK
