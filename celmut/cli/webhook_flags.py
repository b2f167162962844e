"""Flags ``celmut webhook-config`` and ``celmut manifests`` share: how the webhooks are called and which
namespaces are never sent to them (the chart's defaults; both print the same webhook configuration)."""

from __future__ import annotations

import argparse

from celmut.install.webhook_config import FAILURE_POLICIES, REINVOCATION_POLICIES

FAIL_EXCLUDED_BY_DEFAULT = ("kube-system",)


def add_call_policies(parser: argparse.ArgumentParser) -> None:
    """``--failure-policy`` and ``--reinvocation-policy``."""
    parser.add_argument(
        "--failure-policy",
        choices=FAILURE_POLICIES,
        default="Ignore",
        help="when the webhook serving Fail policies cannot be called (default Ignore: admit unchanged)",
    )
    parser.add_argument("--reinvocation-policy", choices=REINVOCATION_POLICIES, default="Never")


def add_namespace_exclusions(parser: argparse.ArgumentParser) -> None:
    """``--exclude-namespace`` and ``--fail-exclude-namespace``; :func:`excluded_namespaces` reads them."""
    parser.add_argument("--exclude-namespace", action="append", default=[], metavar="NS", help="never sent (repeat)")
    parser.add_argument(
        "--fail-exclude-namespace",
        action="append",
        metavar="NS",
        help="never sent to the Fail webhook (repeat; default kube-system; '' for none)",
    )


def excluded_namespaces(args: argparse.Namespace) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The namespaces never sent, and those never sent to the Fail webhook ('' given: none)."""
    fail_excluded = FAIL_EXCLUDED_BY_DEFAULT if args.fail_exclude_namespace is None else args.fail_exclude_namespace
    return tuple(n for n in args.exclude_namespace if n), tuple(n for n in fail_excluded if n)
