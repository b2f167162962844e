"""matchConstraints: resource rules (operations, groups, versions, resources and subresources,
scope, resourceNames and the generateName quirk), exclusions, namespaceSelector and objectSelector."""

from __future__ import annotations

from typing import Any

import pytest

from celmut import kinds
from celmut.policy.match import LabelSelector, MatchResources, Requirement, ResourceRule
from celmut.runtime.matching import match_reason, namespace_labels
from celmut.runtime.request import AdmissionInput


def request(obj: dict[str, Any] | None = None, operation: str = "CREATE", sub: str = "", **kw: Any) -> AdmissionInput:
    obj = obj or {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"}}
    req = AdmissionInput.from_object(obj, operation, **kw)
    req.sub_resource = sub
    return req


def rule(**kw: Any) -> ResourceRule:
    base = {"api_groups": ("",), "api_versions": ("v1",), "resources": ("pods",), "operations": ("CREATE",)}
    base.update(kw)
    return ResourceRule(**base)


NAMELESS = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "web-abc-", "namespace": "default"}}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"team": "a"}}}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}

RULE_CASES = [
    ("exact rule matches", rule(), request(), ""),
    ("operation not listed", rule(operations=("UPDATE",)), request(), "no resourceRule"),
    ("operation wildcard", rule(operations=("*",)), request(operation="DELETE"), ""),
    ("group mismatch", rule(api_groups=("apps",)), request(), "no resourceRule"),
    ("version wildcard", rule(api_versions=("*",)), request(), ""),
    ("resource wildcard matches resources", rule(resources=("*",)), request(), ""),
    ("resource wildcard excludes subresources", rule(resources=("*",)), request(sub="status"), "no resourceRule"),
    ("*/* matches subresources", rule(resources=("*/*",)), request(sub="status"), ""),
    ("pods does not match pods/status", rule(), request(sub="status"), "no resourceRule"),
    ("pods/* matches pods/binding", rule(resources=("pods/*",)), request(sub="binding"), ""),
    ("*/status matches pods/status", rule(resources=("*/status",)), request(sub="status"), ""),
    ("Namespaced scope matches a pod", rule(scope="Namespaced"), request(), ""),
    ("Cluster scope skips a pod", rule(scope="Cluster"), request(), "no resourceRule"),
    ("Cluster scope matches a node", rule(resources=("nodes",), scope="Cluster"), request(NODE), ""),
    ("resourceNames lists the name", rule(resource_names=("web",)), request(), ""),
    ("resourceNames misses", rule(resource_names=("api",)), request(), "no resourceRule"),
    ("generateName prefix quirk", rule(resource_names=("web",)), request(NAMELESS), ""),
    ("generateName no prefix", rule(resource_names=("api",)), request(NAMELESS), "no resourceRule"),
]


@pytest.mark.parametrize(("name", "rule_", "req", "reason"), RULE_CASES, ids=[c[0] for c in RULE_CASES])
def test_resource_rules(name: str, rule_: ResourceRule, req: AdmissionInput, reason: str) -> None:
    match = MatchResources(resource_rules=(rule_,))
    result = match_reason(match, req, namespace_labels(req, None))
    assert (reason in result) if reason else result == ""


def test_exclusions_win_over_inclusions() -> None:
    match = MatchResources(resource_rules=(rule(),), exclude_resource_rules=(rule(resource_names=("web",)),))
    assert "excluded" in match_reason(match, request(), {})


SELECTOR = LabelSelector(match_labels=(("team", "a"),))


def test_namespace_selector_uses_the_namespace_object_labels() -> None:
    match = MatchResources(resource_rules=(rule(),), namespace_selector=SELECTOR)
    req = request()
    assert match_reason(match, req, namespace_labels(req, {"metadata": {"labels": {"team": "a"}}})) == ""
    assert "namespaceSelector" in match_reason(match, req, namespace_labels(req, {"metadata": {"labels": {}}}))


def test_without_a_namespace_object_only_the_metadata_name_label_is_known() -> None:
    by_name = LabelSelector(match_labels=(("kubernetes.io/metadata.name", "default"),))
    match = MatchResources(resource_rules=(rule(),), namespace_selector=by_name)
    req = request()
    assert match_reason(match, req, namespace_labels(req, None)) == ""
    match = MatchResources(resource_rules=(rule(),), namespace_selector=SELECTOR)
    assert "namespaceSelector" in match_reason(match, req, namespace_labels(req, None))


def test_cluster_scoped_objects_always_pass_the_namespace_selector() -> None:
    match = MatchResources(resource_rules=(rule(resources=("nodes",)),), namespace_selector=SELECTOR)
    assert match_reason(match, request(NODE), {}) == ""


def test_a_namespace_is_matched_by_its_own_labels_on_create() -> None:
    match = MatchResources(resource_rules=(rule(resources=("namespaces",)),), namespace_selector=SELECTOR)
    assert match_reason(match, request(NAMESPACE), {}) == ""


def test_object_selector_matches_when_old_or_new_object_matches() -> None:
    selector = LabelSelector(match_expressions=(Requirement("tier", "In", ("gold",)),))
    match = MatchResources(resource_rules=(rule(operations=("UPDATE",)),), object_selector=selector)
    new = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default", "labels": {}}}
    old = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"tier": "gold"}},
    }
    assert match_reason(match, request(new, "UPDATE", old_object=old), {}) == ""
    assert "objectSelector" in match_reason(match, request(new, "UPDATE", old_object=new), {})


@pytest.mark.parametrize(
    ("kind", "resource"),
    [("Pod", "pods"), ("Ingress", "ingresses"), ("NetworkPolicy", "networkpolicies"), ("Endpoints", "endpoints")],
)
def test_kinds_map_to_their_plural_resources(kind: str, resource: str) -> None:
    assert kinds.resource_for("v1", kind) == resource
