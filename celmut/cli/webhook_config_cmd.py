"""``celmut webhook-config``: print the MutatingWebhookConfiguration that sends celmut what it serves.

``--from-cluster`` (the webhook runs ``celmut serve --from-cluster``): both webhooks, with the rules the
kinds read from the cluster need (pods for the presets, the pod controllers for autogen) plus those of
any ``--policies``; exactly what the Helm chart renders with ``webhook.managedRules: false``.
``--policies`` alone: exactly what the controller writes for those policies with ``webhook.managedRules``
(the chart's default): one webhook per failurePolicy and timeoutSeconds present, with the policies'
rules. The Service (``--service``/``--namespace``,
default ``celmut``/``celmut``, as the chart) or ``--url``; ``--ca-bundle`` (omitted: injected later by
celmut's controller or cert-manager). The chart's defaults: the Fail webhook ignores call failures
(``--failure-policy``), celmut's namespace never and kube-system never by the Fail webhook
(``--exclude-namespace``, ``--fail-exclude-namespace``), any ``--namespace-selector``. Exit 2 on bad
input, and rather than print a configuration that registers nothing.

Next to Kyverno, only the MutatingPolicies celmut owns are registered: ``--policy-selector`` (as
``celmut serve``'s, e.g. ``celmut.io/owner=celmut``) leaves the others of ``--policies`` out; they are
Kyverno's to serve.
"""

from __future__ import annotations

import argparse
import sys

import yaml

from celmut.cli import webhook_flags
from celmut.install import managed_webhooks
from celmut.install.webhook_config import (
    DEFAULT_RULES,
    Bucket,
    WebhookSettings,
    admission_policies,
    chart_buckets,
    parse_label_selector,
    policy_rules,
    read_ca_bundle,
    validate_webhook_url,
    webhook_configuration,
)
from celmut.policy.selection import PolicySelection, PolicySelectorError
from celmut.runtime.ownership import DEFAULT_OPT_OUT_LABEL
from celmut.service import flags

EXIT_OK, EXIT_BAD_INPUT = 0, 2


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("webhook-config", help="print the MutatingWebhookConfiguration", description=__doc__)
    flags.add_policies(p)
    p.add_argument(
        "--from-cluster",
        action="store_true",
        help="the webhook serves cluster policies: register both webhooks with the chart's rules",
    )
    p.add_argument("--service", metavar="NAME", help="the webhook Service (default celmut, unless --url)")
    p.add_argument("--namespace", metavar="NS", default="celmut", help="celmut's namespace (default celmut)")
    p.add_argument("--url", metavar="URL", help="the webhook URL (instead of a Service)")
    p.add_argument("--ca-bundle", metavar="FILE", help="PEM bundle of the CA that signed the serving certificate")
    p.add_argument("--name", default="celmut", help="MutatingWebhookConfiguration name (default celmut)")
    p.add_argument("--timeout", type=int, default=10, help="timeoutSeconds (1-30, default 10)")
    webhook_flags.add_call_policies(p)
    webhook_flags.add_namespace_exclusions(p)
    p.add_argument(
        "--namespace-selector",
        metavar="SELECTOR",
        help="only namespaces it selects are sent: a LabelSelector as JSON/YAML, e.g. '{matchLabels: {a: b}}'",
    )
    p.add_argument("--opt-out-label", default=DEFAULT_OPT_OUT_LABEL, help="objects with this label are skipped")
    p.add_argument(
        "--policy-selector",
        default="",
        metavar="SELECTOR",
        help="register only the MutatingPolicies of --policies this label selector selects (those celmut "
        "serves, e.g. celmut.io/owner=celmut); default: all",
    )
    p.set_defaults(run=run)


def _settings(args: argparse.Namespace) -> WebhookSettings:
    if args.url and args.service:
        raise ValueError("give --service NAME or --url URL, not both")
    if not 1 <= args.timeout <= 30:
        raise ValueError(f"--timeout {args.timeout}: must be 1-30 seconds")
    ca_bundle = read_ca_bundle(args.ca_bundle, "--ca-bundle") if args.ca_bundle else None
    if args.url:
        validate_webhook_url(args.url, "--url")
    excluded, fail_excluded = webhook_flags.excluded_namespaces(args)
    return WebhookSettings(
        service=None if args.url else (args.service or "celmut", args.namespace),
        url=args.url,
        own_namespace=args.namespace,
        ca_bundle=ca_bundle,
        failure_policy=args.failure_policy,
        reinvocation_policy=args.reinvocation_policy,
        timeout_seconds=args.timeout,
        excluded_namespaces=excluded,
        fail_excluded_namespaces=fail_excluded,
        namespace_selector=parse_label_selector(args.namespace_selector, "--namespace-selector"),
        opt_out_label=args.opt_out_label,
    )


def run(args: argparse.Namespace) -> int:
    if not args.policies and not args.from_cluster:
        print(
            "error: nothing to register: give --from-cluster (the webhook serves cluster policies) "
            "and/or --policies PATH",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    try:
        settings = _settings(args)
    except ValueError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        ownership = PolicySelection(args.policy_selector).resolve_offline()
    except PolicySelectorError as ex:
        print(f"error: --policy-selector: {ex}", file=sys.stderr)
        return EXIT_BAD_INPUT
    policies = []
    if args.policies:
        from celmut.compile.pipeline import compile_documents, read_paths  # the compiler loads only here

        documents, read_errors = read_paths(*args.policies)
        kept = [
            d
            for d in documents
            if not isinstance(d.content, dict) or not ownership.declines(str(d.content.get("kind") or ""), d.content)
        ]
        compilation = compile_documents(kept)
        compilation.compiled.errors[:0] = read_errors
        if compilation.errors:
            for error in compilation.errors:
                print(f"error: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        policies = compilation.compiled.policies
    buckets: list[Bucket] = []
    if args.from_cluster:
        buckets = chart_buckets(settings, policy_rules(admission_policies(policies), DEFAULT_RULES))
        configuration = webhook_configuration(buckets, settings, name=args.name)
    else:
        configuration = managed_webhooks.plan(policies, settings, name=args.name).configuration
    if not any(webhook["rules"] for webhook in configuration["webhooks"]):
        print(
            f"error: refusing to print an empty configuration: no policy in {', '.join(args.policies)} runs at "
            "admission (use --from-cluster for a webhook serving cluster policies)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    print(yaml.safe_dump(configuration, sort_keys=False), end="")
    return EXIT_OK
