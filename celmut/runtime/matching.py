"""``matchConstraints`` matching, in Kyverno's order: namespaceSelector, objectSelector,
excludeResourceRules, resourceRules (semantics §2.1).

Resource rules follow the API server's webhook rules: ``*`` matches every resource but no
subresource, ``*/*`` everything, ``pods/*`` every pods subresource, ``*/status`` the status of any
resource; ``scope`` Cluster/Namespaced; ``resourceNames`` with Kyverno's quirk that a nameless object
matches when its ``generateName`` starts with a listed name. Each function returns the reason a
request does not match ('' when it does), which the results report.
"""

from __future__ import annotations

from typing import Any

from celmut.policy.match import MatchResources, ResourceRule
from celmut.runtime import selectors
from celmut.runtime.request import AdmissionInput

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

NAMESPACE_SELECTOR_MISMATCH = "namespaceSelector does not match"
OBJECT_SELECTOR_MISMATCH = "objectSelector does not match"
EXCLUDED = "excluded by excludeResourceRules"
NO_RULE_MATCHES = "no resourceRule matches"
#: The matchConstraints field behind each reason :func:`match_reason` gives.
REASON_FIELDS = {
    NAMESPACE_SELECTOR_MISMATCH: "namespaceSelector",
    OBJECT_SELECTOR_MISMATCH: "objectSelector",
    EXCLUDED: "excludeResourceRules",
    NO_RULE_MATCHES: "resourceRules",
}


def _listed(values: tuple[str, ...], value: str) -> bool:
    return "*" in values or value in values


def _resource_listed(patterns: tuple[str, ...], resource: str, sub_resource: str) -> bool:
    for pattern in patterns:
        if pattern == "*/*":
            return True
        base, _, sub = pattern.partition("/")
        if base not in ("*", resource):
            continue
        if not sub_resource and not sub:
            return True
        if sub_resource and sub in ("*", sub_resource):
            return True
    return False


def _scope_matches(scope: str, request: AdmissionInput) -> bool:
    if scope in ("", "*"):
        return True
    is_namespace = request.resource.resource == "namespaces" and request.resource.group == ""
    if scope == "Namespaced":
        return not is_namespace and bool(request.namespace)
    return is_namespace or not request.namespace


def _names_match(names: tuple[str, ...], request: AdmissionInput) -> bool:
    if not names:
        return True
    if request.name:
        return request.name in names
    generate_name = str((request.subject.get("metadata") or {}).get("generateName", ""))
    return bool(generate_name) and any(generate_name.startswith(name) for name in names)


def rule_selects(
    rule: ResourceRule, group: str, version: str, resource: str, sub_resource: str, operation: str | None
) -> bool:
    """Whether the rule names this kind of request (operation, group, version, resource and
    subresource); ``operation`` None is not checked. Scope and resource names depend on the object."""
    return (
        (operation is None or _listed(rule.operations, operation))
        and _listed(rule.api_groups, group)
        and _listed(rule.api_versions, version)
        and _resource_listed(rule.resources, resource, sub_resource)
    )


def rule_matches(rule: ResourceRule, request: AdmissionInput, *, check_operation: bool = True) -> bool:
    gvr = request.resource
    operation = request.operation if check_operation else None
    return (
        rule_selects(rule, gvr.group, gvr.version, gvr.resource, request.sub_resource, operation)
        and _scope_matches(rule.scope, request)
        and _names_match(rule.resource_names, request)
    )


def namespace_labels(request: AdmissionInput, namespace_object: Any) -> dict[str, str]:
    """Labels a namespaceSelector is evaluated against (Kyverno's stand-in when the Namespace is unknown)."""
    if isinstance(namespace_object, dict):
        labels = selectors.labels_of(namespace_object)
        if request.namespace and NAMESPACE_NAME_LABEL not in labels:
            labels[NAMESPACE_NAME_LABEL] = request.namespace
        return labels
    return {NAMESPACE_NAME_LABEL: request.namespace} if request.namespace else {}


def namespace_selector_matches(match: MatchResources, request: AdmissionInput, labels: dict[str, str]) -> bool:
    if match.namespace_selector.is_empty:
        return True
    is_namespace = request.resource.resource == "namespaces" and request.resource.group == ""
    if is_namespace and request.operation in ("CREATE", "UPDATE"):
        return selectors.matches(match.namespace_selector, selectors.labels_of(request.subject))
    if not request.namespace:
        return True  # cluster-scoped objects always pass
    return selectors.matches(match.namespace_selector, labels)


def decided_by_kind(match: MatchResources) -> bool:
    """Whether the kind of request alone (group, version, resource, subresource, operation) decides
    :func:`match_reason`: no selectors, no excludeResourceRules, no scope or resourceNames in the
    resource rules. Such a match holds for every request
    :func:`celmut.runtime.candidates.may_select` lets through."""
    return (
        match.namespace_selector.is_empty
        and match.object_selector.is_empty
        and not match.exclude_resource_rules
        and all(rule.scope in ("", "*") and not rule.resource_names for rule in match.resource_rules)
    )


def match_reason(
    match: MatchResources, request: AdmissionInput, namespace_labels: dict[str, str], *, check_operation: bool = True
) -> str:
    """'' when the request matches; otherwise why it does not."""
    if not namespace_selector_matches(match, request, namespace_labels):
        return NAMESPACE_SELECTOR_MISMATCH
    if not match.object_selector.is_empty:
        new_labels = selectors.labels_of(request.object)
        old_labels = selectors.labels_of(request.old_object)
        new_ok = request.object is not None and selectors.matches(match.object_selector, new_labels)
        old_ok = request.old_object is not None and selectors.matches(match.object_selector, old_labels)
        if not (new_ok or old_ok):
            return OBJECT_SELECTOR_MISMATCH
    for rule in match.exclude_resource_rules:
        if rule_matches(rule, request, check_operation=check_operation):
            return EXCLUDED
    if match.resource_rules and not any(
        rule_matches(rule, request, check_operation=check_operation) for rule in match.resource_rules
    ):
        return NO_RULE_MATCHES
    return ""
