"""cel-go ext Sets: rows ported from cel-go's ext/sets_test.go (TestSets) and the library's doc examples.

cel-go declares the functions over ``list(T), list(T)`` and Kubernetes enforces homogeneous literals, so
``sets.contains([1], [1.0])`` does not type-check there; the cross-type rows wrap elements in dyn(), which
is how such a comparison reaches the functions in a policy (values from objects are dyn)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cel.helpers import Err, cases, check_case

CONTAINS = [
    ("sets.contains([], [])", True),
    ("sets.contains([1], [])", True),
    ("sets.contains([], [1])", False),
    ("sets.contains([1], [1])", True),
    ("sets.contains([1], [1, 1])", True),
    ("sets.contains([1, 1], [1])", True),
    ("sets.contains([2, 1], [1])", True),
    ("sets.contains([1, 2, 3, 4], [2, 3])", True),
    ("sets.contains([1], [dyn(1.0), 1])", True),
    ("sets.contains([1, 2], [dyn(2u), 2.0])", True),
    ("sets.contains([1, dyn(2u)], [2, dyn(2.0)])", True),
    ("sets.contains([[1], [2, 3]], [[2, dyn(3.0)]])", True),
    ("!sets.contains([1], [2])", True),
    ("!sets.contains([1], [1, 2])", True),
    ("!sets.contains([1], [dyn('1'), 1])", True),
    ("!sets.contains([1], [dyn(1.1), 1u])", True),
    ("sets.contains([1], dyn([1.0]))", True),  # heterogeneous equality: 1 == 1.0
    ("sets.contains(['a', 'b'], ['b'])", True),
    ("sets.contains([{'a': 1}], [dyn({'a': 1u})])", True),
    ("sets.contains([{'a': 1}], [{'a': 1u}])", Err("compile", "no matching overload")),
    ("sets.contains([null], [null])", True),
    ("sets.contains([1], [1.0])", Err("compile", "found no matching overload for 'sets.contains'")),
    ("sets.contains([1], 1)", Err("compile", "no matching overload")),
    ("sets.contains(dyn(1), [1])", Err("evaluation", "no such overload: sets.contains(int, list)")),
]

EQUIVALENT = [
    ("sets.equivalent([], [])", True),
    ("sets.equivalent([1], [1])", True),
    ("sets.equivalent([1], [1, 1])", True),
    ("sets.equivalent([1, 1], [1])", True),
    ("sets.equivalent([1], [dyn(1u), 1.0])", True),
    ("sets.equivalent([1, 2, 3], [dyn(3u), 2.0, 1])", True),
    ("sets.equivalent([[dyn(1.0)], [2, 3]], [[1], [2, dyn(3.0)]])", True),
    ("!sets.equivalent([2, 1], [1])", True),
    ("!sets.equivalent([1], [1, 2])", True),
    ("!sets.equivalent([1, 2], [dyn(2u), 2, 2.0])", True),
    ("!sets.equivalent([1, 2], [dyn(1u), 2, 2.3])", True),
    ("sets.equivalent([], [1])", False),
    ("sets.equivalent(dyn('a'), [])", Err("evaluation", "no such overload")),
]

INTERSECTS = [
    ("sets.intersects([1], [1])", True),
    ("sets.intersects([1], [1, 1])", True),
    ("sets.intersects([1, 1], [1])", True),
    ("sets.intersects([2, 1], [1])", True),
    ("sets.intersects([1], [1, 2])", True),
    ("sets.intersects([1], [dyn(1.0), 2])", True),
    ("sets.intersects([1, 2], [dyn(2u), 2, 2.0])", True),
    ("sets.intersects([1, 2], [dyn(1u), 2, 2.3])", True),
    ("sets.intersects([[1], [2, 3]], [[1, 2], [2, dyn(3.0)]])", True),
    ("!sets.intersects([], [])", True),
    ("!sets.intersects([1], [])", True),
    ("!sets.intersects([1], [2])", True),
    ("!sets.intersects([1], [dyn('1'), 2])", True),
    ("!sets.intersects([1], [dyn(1.1), 2u])", True),
    ("sets.intersects([], [1])", False),
    ("sets.intersects([1], dyn({}))", Err("evaluation", "no such overload")),
]

# uint and double compare by value (heterogeneous equality).
UINT_DOUBLE = [
    ("sets.contains([1, dyn(2.0), 3u], [dyn(1.0), 2u, 3])", True),
    ("sets.intersects([dyn(2u)], [2.0])", True),
    ("sets.equivalent([dyn(1u)], [1.0])", True),
]

# Kubernetes has the sets library too.
KUBERNETES = [
    ("sets.contains([1, 2, 3, 4], [2, 3])", True),
    ("sets.equivalent([1], [1, 1])", True),
    ("sets.intersects([1], [2])", False),
    ("sets.contains(object.items, [dyn(1.0)])", True),
]


@cases(CONTAINS + EQUIVALENT + INTERSECTS)
def test_sets(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@pytest.mark.parametrize(("expression", "expected"), UINT_DOUBLE)
def test_sets_comparing_uint_with_double(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(KUBERNETES)
def test_sets_in_the_kubernetes_profile(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes", object={"items": [1, 2]})
