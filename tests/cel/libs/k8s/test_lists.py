"""Kubernetes' list library (k8s.io/apiserver/pkg/cel/library/lists.go): rows from its doc comments
plus the run-time behaviour of its Go implementation (first-element dispatch for dyn lists,
CEL ``+`` and ordering between elements, overflow and empty-list errors)."""

from __future__ import annotations

from typing import Any

import pytest

from celmut import cel
from tests.cel.helpers import Err, cases, check_case

IS_SORTED = [
    ("[1, 2, 3].isSorted()", True),
    ("['a', 'b', 'b', 'c'].isSorted()", True),
    ("[2.0, 1.0].isSorted()", False),
    ("[1].isSorted()", True),
    ("[].isSorted()", True),
    ("[1u, 3u, 2u].isSorted()", False),
    ("[false, true].isSorted()", True),
    ("[true, false].isSorted()", False),
    ("[b'a', b'b'].isSorted()", True),
    ("[duration('1s'), duration('1m')].isSorted()", True),
    ("[timestamp('2024-01-01T00:00:00Z'), timestamp('2023-01-01T00:00:00Z')].isSorted()", False),
    # Elements of a dyn list compare with CEL's cross-type numeric ordering.
    ("[1, dyn(2.5), dyn(3u)].isSorted()", True),
    ("[dyn(3u), dyn(2.5)].isSorted()", False),
    # A comparison that fails (int against string, NaN) counts as "not greater", as in Kubernetes.
    ("[dyn(1), dyn('a'), dyn(0)].isSorted()", True),
    ("[1.0, double('NaN'), 0.5].isSorted()", True),
    ("dyn([[1], [2]]).isSorted()", Err("evaluation", "no such overload")),
    ("[dyn(1), dyn([2])].isSorted()", Err("evaluation", "no such overload")),
    ("[[1], [2]].isSorted()", Err("compile", "no matching overload")),
    ("[{'a': 1}].isSorted()", Err("compile", "no matching overload")),
    ("dyn('abc').isSorted()", Err("evaluation", "no such overload")),
]

SUM = [
    ("[1, 3].sum()", 4),
    ("[1.0, 3.0].sum()", 4.0),
    ("[duration('1m'), duration('1s')].sum()", "61s"),
    ("[1u, 2u].sum()", 3),
    ("type([1u, 2u].sum()) == uint", True),
    # The empty list: 0 of the declared element type; a dyn empty list dispatches to int.
    ("[].sum()", 0),
    ("type([].sum()) == int", True),
    ("[1.0].filter(x, x > 2.0).sum()", 0.0),
    ("type([1u].filter(x, x > 2u).sum()) == uint", True),
    ("[duration('1s')].filter(d, d > duration('1m')).sum()", "0s"),
    # dyn lists pick the overload from their first element, then add with CEL's +.
    ("dyn([1.0, 2.5]).sum()", 3.5),
    ("[dyn(1), dyn(2.0)].sum()", Err("evaluation", "no such overload")),
    ("dyn(['a', 'b']).sum()", Err("evaluation", "no such overload")),
    ("[9223372036854775807, 1].sum()", Err("evaluation", "overflow")),
    ("[-9223372036854775807, -1, -1].sum()", Err("evaluation", "overflow")),
    ("[18446744073709551615u, 1u].sum()", Err("evaluation", "overflow")),
    ("['a'].sum()", Err("compile", "no matching overload")),
    ("[true].sum()", Err("compile", "no matching overload")),
]

MIN_MAX = [
    ("[1, 3].min()", 1),
    ("[1, 3].max()", 3),
    ("[1].min()", 1),
    ("([0] + [1, 2].filter(x, x > 5)).min()", 0),
    ("[].min()", Err("evaluation", "min called on empty list")),
    ("[].max()", Err("evaluation", "max called on empty list")),
    ("[1, 2].filter(x, x > 5).max()", Err("evaluation", "max called on empty list")),
    ("['b', 'a', 'c'].min()", "a"),
    ("['b', 'a', 'c'].max()", "c"),
    ("[b'b', b'a'].max()", "Yg=="),
    ("[true, false].min()", False),
    ("[2.5, -1.5].min()", -1.5),
    ("[3u, 7u].max()", 7),
    ("[duration('1h'), duration('1s')].min()", "1s"),
    ("[timestamp('2024-01-01T00:00:00Z'), timestamp('2025-01-01T00:00:00Z')].max()", "2025-01-01T00:00:00Z"),
    ("[dyn(1), dyn(2.5)].max()", 2.5),
    ("[dyn(3), dyn(1u)].min()", 1),
    ("type([dyn(3), dyn(1u)].min()) == uint", True),
    ("[1.0, double('NaN'), 0.5].min()", 0.5),
    ("dyn([[1]]).min()", Err("evaluation", "no such overload")),
    ("[[1]].max()", Err("compile", "no matching overload")),
]

INDEX_OF = [
    ("[1, 2, 2, 3].indexOf(2)", 1),
    ("['a', 'b', 'b', 'c'].lastIndexOf('b')", 2),
    ("[1.0].indexOf(1.1)", -1),
    ("[].indexOf('string')", -1),
    ("[].lastIndexOf(1)", -1),
    ("[1, 2, 1].lastIndexOf(1)", 2),
    ("[1, 2, 1].indexOf(3)", -1),
    # Elements compare with CEL's heterogeneous equality.
    ("dyn([1, 2]).indexOf(2.0)", 1),
    ("dyn([1u, 2u]).lastIndexOf(1)", 0),
    ("[[1], [2]].indexOf([2])", 1),
    ("[{'a': 1}, {'a': 2}].lastIndexOf({'a': 1})", 0),
    ("[null].indexOf(null)", 0),
    ("[1, 2].indexOf('a')", Err("compile", "no matching overload")),
    ("dyn([1, 2]).indexOf('a')", -1),
    # The ext strings indexOf on a string receiver is a separate overload of the same name.
    ("'abcabc'.lastIndexOf('c')", 5),
    ("dyn('abc').indexOf('c')", 2),
]

KUBERNETES_PROFILE = [
    ("[1, 2, 3].isSorted()", True),
    ("[1, 3].sum()", 4),
    ("['b', 'a'].min()", "a"),
    ("[1, 2, 2, 3].lastIndexOf(2)", 2),
    # A constant call that fails is a runtime error in Kubernetes (only conversions and regex patterns
    # are folded when the program is built: cel-go interpreter/decorators.go decOptimize).
    ("[].min()", Err("evaluation", "min called on empty list")),
]


@cases(IS_SORTED + SUM + MIN_MAX + INDEX_OF)
def test_lists(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(KUBERNETES_PROFILE)
def test_lists_kubernetes_profile(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes")


@cases([("object.items.sum()", 6), ("object.items.max()", 3), ("object.names.isSorted()", True)])
def test_lists_on_object_data(expression: str, expected: Any) -> None:
    check_case(expression, expected, object={"items": [1, 2, 3], "names": ["a", "b"]})


def test_list_functions_charge_a_traversal_of_the_list() -> None:
    program = cel.Environment("kyverno").compile("object.items.sum() + object.items.max()")
    budget = cel.Budget(per_call_limit=1_500)
    with pytest.raises(cel.CelCostError):
        program.evaluate(cel.Activation(object={"items": list(range(1_000))}, budget=budget))
    assert program.evaluate(cel.Activation(object={"items": list(range(100))})) == 4950 + 99
