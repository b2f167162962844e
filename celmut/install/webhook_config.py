"""The MutatingWebhookConfiguration that sends the right requests to celmut.

One webhook per failurePolicy (``/mutate/fail``, ``/mutate/ignore``), so a webhook call failure is
treated as its policies ask. Rules come from every admission-enabled policy's resource rules (autogen
variants included), de-duplicated; ``sideEffects: NoneOnDryRun`` (celmut refuses side effects on
dry runs); ``admissionReviewVersions: [v1]``; a namespaceSelector that keeps celmut's own namespace
out, and an objectSelector honouring an opt-out label. :func:`webhook_entry` builds one webhook; the
install manifests (:mod:`celmut.install.manifests`) register the same two with static rules.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from typing import Any

from celmut.compile.compiled import CompiledPolicy
from celmut.runtime.ownership import DEFAULT_OPT_OUT_LABEL

PATHS = {"Fail": "/mutate/fail", "Ignore": "/mutate/ignore"}


def _rules(policies: Iterable[CompiledPolicy]) -> list[dict[str, Any]]:
    seen: set[tuple[Any, ...]] = set()
    rules: list[dict[str, Any]] = []
    for policy in policies:
        for rule in policy.match.resource_rules:
            resources = rule.resources
            if policy.autogen:  # autogen's replicasets target: never a controller's (runtime/ownership.py)
                resources = tuple(r for r in resources if r.partition("/")[0] != "replicasets")
                if not resources:
                    continue
            key = (rule.api_groups, rule.api_versions, resources, rule.operations, rule.scope)
            if key in seen:
                continue
            seen.add(key)
            entry: dict[str, Any] = {
                "apiGroups": list(rule.api_groups),
                "apiVersions": list(rule.api_versions),
                "operations": list(rule.operations),
                "resources": list(resources),
            }
            if rule.scope != "*":
                entry["scope"] = rule.scope
            rules.append(entry)
    return rules


def webhook_entry(
    bucket: str,
    client_config: dict[str, Any],
    rules: list[dict[str, Any]],
    *,
    failure_policy: str | None = None,
    reinvocation_policy: str = "Never",
    timeout_seconds: int = 10,
    excluded_namespaces: Sequence[str] = ("celmut",),
    opt_out_label: str = DEFAULT_OPT_OUT_LABEL,
) -> dict[str, Any]:
    """The webhook serving the policies whose failurePolicy is ``bucket`` (``Fail`` or ``Ignore``).

    ``failure_policy`` is what the API server does when the call fails (default: ``bucket``);
    objects in ``excluded_namespaces`` and objects carrying ``opt_out_label`` are never sent.
    """
    return {
        "name": f"{bucket.lower()}.mutate.celmut.io",
        "admissionReviewVersions": ["v1"],
        "clientConfig": client_config,
        "failurePolicy": failure_policy or bucket,
        "matchPolicy": "Equivalent",
        "reinvocationPolicy": reinvocation_policy,
        "sideEffects": "NoneOnDryRun",
        "timeoutSeconds": timeout_seconds,
        "rules": rules,
        "namespaceSelector": {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(excluded_namespaces)}
            ]
        },
        "objectSelector": {"matchExpressions": [{"key": opt_out_label, "operator": "DoesNotExist"}]},
    }


def webhook_configuration(
    policies: Iterable[CompiledPolicy],
    *,
    ca_bundle: bytes,
    service: tuple[str, str] | None = None,
    url: str | None = None,
    name: str = "celmut",
    timeout_seconds: int = 10,
    own_namespace: str = "celmut",
    opt_out_label: str = DEFAULT_OPT_OUT_LABEL,
) -> dict[str, Any]:
    """A ``admissionregistration.k8s.io/v1`` MutatingWebhookConfiguration for ``policies``."""
    if (service is None) == (url is None):
        raise ValueError("give exactly one of a service (name, namespace) or a URL")
    admission = [p for p in policies if p.admission and not (p.mutate_existing and p.target is not None)]
    webhooks = []
    for failure_policy in ("Fail", "Ignore"):
        bucket = [p for p in admission if p.failure_policy == failure_policy]
        if not bucket:
            continue
        client: dict[str, Any] = {"caBundle": base64.b64encode(ca_bundle).decode("ascii")}
        if service is not None:
            client["service"] = {
                "name": service[0],
                "namespace": service[1],
                "path": PATHS[failure_policy],
                "port": 443,
            }
        elif url is not None:  # exactly one of service and url is set (checked above)
            client["url"] = url.rstrip("/") + PATHS[failure_policy]
        timeout = max([timeout_seconds, *[p.timeout_seconds for p in bucket if p.timeout_seconds]])
        reinvocation = "IfNeeded" if any(p.reinvocation_policy == "IfNeeded" for p in bucket) else "Never"
        webhooks.append(
            webhook_entry(
                failure_policy,
                client,
                _rules(bucket),
                reinvocation_policy=reinvocation,
                timeout_seconds=min(timeout, 30),
                excluded_namespaces=[own_namespace],
                opt_out_label=opt_out_label,
            )
        )
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "celmut"}},
        "webhooks": webhooks,
    }
