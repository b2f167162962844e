"""JSON-mode MutatingPolicies on JSON documents (runtime/documents.py), and their absence from
admission: Kyverno's JSON document mutation (kyverno/kyverno docs/proposals/json-document-mutation.md,
cmd/cli/kubectl-kyverno/processor/json.go)."""

from __future__ import annotations

from typing import Any

from celmut.jsonutil import json_equal
from celmut.runtime.documents import mutate_document
from tests.runtime.helpers import admit, compile_text, jsonpatch, mpol, pod


def json_policy(name: str, *patches: str, extra: str = "") -> str:
    return f"""
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {{name: {name}}}
spec:
  evaluation: {{mode: JSON}}
{extra}
  mutations:
{"".join(jsonpatch(p) for p in patches)}
---"""


def run(text: str, document: Any) -> list[tuple[str, str, Any]]:
    compiled = compile_text(text)
    result = mutate_document(compiled.policies, document, compiled.exceptions)
    return [(o.policy.name, o.status, o.document) for o in result.outcomes]


def test_a_json_mode_policy_never_mutates_an_admission_request() -> None:
    """Even with matchConstraints that match, the Kubernetes path excludes it (the design's
    "Kubernetes routing must explicitly exclude JSON-mode policies")."""
    text = mpol("docs-only", jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/x", value: "y"}]'),
                extra="  evaluation: {mode: JSON}")  # fmt: skip
    assert not compile_text(text).policies[0].admission  # so no webhook rule is generated for it either
    result = admit(text, pod())
    assert result.patch is None or result.patch == []
    assert [o.policy for o in result.outcomes] == []


def test_a_kubernetes_mode_policy_is_skipped_for_a_document() -> None:
    kubernetes_mode = mpol("pods-only", jsonpatch('[JSONPatch{op: "add", path: "/a", value: 1}]'))
    assert run(kubernetes_mode, {"b": 2}) == [("pods-only", "skipped", {"b": 2})]


def test_a_failed_test_rolls_back_the_whole_policy() -> None:
    text = json_policy(
        "add-then-test",
        '[JSONPatch{op: "add", path: "/added", value: true}]',
        '[JSONPatch{op: "test", path: "/n", value: 2}]',
    )
    assert run(text, {"n": 1}) == [("add-then-test", "skipped", {"n": 1})]


def test_an_error_stops_the_run_and_publishes_no_document() -> None:
    text = json_policy("a-breaks", '[JSONPatch{op: "remove", path: "/gone"}]') + json_policy(
        "b-after", '[JSONPatch{op: "add", path: "/x", value: 1}]'
    )
    compiled = compile_text(text)
    result = mutate_document(compiled.policies, {"a": 1}, compiled.exceptions)
    assert [(o.policy.name, o.status) for o in result.outcomes] == [("a-breaks", "error")]  # b-after never runs
    assert result.document is None and (
        "JSON Patch: error in remove for path: '/gone': Unable to remove nonexistent key: gone" in result.error
    )


def test_integers_above_2_to_the_53_stay_exact_and_roots_change_type() -> None:
    text = json_policy("wrap", '[JSONPatch{op: "replace", path: "", value: [object, object + 2]}]')
    assert run(text, 9007199254740993) == [("wrap", "applied", [9007199254740993, 9007199254740995])]


def test_variables_and_partial_exceptions_see_the_document() -> None:
    exception = """
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata: {name: let-some}
spec:
  policyRefs: [{name: keep-allowed, kind: MutatingPolicy}]
  allowedValues: [blue]
  matchConditions: [{name: any, expression: 'true'}]
"""
    text = json_policy(
        "keep-allowed",
        '[JSONPatch{op: "add", path: "/kept", value: variables.colours.filter(c, c in exceptions.allowedValues)}]',
        extra="  variables: [{name: colours, expression: object.colours}]",
    )
    assert run(text + exception, {"colours": ["red", "blue"]}) == [
        ("keep-allowed", "applied", {"colours": ["red", "blue"], "kept": ["blue"]})
    ]


def test_json_equality_is_by_value_but_a_boolean_is_not_a_number() -> None:
    assert json_equal({"a": [1, 2.0]}, {"a": [1.0, 2]})
    assert not json_equal({"on": True}, {"on": 1})
    assert not json_equal(None, {}) and json_equal(None, None)


def test_kubernetes_mode_runs_every_policy_on_the_older_single_payload() -> None:
    """The single ``jsonPayload``: a Kubernetes-mode policy mutates it, matchConstraints aside, and
    its matchConditions still decide."""
    text = mpol("pods-only", jsonpatch('[JSONPatch{op: "add", path: "/a", value: 1}]'),
                extra="  matchConditions: [{name: has-b, expression: has(object.b)}]")  # fmt: skip
    compiled = compile_text(text)
    applied = mutate_document(compiled.policies, {"b": 2}, kubernetes_mode=True)
    skipped = mutate_document(compiled.policies, {"c": 3}, kubernetes_mode=True)
    assert [(o.status, o.document) for o in applied.outcomes] == [("applied", {"b": 2, "a": 1})]
    assert [o.status for o in skipped.outcomes] == ["skipped"]
