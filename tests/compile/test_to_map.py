"""Issue 19: which MutatingPolicies become a native MutatingAdmissionPolicy, one row per rule of
:data:`celmut.compile.to_map.RULES`, each naming the upstream source it follows (kyverno
pkg/controllers/admissionpolicygenerator/generate-map.go, pkg/admissionpolicy/builder.go, the
kube-apiserver's MAP validation), and what the generated MAP holds when it converts."""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from celmut.compile import to_map
from celmut.policy.errors import FieldError
from celmut.policy.exception import PolicyException, parse_policy_exception
from celmut.policy.mutating_policy import MutatingPolicy, parse_mutating_policy

Obj = dict[str, Any]
LABEL = '[JSONPatch{op: "add", path: "/metadata/labels/x", value: "y"}]'


def policy_doc(name: str = "label") -> Obj:
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": name},
        "spec": {
            "autogen": {"podControllers": {"controllers": []}, "mutatingAdmissionPolicy": {"enabled": True}},
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
                ]
            },
            "matchConditions": [{"name": "not-system", "expression": 'request.namespace != "kube-system"'}],
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": LABEL}}],
        },
    }


def exception_doc(name: str, *conditions: tuple[str, str], **spec: Any) -> Obj:
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "PolicyException",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "policyRefs": [{"name": "label", "kind": "MutatingPolicy"}],
            "matchConditions": [{"name": n, "expression": e} for n, e in conditions],
            **spec,
        },
    }


def parse(doc: Obj) -> MutatingPolicy:
    errors: list[FieldError] = []
    model = parse_mutating_policy(doc, "policy.yaml", errors)
    assert not errors, [str(e) for e in errors]
    return model


def parse_exception(doc: Obj) -> PolicyException:
    errors: list[FieldError] = []
    exception = parse_policy_exception(doc, "exception.yaml", errors)
    assert not errors, [str(e) for e in errors]
    return exception


def refusal(doc: Obj, exceptions: tuple[Obj, ...] = ()) -> tuple[str, str]:
    """(rule, reason) that keeps the policy from a MAP, as the controller decides: the whole-policy
    switches (:func:`to_map.skip_reason`) first, then the conversion; ('', '') when it converts."""
    model = parse(doc)
    rule, reason = to_map.skip_reason(model)
    if rule:
        return rule, reason
    try:
        to_map.convert(model, [parse_exception(e) for e in exceptions])
    except to_map.NotConvertible as ex:
        return ex.rule, ex.reason
    return "", ""


def spec_set(**fields: Any) -> Callable[[Obj], None]:
    def change(doc: Obj) -> None:
        doc["spec"].update(copy.deepcopy(fields))

    return change


def match_set(**fields: Any) -> Callable[[Obj], None]:
    def change(doc: Obj) -> None:
        doc["spec"]["matchConstraints"].update(copy.deepcopy(fields))

    return change


def annotate(key: str, value: str) -> Callable[[Obj], None]:
    def change(doc: Obj) -> None:
        doc["metadata"].setdefault("annotations", {})[key] = value

    return change


def namespaced(doc: Obj) -> None:
    doc["kind"] = "NamespacedMutatingPolicy"
    doc["metadata"]["namespace"] = "shop"


def disabled(doc: Obj) -> None:
    doc["spec"]["autogen"]["mutatingAdmissionPolicy"]["enabled"] = False


def many_conditions(doc: Obj) -> None:
    doc["spec"]["matchConditions"] = [{"name": f"c{i}", "expression": "true"} for i in range(64)]


def long_name(doc: Obj) -> None:
    doc["metadata"]["name"] = "a" * 245


@dataclass(frozen=True)
class Row:
    rule: str  # the RULES key the row proves
    change: Callable[[Obj], None]
    says: str  # a fragment of the reason the user reads
    exceptions: tuple[Obj, ...] = ()


TWO_MUTATIONS = [{"patchType": "JSONPatch", "jsonPatch": {"expression": LABEL}}] * 2
ROWS = [
    Row("namespaced", namespaced, "only cluster-scoped MutatingPolicies"),
    Row("not-enabled", disabled, "skip generating MutatingAdmissionPolicy: not enabled."),
    Row("json-mode", spec_set(evaluation={"mode": "JSON"}), "JSON evaluation mode has no admission equivalent"),
    Row("server-side-apply", spec_set(evaluation={"useServerSideApply": True}), "useServerSideApply is enabled"),
    Row(
        "admission-disabled",
        spec_set(evaluation={"admission": {"enabled": False}, "mutateExisting": {"enabled": True}}),
        "admission.enabled is false",
    ),
    Row("mutate-existing", spec_set(evaluation={"mutateExisting": {"enabled": True}}), "mutateExisting.enabled"),
    Row(
        "audit-annotations",
        spec_set(auditAnnotations=[{"key": "k", "valueExpression": '"v"'}]),
        "spec.auditAnnotations",
    ),
    Row("namespace-selector", match_set(namespaceSelector={"matchLabels": {"a": "b"}}), "would match every namespace"),
    Row("object-selector", match_set(objectSelector={"matchLabels": {"a": "b"}}), "would match every object"),
    Row(
        "exclude-resource-rules",
        match_set(
            excludeResourceRules=[
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
            ]
        ),
        "the excluded resources",
    ),
    Row("match-policy", match_set(matchPolicy="Exact"), "matchPolicy Exact"),
    Row("partial-failure", spec_set(failurePolicy="Ignore", mutations=TWO_MUTATIONS), "all of them or none"),
    Row("restart-policy", annotate("celmut.io/restart-policy", "immediate"), "replaces running pods"),
    Row("record-provenance", annotate("celmut.io/record-provenance", "true"), "records which policy changed"),
    Row(
        "variables-in-match-conditions",
        spec_set(
            variables=[{"name": "ns", "expression": "request.namespace"}],
            matchConditions=[{"name": "shop", "expression": 'variables.ns == "shop"'}],
        ),
        "spec.matchConditions[0] (shop) uses variables",
    ),
    Row(
        "kubernetes-cel",
        spec_set(
            mutations=[
                {
                    "patchType": "JSONPatch",
                    "jsonPatch": {
                        "expression": '[JSONPatch{op: "add", path: "/metadata/labels/x", '
                        'value: resource.Get("v1", "configmaps", "a", "b").metadata.name}]'
                    },
                }
            ]
        ),
        "resource.Get",
    ),
    Row(
        "condition-names",
        lambda doc: None,
        "are both named 'not-system'",
        exceptions=(exception_doc("skip", ("not-system", "true")),),
    ),
    Row(
        "too-many-conditions",
        many_conditions,
        "65 match conditions with the exceptions folded in",
        exceptions=(exception_doc("skip", ("skip", "false")),),
    ),
    Row("name-too-long", long_name, "longer than 253 characters"),
]


def test_every_rule_has_a_row_and_names_its_upstream_source() -> None:
    assert [r.rule for r in ROWS] == list(to_map.RULES)
    for rule in to_map.RULES.values():
        assert rule.upstream.startswith(("kyverno", "kube-apiserver", "celmut")), rule


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.rule}: {to_map.RULES[r.rule].upstream}" for r in ROWS])
def test_convertibility_rule(row: Row) -> None:
    doc = policy_doc()
    assert refusal(doc) == ("", "")  # the base converts: the row's one change is what refuses it
    row.change(doc)
    rule, reason = refusal(doc, row.exceptions)
    assert rule == row.rule, reason
    assert row.says in reason


def test_a_converted_policy_is_kyvernos_map_with_exceptions_first_and_all_of_one_exception_together() -> None:
    """builder.go: names mpol-<name>/-binding, resource rules, exceptions negated before the policy's own
    conditions, variables and mutations copied, reinvocationPolicy Never when unset. celmut negates all
    conditions of one exception together (its engine skips only when all hold) and drops expired ones."""
    future = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    exceptions = [
        parse_exception(exception_doc("both", ("a", 'request.namespace == "a"'), ("b", "true"), expiresAt=future)),
        parse_exception(exception_doc("old", ("old", "true"), expiresAt="2020-01-01T00:00:00Z")),
    ]
    (native,) = to_map.convert(parse(policy_doc()), exceptions)
    assert native.name == "mpol-label" and native.binding_name == "mpol-label-binding"
    spec = native.policy["spec"]
    assert spec["matchConditions"] == [
        {"name": "a", "expression": '!((request.namespace == "a") && (true))'},
        {"name": "not-system", "expression": 'request.namespace != "kube-system"'},
    ]
    assert spec["mutations"] == policy_doc()["spec"]["mutations"]
    assert spec["reinvocationPolicy"] == "Never" and spec["failurePolicy"] == "Fail"
    assert native.binding["spec"] == {"policyName": "mpol-label"}


def test_the_opt_out_label_and_the_replicaset_filter_guard_the_map_as_they_guard_the_webhook() -> None:
    """runtime/ownership.py: celmut's webhook leaves opted-out objects and controlled ReplicaSets alone."""
    doc = policy_doc()
    doc["spec"]["matchConstraints"]["resourceRules"][0].update(apiGroups=["apps"], resources=["replicasets"])
    (native,) = to_map.convert(parse(doc), opt_out_label="celmut.io/ignore")
    names = [c["name"] for c in native.policy["spec"]["matchConditions"]]
    assert names == ["celmut.io/not-opted-out", "celmut.io/not-a-controlled-replicaset", "not-system"]


@pytest.mark.parametrize(
    "read_at", ["policies.kyverno.io/v1", "policies.kyverno.io/v1beta1", "policies.kyverno.io/v1alpha1"]
)
def test_generated_maps_are_owned_through_v1beta1_whatever_version_the_policy_was_read_at(read_at: str) -> None:
    """kyverno pkg/admissionpolicy/builder.go mutatingPolicyOwnerRef: APIVersion is
    policiesv1beta1.GroupVersion, Kind and UID the policy's; no controller, no blockOwnerDeletion."""
    owner = {**policy_doc(), "apiVersion": read_at, "metadata": {"name": "label", "uid": "u-1"}}
    (native,) = to_map.convert(parse(policy_doc()))
    stamped = to_map.owned(native, owner)
    expected = [{"apiVersion": "policies.kyverno.io/v1beta1", "kind": "MutatingPolicy", "name": "label", "uid": "u-1"}]
    assert stamped.policy["metadata"]["ownerReferences"] == expected
    assert stamped.binding["metadata"]["ownerReferences"] == expected
