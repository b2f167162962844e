"""``celmut controller`` flags for the webhook configurations the leader writes: the mutating one
(``webhook.managedRules`` in the chart) and the policy validating one (``policyValidation.enabled``)."""

from __future__ import annotations

import argparse
import dataclasses
import urllib.parse
from typing import TYPE_CHECKING

from celmut.install.webhook_config import (
    FAILURE_POLICIES,
    REINVOCATION_POLICIES,
    WebhookSettings,
    parse_label_selector,
    read_ca_bundle,
    validate_webhook_url,
)

if TYPE_CHECKING:  # the Kubernetes client loads only when the controller runs, not for --help
    from celmut.controller.policy_validation import PolicyValidationConfig
    from celmut.controller.webhook_rules import WebhookRulesConfig
    from celmut.kube.tls_manager import TlsConfig


def add_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("managed webhook configuration (the leader keeps its rules in line with the policies)")
    group.add_argument("--manage-webhook-configuration", metavar="NAME", default="", help="its name (default: off)")
    group.add_argument("--webhook-service", metavar="NAME", default="celmut", help="the webhook Service (celmut)")
    group.add_argument(
        "--webhook-url",
        metavar="URL",
        default="",
        help="the webhook served outside the cluster at https://host[:port][/path] instead of the Service "
        "(Kyverno's --serverIP); the self-managed certificate then names that host too",
    )
    group.add_argument(
        "--webhook-ca-bundle",
        metavar="FILE",
        default="",
        help="the PEM CA bundle written into the configuration, for a webhook whose certificate celmut does "
        "not issue (not with self-managed TLS, which writes its own CA)",
    )
    group.add_argument("--webhook-namespace", metavar="NS", default="celmut", help="celmut's namespace (celmut)")
    group.add_argument("--webhook-failure-policy", choices=FAILURE_POLICIES, default="Ignore")
    group.add_argument("--webhook-reinvocation-policy", choices=REINVOCATION_POLICIES, default="Never")
    group.add_argument("--webhook-timeout", type=int, default=10, help="timeoutSeconds (1-30, default 10)")
    group.add_argument("--webhook-exclude-namespace", action="append", default=[], metavar="NS")
    group.add_argument(
        "--webhook-fail-exclude-namespace",
        action="append",
        metavar="NS[,NS]",
        help="never sent to the webhooks whose call fails closed (default kube-system; '' for none)",
    )
    group.add_argument("--webhook-namespace-selector", metavar="SELECTOR", help="a LabelSelector as JSON/YAML")
    group.add_argument(
        "--webhook-owner-clusterrole",
        metavar="NAME",
        default="",
        help="the ClusterRole owning the configuration: deleting it (helm uninstall) garbage-collects it",
    )
    group.add_argument(
        "--webhook-annotation",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an annotation of the webhook configurations the controller writes (e.g. cert-manager's inject-ca-from)",
    )
    validation = p.add_argument_group(
        "policy validating webhook (the leader registers it: invalid policies are refused at kubectl apply)"
    )
    validation.add_argument(
        "--manage-policy-validation",
        metavar="NAME",
        default="",
        help="the ValidatingWebhookConfiguration to keep (default: off; needs --from-cluster). It sends celmut's "
        "webhook the creations and updates of celmut's policy kinds only, failurePolicy Fail as Kyverno's; "
        "while Kyverno is installed its policies.kyverno.io kinds are left to Kyverno. Uses the --webhook-* "
        "Service or URL, timeout, CA bundle and annotations",
    )
    validation.add_argument(
        "--policy-validation-owner-clusterrole",
        metavar="NAME",
        default="",
        help="the ClusterRole owning it: deleting that ClusterRole (helm uninstall, or turning the feature off) "
        "deletes the configuration",
    )
    validation.add_argument(
        "--policy-validation-ca-from",
        metavar="NAME",
        default="",
        help="the MutatingWebhookConfiguration whose CA bundle it carries, the same webhook's "
        "(default: --manage-webhook-configuration's)",
    )


def _settings(args: argparse.Namespace) -> tuple[WebhookSettings, dict[str, str]]:
    """The ``--webhook-*`` settings and annotations shared by both configurations; ValueError names a bad flag."""
    if not 1 <= args.webhook_timeout <= 30:
        raise ValueError(f"--webhook-timeout {args.webhook_timeout}: must be 1-30 seconds")
    annotations = {}
    for item in args.webhook_annotation:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--webhook-annotation {item!r}: give KEY=VALUE")
        annotations[key] = value
    given = args.webhook_fail_exclude_namespace
    fail_excluded = ["kube-system"] if given is None else [n for item in given for n in item.split(",")]
    url = validate_webhook_url(args.webhook_url, "--webhook-url") if args.webhook_url else None
    ca_bundle = read_ca_bundle(args.webhook_ca_bundle, "--webhook-ca-bundle") if args.webhook_ca_bundle else None
    settings = WebhookSettings(
        service=None if url else (args.webhook_service, args.webhook_namespace),
        url=url,
        ca_bundle=ca_bundle,
        own_namespace=args.webhook_namespace,
        failure_policy=args.webhook_failure_policy,
        reinvocation_policy=args.webhook_reinvocation_policy,
        timeout_seconds=args.webhook_timeout,
        excluded_namespaces=tuple(n for n in args.webhook_exclude_namespace if n),
        fail_excluded_namespaces=tuple(n for n in fail_excluded if n),
        namespace_selector=parse_label_selector(args.webhook_namespace_selector, "--webhook-namespace-selector"),
        opt_out_label=args.opt_out_label,
    )
    return settings, annotations


def rules_config(args: argparse.Namespace) -> WebhookRulesConfig | None:
    """The managed configuration's settings (None when not managed); ValueError names a bad flag."""
    if not args.manage_webhook_configuration:
        return None
    settings, annotations = _settings(args)
    from celmut.controller.webhook_rules import WebhookRulesConfig

    return WebhookRulesConfig(
        settings,
        name=args.manage_webhook_configuration,
        owner_cluster_role=args.webhook_owner_clusterrole,
        annotations=annotations,
    )


def policy_validation_config(args: argparse.Namespace) -> PolicyValidationConfig | None:
    """The policy validating webhook's settings (None when not managed); ValueError names a bad flag."""
    if not args.manage_policy_validation:
        return None
    if not args.from_cluster:
        raise ValueError("--manage-policy-validation needs --from-cluster (Kyverno's presence decides its rules)")
    settings, annotations = _settings(args)
    from celmut.controller.policy_validation import PolicyValidationConfig

    return PolicyValidationConfig(
        settings,
        name=args.manage_policy_validation,
        owner_cluster_role=args.policy_validation_owner_clusterrole,
        ca_from=args.policy_validation_ca_from or args.manage_webhook_configuration,
        annotations=annotations,
    )


def tls_for_url(tls: TlsConfig | None, rules: WebhookRulesConfig | None) -> TlsConfig | None:
    """Self-managed TLS for a webhook served at ``--webhook-url``: its certificate names the URL's host
    too. ValueError when ``--webhook-ca-bundle`` is given as well: two writers of the bundle would undo
    each other's writes."""
    if tls is None or rules is None:
        return tls
    if rules.settings.ca_bundle is not None:
        raise ValueError(
            "--webhook-ca-bundle: self-managed TLS (CELMUT_TLS_SECRET) writes its own CA bundle; give one or the other"
        )
    host = urllib.parse.urlsplit(rules.settings.url).hostname if rules.settings.url else None
    return dataclasses.replace(tls, extra_hosts=(host,)) if host else tls
