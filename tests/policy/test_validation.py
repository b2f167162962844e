"""Policy loading and validation: every rejection names the file, the policy, the field path and,
for CEL, the position; a bad policy is rejected whole while the others still load."""

from __future__ import annotations

import pytest

from celmut.compile.policies import compile_policy_set
from tests.runtime.helpers import applyconfig, jsonpatch, mpol, parse

MAP = """
apiVersion: admissionregistration.k8s.io/{version}
kind: MutatingAdmissionPolicy
metadata: {{name: map}}
spec:
{spec}
  matchConstraints:
    resourceRules: [{{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}}]
  mutations:
{mutations}
"""


def errors_of(text: str) -> list[str]:
    policies = parse(text)
    compiled = compile_policy_set(policies)
    return [str(e) for e in compiled.errors]


JSON_MODE = "  evaluation: {mode: JSON}"

REJECTIONS = [
    (
        "a JSON-mode policy mutates with JSONPatch only (kyverno json-document-mutation design)",
        mpol("p", applyconfig("Object{}"), extra=JSON_MODE),
        "spec.mutations[0].patchType: Forbidden: a JSON-mode policy mutates with JSONPatch only",
    ),
    (
        "a JSON-mode policy cannot mutate existing resources",
        mpol("p", jsonpatch("[]"), extra="  evaluation: {mode: JSON, mutateExisting: {enabled: true}}"),
        "spec.evaluation.mutateExisting: Forbidden: a JSON-mode policy cannot mutate existing resources",
    ),
    (
        "a JSON-mode policy runs once per document",
        mpol("p", jsonpatch("[]"), extra=JSON_MODE + "\n  reinvocationPolicy: IfNeeded"),
        "spec.reinvocationPolicy: Forbidden: a JSON-mode policy runs once per document",
    ),
    (
        "CEL compile error names the field path and position",
        mpol("p", applyconfig("Object{metadata: Object.metadata{labels: object.nope(}}")),
        "spec.mutations[0].applyConfiguration.expression: compilation failed: Syntax error",
    ),
    (
        "mutations carry their index in the path",
        mpol("p", jsonpatch("[]") + jsonpatch("[JSONPatch{op: 1}]")),
        "spec.mutations[1].jsonPatch.expression",
    ),
    (
        "both admission and mutateExisting disabled",
        mpol(
            "p", jsonpatch("[]"), extra="  evaluation: {admission: {enabled: false}, mutateExisting: {enabled: false}}"
        ),
        # kyverno pkg/cel/policies/mpol/validate.go, word for word
        "spec.evaluation: Forbidden: disabling both admission and mutateExisting evaluation modes is not allowed",
    ),
    (
        "mixed-type literals need dyn()",
        mpol("p", jsonpatch('[JSONPatch{op: "add", path: "/a", value: {"a": 1, "b": "x"}}]')),
        "wrap mixed values in dyn()",
    ),
    (
        "JSONPatch expressions must return a list of JSONPatch",
        mpol("p", jsonpatch('"not a list"')),
        "must evaluate to list(JSONPatch), but the expression has type string",
    ),
    (
        "ApplyConfiguration must return an Object",
        mpol("p", applyconfig("[1]")),
        "must evaluate to Object",
    ),
    (
        "match conditions must be bool",
        mpol("p", jsonpatch("[]"), extra="  matchConditions: [{name: c, expression: '1 + 1'}]"),
        "spec.matchConditions[0].expression: must evaluate to bool",
    ),
    (
        "failurePolicy enum",
        mpol("p", jsonpatch("[]"), extra="  failurePolicy: Sometimes"),
        "spec.failurePolicy: Unsupported value: 'Sometimes'",
    ),
    (
        "duplicate match condition names",
        mpol(
            "p",
            jsonpatch("[]"),
            extra="  matchConditions: [{name: c, expression: 'true'}, {name: c, expression: 'true'}]",
        ),
        "spec.matchConditions[1].name: Duplicate value: 'c'",
    ),
    (
        "a variable cannot use a later variable",
        mpol(
            "p",
            jsonpatch("[]"),
            extra="  variables: [{name: a, expression: 'variables.b'}, {name: b, expression: '1'}]",
        ),
        "spec.variables[0].expression: compilation failed: undefined field 'b'",
    ),
    (
        "unknown spec fields are refused",
        mpol("p", jsonpatch("[]"), extra="  mutationz: []"),
        "spec.mutationz: unknown field",
    ),
    (
        "matchConstraints needs a resource rule",
        "apiVersion: policies.kyverno.io/v1\nkind: MutatingPolicy\nmetadata: {name: p}\nspec: {mutations: []}",
        "spec.matchConstraints: Required value: a matchConstraints with at least one resource rule is required",
    ),
    (
        "unsupported apiVersion",
        "apiVersion: policies.kyverno.io/v9\nkind: MutatingPolicy\nmetadata: {name: p}\nspec: {}",
        "apiVersion: unsupported version 'v9'",
    ),
    (
        "MutatingAdmissionPolicy v1 requires reinvocationPolicy",
        MAP.format(
            version="v1",
            spec="  failurePolicy: Fail",
            mutations=jsonpatch('[JSONPatch{op: "add", path: "/a", value: 1}]'),
        ),
        "spec.reinvocationPolicy: Required value",
    ),
    (
        "MutatingAdmissionPolicy cannot use cel.bind",
        MAP.format(version="v1beta1", spec="  failurePolicy: Fail", mutations=jsonpatch("cel.bind(x, 1, [])")),
        "undeclared reference to 'cel.bind'",
    ),
    (
        "MutatingAdmissionPolicy refuses a bare []",
        MAP.format(version="v1beta1", spec="  failurePolicy: Fail", mutations=jsonpatch("[]")),
        "a bare [] has type list(dyn)",
    ),
    (
        "MutatingAdmissionPolicy match conditions cannot see variables",
        MAP.format(
            version="v1beta1",
            spec="  variables: [{name: v, expression: 'true'}]\n  matchConditions: [{name: c, expression: 'variables.v'}]",
            mutations=jsonpatch('[JSONPatch{op: "add", path: "/a", value: 1}]'),
        ),
        "spec.matchConditions[0].expression: compilation failed: undefined field 'v'",
    ),
    (
        # The API server validates a MAP's condition names (k8s.io/apiserver ValidateMatchConditions:
        # a qualified name), so celmut keeps the rule there; MutatingPolicy: see the test below.
        "MutatingAdmissionPolicy condition names must be qualified names",
        MAP.format(
            version="v1beta1",
            spec="  matchConditions: [{name: 'Check if ttlSecondsAfterFinished is missing', expression: 'true'}]",
            mutations=jsonpatch('[JSONPatch{op: "add", path: "/a", value: 1}]'),
        ),
        "spec.matchConditions[0].name: Invalid value: 'Check if ttlSecondsAfterFinished is missing': must be a "
        "qualified name",
    ),
    (
        "MutatingAdmissionPolicy expression that always fails",
        MAP.format(
            version="v1beta1", spec="", mutations=jsonpatch('[JSONPatch{op: "add", path: "/a", value: int("twelve")}]')
        ),
        "program instantiation failed",
    ),
]


@pytest.mark.parametrize(("name", "text", "fragment"), REJECTIONS, ids=[r[0] for r in REJECTIONS])
def test_invalid_policies_are_rejected_with_a_precise_message(name: str, text: str, fragment: str) -> None:
    errors = errors_of(text)
    assert errors, f"{name}: accepted"
    assert any(fragment in e for e in errors), errors
    assert all(e.startswith("policies.yaml") for e in errors)


def test_the_position_inside_the_expression_is_reported() -> None:
    compiled = compile_policy_set(
        parse(mpol("p", jsonpatch('[JSONPatch{op: "add", path: "/a", value: object.x.startsWith(1)}]')))
    )
    error = compiled.errors[0].errors[0]
    assert (error.line, error.column) == (1, 61)  # the "(" of startsWith, as cel-go reports it


def test_a_bad_policy_does_not_stop_the_others() -> None:
    text = mpol("bad", jsonpatch("nope(")) + "---" + mpol("good", jsonpatch("[]"))
    compiled = compile_policy_set(parse(text))
    assert [p.name for p in compiled.policies] == ["good"]
    assert len(compiled.errors) == 1 and "MutatingPolicy bad" in str(compiled.errors[0])


def test_defaults_follow_kyverno() -> None:
    policy = parse(mpol("p", jsonpatch("[]"))).mutating_policies[0]
    assert policy.failure_policy == "Fail" and policy.reinvocation_policy == "Never"
    assert policy.evaluation.admission and policy.evaluation.background and not policy.evaluation.mutate_existing
    assert policy.evaluation.skip_background_requests and not policy.evaluation.use_server_side_apply


LONG_NAME = "Check if ttlSecondsAfterFinished is missing or greater than the default of one hour"


@pytest.mark.parametrize("field", ["matchConditions", "targetMatchConditions"])
def test_a_mutating_policy_condition_name_need_not_be_a_qualified_name(field: str) -> None:
    """Kyverno compiles MutatingPolicy conditions without checking their names (pkg/cel/policies/mpol/
    compiler/compiler.go), and a public policy names one with a sentence: accepted, with a warning."""
    text = mpol("p", jsonpatch("[]"), extra=f"  {field}: [{{name: '{LONG_NAME}', expression: 'true'}}]")
    compiled = compile_policy_set(parse(text))
    assert not compiled.errors and [p.name for p in compiled.policies] == ["p"]
    assert compiled.warnings == [
        f"policies.yaml: MutatingPolicy p: spec.{field}[0].name: {LONG_NAME!r} is not a qualified name; accepted "
        "as Kyverno does for a MutatingPolicy, but the API server refuses it in a MutatingAdmissionPolicy or webhook"
    ]


def test_a_json_mode_policy_needs_no_match_constraints() -> None:
    """Kyverno's document compiler accepts a JSON-mode policy without matchConstraints (upstream
    test/cli/test-mutating-policy/json-document-mutation); a Kubernetes-mode one still needs them."""
    policy = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: stamp}
spec:
  evaluation: {mode: %s}
  mutations:
%s"""
    compiled = compile_policy_set(parse(policy % ("JSON", jsonpatch('[JSONPatch{op: "add", path: "/a", value: 1}]'))))
    assert not compiled.errors and [(p.name, p.json_mode) for p in compiled.policies] == [("stamp", True)]
    assert "spec.matchConstraints: Required value" in errors_of(policy % ("Kubernetes", jsonpatch("[]")))[0]
