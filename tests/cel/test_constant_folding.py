"""A literal tree (``[JSONPatch{op: "add", path: "/x", value: 1}]``), whole or inside a larger expression,
is built once, when the program is planned (``celmut.cel.planner.Planner._folded``): same value and same
cost as before, and, although one value now serves every request, nothing an admission does can change it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import celmut
from celmut import cel

LITERAL_TREES = [
    "true",
    "'text'",
    "['a', 'b']",
    "[b'x', b'y']",
    '{"a": {"b": [1, 2]}, "c": {"d": [3]}}',
    '[JSONPatch{op: "add", path: "/metadata/labels/x", value: "y"}]',
    'Object{metadata: Object.metadata{annotations: {"k": "v"}}}',
]
NOT_LITERAL = [
    "object.metadata.name",  # reads the activation
    "[1, 2].map(x, x)",  # a macro
    "size([1])",  # a function call
    "[?optional.of(1)]",  # an optional element
]


def _program(source: str) -> Any:
    return cel.Environment("kyverno", backend="compiled").compile(source)


@pytest.mark.parametrize("source", LITERAL_TREES)
def test_a_literal_tree_gives_the_same_value_and_cost_at_every_evaluation(source: str) -> None:
    program = _program(source)
    budgets = [cel.Budget(), cel.Budget()]
    values = [program.evaluate(cel.Activation(budget=b)) for b in budgets]
    assert values[0] == values[1]
    assert budgets[0].spent == budgets[1].spent == program._static_cost > 0
    assert values[0] is values[1], "built once"


@pytest.mark.parametrize("source", NOT_LITERAL)
def test_anything_else_is_evaluated_each_time(source: str) -> None:
    program = _program(source)
    activation = cel.Activation(object={"metadata": {"name": "n"}})
    first, second = program.evaluate(activation), program.evaluate(activation)
    assert first == second
    assert first is not second or not isinstance(first, list | dict), "a new value per evaluation"


# (expression, CEL cost): the costs are those celmut charged before literal aggregates were folded
# inside expressions, so folding changes no cost a policy is bounded by
LITERALS_INSIDE = [
    ('[1, 2, 3].map(x, {"k": ["v"]})', 17),
    ("[1, 2, 3].map(x, Object.spec.containers.securityContext{allowPrivilegeEscalation: false})", 11),
    (
        "object.spec.containers.map(c, Object.spec.containers{name: c.name, "
        "securityContext: Object.spec.containers.securityContext{allowPrivilegeEscalation: false}})",
        14,
    ),
]


@pytest.mark.parametrize(("source", "cost"), LITERALS_INSIDE)
def test_a_literal_inside_an_expression_is_built_once_at_the_same_cost(source: str, cost: int) -> None:
    program = _program(source)
    pod = {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
    results = []
    for _ in range(2):
        budget = cel.Budget()
        results.append(program.evaluate(cel.Activation(object=pod, budget=budget)))
        assert budget.spent == cost
    first, second = results
    assert first == second and first is not second, "the expression itself is evaluated each time"
    literals = [item.get("securityContext", item) for item in first + second]
    assert all(literal is literals[0] for literal in literals), "its literal part is built once"


def test_a_literal_beside_an_optional_entry_is_still_built_each_time() -> None:
    program = _program('[1, 2].map(x, {"k": "v", ?"o": optional.none()})')
    first, second = program.evaluate(cel.Activation()), program.evaluate(cel.Activation())
    assert first == second == [{"k": "v"}, {"k": "v"}]
    assert first[0] is not first[1] and first[0] is not second[0]


def test_a_literal_tree_that_fails_still_fails_at_each_evaluation() -> None:
    program = _program('{"a": 1, "a": 2}')
    for _ in range(2):
        with pytest.raises(cel.CelEvaluationError, match="repeated key"):
            program.evaluate(cel.Activation())


POLICY = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: constant-%(kind)s}
spec:
  autogen: {podControllers: {controllers: []}}
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  mutations:
  - patchType: %(patch_type)s
    %(field)s:
      expression: '%(expression)s'
"""
CONSTANT_MUTATIONS = {
    "json-patch": (
        "JSONPatch",
        "jsonPatch",
        '[JSONPatch{op: "add", path: "/metadata/annotations", value: {"a": "b"}}]',
    ),
    "apply-configuration": (
        "ApplyConfiguration",
        "applyConfiguration",
        'Object{metadata: Object.metadata{annotations: {"a": "b"}}, spec: Object.spec{containers: '
        '[Object.spec.containers{name: "app", env: [Object.spec.containers.env{name: "A", value: "1"}]}]}}',
    ),
}


@pytest.mark.parametrize("kind", CONSTANT_MUTATIONS)
def test_changing_an_admitted_object_in_place_does_not_change_the_next_admission(tmp_path: Path, kind: str) -> None:
    patch_type, field, expression = CONSTANT_MUTATIONS[kind]
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY % {"kind": kind, "patch_type": patch_type, "field": field, "expression": expression})
    policies = celmut.load(path, backend="compiled")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }
    first = policies.apply(pod).object
    assert first is not None
    first["metadata"]["annotations"]["a"] = "changed by a caller"  # what an embedding program may do
    if kind == "apply-configuration":
        first["spec"]["containers"][0]["env"].append({"name": "B", "value": "2"})
    second = policies.apply(pod).object
    assert second is not None
    assert second["metadata"]["annotations"] == {"a": "b"}
    if kind == "apply-configuration":
        assert second["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]
