"""The MutatingWebhookConfiguration that sends the right requests to celmut.

One webhook per failurePolicy (``/mutate/fail``, ``/mutate/ignore``), so a webhook call failure is
treated as its policies ask. Rules come from every admission-enabled policy's resource rules (autogen
variants included), de-duplicated; ``sideEffects: NoneOnDryRun`` (celmut refuses side effects on
dry runs); ``admissionReviewVersions: [v1]``; a namespaceSelector that keeps celmut's own namespace
out, and an objectSelector honouring an opt-out label.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

from celmut.compile.compiled import CompiledPolicy

DEFAULT_OPT_OUT_LABEL = "celmut.io/ignore"
_PATHS = {"Fail": "/mutate/fail", "Ignore": "/mutate/ignore"}


def _rules(policies: Iterable[CompiledPolicy]) -> list[dict[str, Any]]:
    seen: set[tuple[Any, ...]] = set()
    rules: list[dict[str, Any]] = []
    for policy in policies:
        for rule in policy.match.resource_rules:
            key = (rule.api_groups, rule.api_versions, rule.resources, rule.operations, rule.scope)
            if key in seen:
                continue
            seen.add(key)
            entry: dict[str, Any] = {
                "apiGroups": list(rule.api_groups),
                "apiVersions": list(rule.api_versions),
                "operations": list(rule.operations),
                "resources": list(rule.resources),
            }
            if rule.scope != "*":
                entry["scope"] = rule.scope
            rules.append(entry)
    return rules


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
                "path": _PATHS[failure_policy],
                "port": 443,
            }
        else:
            client["url"] = url.rstrip("/") + _PATHS[failure_policy]  # type: ignore[union-attr]
        timeout = max([timeout_seconds, *[p.timeout_seconds for p in bucket if p.timeout_seconds]])
        webhooks.append(
            {
                "name": f"{failure_policy.lower()}.mutate.celmut.io",
                "admissionReviewVersions": ["v1"],
                "clientConfig": client,
                "failurePolicy": failure_policy,
                "matchPolicy": "Equivalent",
                "reinvocationPolicy": "IfNeeded"
                if any(p.reinvocation_policy == "IfNeeded" for p in bucket)
                else "Never",
                "sideEffects": "NoneOnDryRun",
                "timeoutSeconds": min(timeout, 30),
                "rules": _rules(bucket),
                "namespaceSelector": {
                    "matchExpressions": [
                        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [own_namespace]}
                    ]
                },
                "objectSelector": {"matchExpressions": [{"key": opt_out_label, "operator": "DoesNotExist"}]},
            }
        )
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "celmut"}},
        "webhooks": webhooks,
    }
