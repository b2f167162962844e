"""Reading a pane: documents unfolded past the request limit or into a cycle are refused without being
unfolded, and a field path with a position inside its expression becomes a line and column of the pane."""

from __future__ import annotations

import pytest

from celmut.limits import MAX_REQUEST_BYTES
from celmut.playground.inputs import PaneError, located, read_pane, unfolding_problem
from celmut.sources.documents import parse_text


def test_shared_subtrees_are_counted_once_per_use_without_unfolding_them() -> None:
    leaf = ["x" * 100] * 10
    tree = {"a": [leaf] * 10}  # 100 strings, 10 references to one list
    assert unfolding_problem(tree) == ""
    for _ in range(5):  # 10^5 references to the leaf list: ~100 MB once unfolded, a few objects in memory
        tree = {"a": [tree] * 10}
    assert "more than" in unfolding_problem(tree)


def test_a_cycle_through_an_alias_is_refused() -> None:
    (doc,) = parse_text("a: &x [1, *x]")
    assert "contains it" in unfolding_problem(doc)


def test_a_large_plain_document_is_measured_by_its_bytes() -> None:
    assert unfolding_problem({"data": "x" * MAX_REQUEST_BYTES}) != ""
    assert unfolding_problem({"data": "x" * 1000}) == ""


POLICY = """\
# a comment
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: p}
spec:
  matchConditions:
    - name: quoted
      expression: "object.metadata.name == 1"
  mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: |
          [
            JSONPatch{op: "add", path: "/x", value: object.nope}
          ]
"""


@pytest.mark.parametrize(
    ("path", "line", "column", "text_at"),
    [
        ("spec.mutations[0].jsonPatch.expression", 2, 43, "object.nope"),  # block scalar: lines below `|`
        ("spec.matchConditions[0].expression", 1, 22, "== 1"),  # quoted scalar: after the quote
        ("spec.mutations[0].patchType", 0, 0, "JSONPatch"),  # no position: the field's value
    ],
)
def test_a_field_and_a_position_in_its_expression_become_a_place_in_the_pane(
    path: str, line: int, column: int, text_at: str
) -> None:
    pane = read_pane("policies", POLICY)
    problem = located(pane, 0, path, "message", line, column)
    assert POLICY.splitlines()[problem.line - 1][problem.column - 1 :].startswith(text_at)


FOLDED = """\
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: p}
spec:
  variables:
    - name: folded
      expression: >-
        object.metadata.labels.filter(k,
        k.startsWith("team") &&
        k.size() > 2 +)
    - name: plain
      expression: object.metadata.name +
        " and " + ) + x
    - name: quoted
      expression: "\\"a\\" + object.metadata.name\\
        \\ + )"
    - name: literal
      expression: |
        [
          object.nope +)
        ]
"""


@pytest.mark.parametrize(
    ("path", "line", "column", "text_at"),
    [
        # CEL sees a folded scalar as one line: column 72 of line 1 is on the third line of the pane
        ("spec.variables[0].expression", 1, 72, ")"),
        ("spec.variables[0].expression", 1, 1, "object.metadata.labels"),
        ("spec.variables[1].expression", 1, 34, ") + x"),  # a plain scalar folds as well
        ("spec.variables[2].expression", 1, 30, ')"'),  # escapes and an escaped line break
        ("spec.variables[3].expression", 2, 16, ")"),  # a literal block keeps its lines
    ],
)
def test_a_position_in_a_folded_or_escaped_expression_is_found_on_its_own_line(
    path: str, line: int, column: int, text_at: str
) -> None:
    pane = read_pane("policies", FOLDED)
    problem = located(pane, 0, path, "message", line, column)
    assert FOLDED.splitlines()[problem.line - 1][problem.column - 1 :].startswith(text_at), problem


def test_invalid_yaml_is_located_and_nothing_is_read() -> None:
    with pytest.raises(PaneError) as raised:
        read_pane("resources", "a: 1\nb: [\n")
    (problem,) = raised.value.problems
    assert (problem.pane, problem.line) == ("resources", 3)
