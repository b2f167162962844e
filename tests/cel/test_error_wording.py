"""Error texts users and tests grep for, worded as Kubernetes and cel-go word them (issue 25 item 7).
Each row names the upstream source of its wording; the JSON Patch texts are pinned in
tests/runtime/test_jsonpatch_v4.py, the program-building ones in tests/cel/test_program_checks.py.
"""

from __future__ import annotations

import pytest

from celmut import cel


@pytest.mark.parametrize("profile", ["kubernetes", "kyverno"])
def test_undeclared_reference_names_the_container_as_cel_go(profile: str) -> None:
    """cel-go checker/errors.go undeclaredReference: ``undeclared reference to '%s' (in container '%s')``."""
    with pytest.raises(cel.CelCompileError) as raised:
        cel.Environment(profile).compile("Invalid")
    assert "undeclared reference to 'Invalid' (in container '')" in str(raised.value)


# Kubernetes staging/src/k8s.io/apiserver/pkg/cel/mutation/typeresolver_test.go: "invalid type" and the
# "JSONPatch invalid value/path/from" rows expect this compile error (issue 38).
UNDECLARED_STRUCTS = [
    pytest.param("Invalid{}", "Invalid", id="invalid type"),
    pytest.param(
        'JSONPatch{op: "add", path: "/spec/replicas", value: Invalid{}}', "Invalid", id="JSONPatch invalid value"
    ),
    pytest.param('JSONPatch{op: "add", path: Invalid{}, value: 3}', "Invalid", id="JSONPatch invalid path"),
    pytest.param(
        'JSONPatch{op: "move", from: Invalid{}, path: "/spec/replicas"}', "Invalid", id="JSONPatch invalid from"
    ),
    pytest.param("JSONPatch.value{}", "JSONPatch.value", id="a JSONPatch field is not a type"),
    pytest.param("Invalid{a: undeclaredVariable}", "Invalid", id="fields of an undeclared type are not checked"),
]


@pytest.mark.parametrize("profile", ["kubernetes", "kyverno"])
@pytest.mark.parametrize(("expression", "name"), UNDECLARED_STRUCTS)
def test_an_undeclared_struct_type_is_an_undeclared_reference_as_cel_go(
    profile: str, expression: str, name: str
) -> None:
    """cel-go checker/checker.go checkCreateStruct: ``errors.undeclaredReference`` and no check of the
    fields (so ``undeclaredVariable`` is not reported)."""
    with pytest.raises(cel.CelCompileError) as raised:
        cel.Environment(profile).compile(expression)
    message = str(raised.value)
    assert f"undeclared reference to '{name}' (in container '')" in message
    assert message.count("ERROR:") == 1 and "to type" not in message


def test_the_per_expression_limit_is_cel_gos_actual_cost_limit_exceeded() -> None:
    """cel-go interpreter/runtimecost.go: ``operation cancelled: actual cost limit exceeded``."""
    program = cel.Environment("kubernetes").compile("[1, 2, 3].all(x, [1, 2, 3].all(y, y > 0))")
    with pytest.raises(cel.CelCostError) as raised:
        program.evaluate(cel.Activation(budget=cel.Budget(per_call_limit=5)))
    assert str(raised.value) == "operation cancelled: actual cost limit exceeded"


def test_the_request_budget_is_the_admission_plugins_running_out_of_cost_budget() -> None:
    """k8s.io/apiserver/pkg/admission/plugin/cel/composition.go and filter.go."""
    program = cel.Environment("kubernetes").compile("[1, 2, 3].all(x, [1, 2, 3].all(y, y > 0))")
    with pytest.raises(cel.CelCostError) as raised:
        program.evaluate(cel.Activation(budget=cel.Budget(limit=5)))
    assert str(raised.value) == (
        "validation failed due to running out of cost budget, no further validation rules will be run"
    )


@pytest.mark.parametrize(
    ("expression", "where"),
    [("[1, true]", "<input>:1:5:"), ("{0: 1, 5: false}", "<input>:1:11:"), ("[1,\n  true]", "<input>:2:3:")],
)
def test_an_error_about_a_bool_literal_points_at_it(expression: str, where: str) -> None:
    """cel-go reports a literal's own line and column (parser/helper.go ``newLiteral`` keeps the token's
    offset); celpy's lexer callback dropped the position of ``true``/``false`` (reported at 0:0)."""
    with pytest.raises(cel.CelCompileError) as raised:
        cel.Environment("kubernetes").compile(expression)
    assert where in str(raised.value)


@pytest.mark.parametrize(
    ("expression", "undeclared"),
    [
        # kube-apiserver gives a MAP `authorizer`; a Kyverno MutatingPolicy has no such variable
        ("authorizer.path('/healthz').check('get').allowed()", ["'authorizer'"]),
        ("foo.size()", ["'foo'"]),
        ("foo.bar(1)", ["'foo'", "'bar'"]),
        ("a.b.c(1)", ["'a'", "'c'"]),
    ],
)
def test_an_instance_call_on_an_undeclared_name_names_the_name_as_cel_go(
    expression: str, undeclared: list[str]
) -> None:
    """cel-go checker/checker.go ``checkCall``: a target that is no qualified function name is checked as
    an expression first (``undeclared reference to 'authorizer'``), then the function name."""
    with pytest.raises(cel.CelCompileError) as raised:
        cel.Environment("kyverno").compile(expression)
    errors = [line for line in str(raised.value).splitlines() if line.startswith("ERROR")]
    assert len(errors) == len(undeclared), errors
    for line, name in zip(errors, undeclared, strict=True):
        assert f"undeclared reference to {name} (in container '')" in line
