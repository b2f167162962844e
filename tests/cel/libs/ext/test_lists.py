"""cel-go ext Lists (version 3): rows ported from cel-go's ext/lists_test.go (TestLists,
TestListsRuntimeErrors, TestListsVersion) and the library's doc examples. celmut enforces homogeneous
list literals as Kubernetes does, so cel-go's mixed literals are written with dyn()."""

from __future__ import annotations

from typing import Any

from celmut import cel
from tests.cel.helpers import Err, cases, check_case

RANGE_REVERSE_SLICE = [
    ("lists.range(4) == [0,1,2,3]", True),
    ("lists.range(0) == []", True),
    ("lists.range(5)", [0, 1, 2, 3, 4]),
    ("lists.range(-1)", Err("evaluation", "lists.range: size must be non-negative, got -1")),
    ("lists.range(10000001)", Err("cost", "cost limit")),  # the cost is charged before allocating
    ("lists.range(100000000)", Err("cost", "cost limit")),
    ("lists.range(dyn('3'))", Err("evaluation", "no such overload")),
    ("lists.range('3')", Err("compile", "no matching overload")),
    ("[5,1,2,3].reverse() == [3,2,1,5]", True),
    ("[].reverse() == []", True),
    ("[1].reverse() == [1]", True),
    (
        "['are', 'you', 'as', 'bored', 'as', 'I', 'am'].reverse() == ['am', 'I', 'as', 'bored', 'as', 'you', 'are']",
        True,
    ),
    ("[false, true, true].reverse().reverse() == [false, true, true]", True),
    ("[5, 3, 1, 2].reverse()", [2, 1, 3, 5]),
    ("[1, 2, 3].reverse() == [3, 2, 1]", True),
    ("dyn({}).reverse()", Err("evaluation", "no such overload")),
    ("[1,2,3,4].slice(0, 4) == [1,2,3,4]", True),
    ("[1,2,3,4].slice(0, 0) == []", True),
    ("[1,2,3,4].slice(1, 1) == []", True),
    ("[1,2,3,4].slice(4, 4) == []", True),
    ("[1,2,3,4].slice(1, 3) == [2, 3]", True),
    ("[1,2,3,4].slice(2, 4)", [3, 4]),
    ("[1, 2, 3, 4, 5].slice(2, 4) == [3, 4]", True),
    (
        "[1,2,3,4].slice(3, 0)",
        Err("evaluation", "cannot slice(3, 0), start index must be less than or equal to end index"),
    ),
    ("[1,2,3,4].slice(0, 10)", Err("evaluation", "cannot slice(0, 10), list is length 4")),
    ("[1,2,3,4].slice(-5, 10)", Err("evaluation", "cannot slice(-5, 10), negative indexes not supported")),
    ("[1,2,3,4].slice(-5, -3)", Err("evaluation", "cannot slice(-5, -3), negative indexes not supported")),
    ("[1,2,3,4].slice(0, '1')", Err("compile", "no matching overload")),
    ("dyn('abc').slice(0, 1)", Err("evaluation", "no such overload")),
]

FLATTEN = [
    ("dyn([]).flatten() == []", True),
    ("dyn([1,2,3,4]).flatten() == [1,2,3,4]", True),
    ("[1, dyn([2, dyn([3, 4])])].flatten() == [1, 2, dyn([3, 4])]", True),
    ("[1, 2, dyn([]), [], [3, 4]].flatten() == [1, 2, 3, 4]", True),
    ("[1, dyn([2, dyn([3, 4])])].flatten(2) == [1, 2, 3, 4]", True),
    ("[1, dyn([2, dyn([3, dyn([4])])])].flatten(2)", [1, 2, 3, [4]]),
    ("[[1, 2], [3, 4]].flatten() == [1, 2, 3, 4]", True),
    ("[[1, 2], [3]].flatten()", [1, 2, 3]),
    ("[[[1]], [[2, 3]]].flatten()", [[1], [2, 3]]),
    ("[[[1]], [[2, 3]]].flatten(0)", [[[1]], [[2, 3]]]),
    ("[1, dyn([2, dyn([3, dyn([4])])])].flatten(-1) == [1,2,3,4]", Err("evaluation", "level must be non-negative")),
    ("[].flatten(-1)", Err("evaluation", "level must be non-negative")),
    ("dyn({}).flatten()", Err("evaluation", "no such overload")),
    ("dyn({}).flatten(0)", Err("evaluation", "no such overload")),
    ("[].flatten(dyn('1'))", Err("evaluation", "no such overload")),
    ("[1, 2].flatten()", Err("compile", "no matching overload")),  # flatten() is declared on list(list(T))
    ("[1, [2]].flatten()", Err("compile", "list literal")),
    ("[[1], [2]].flatten('1')", Err("compile", "no matching overload")),
]

SORT_DISTINCT = [
    ("[].sort() == []", True),
    ("[1].sort() == [1]", True),
    ("[4, 3, 2, 1].sort() == [1, 2, 3, 4]", True),
    ("['d', 'a', 'b', 'c'].sort() == ['a', 'b', 'c', 'd']", True),
    ("[2, 1, 3].sort() == [1, 2, 3]", True),
    ("[3, 2, 1].sort()", [1, 2, 3]),
    ("['b', 'c', 'a'].sort()", ["a", "b", "c"]),
    ("[3u, 1u, 2u].sort()", [1, 2, 3]),
    ("[2.5, -1.0, 0.0].sort()", [-1.0, 0.0, 2.5]),
    ("[true, false, true].sort()", [False, True, True]),
    ("[b'b', b'a'].sort() == [b'a', b'b']", True),
    ("[duration('2s'), duration('1s')].sort() == [duration('1s'), duration('2s')]", True),
    (
        "[timestamp('2024-01-02T00:00:00Z'), timestamp('2024-01-01T00:00:00Z')].sort()[0]"
        " == timestamp('2024-01-01T00:00:00Z')",
        True,
    ),
    (
        "[dyn('d'), 3, 2, 'c'].sort() == ['a', 'b', 'c', 'd']",
        Err("evaluation", "list elements must have the same type"),
    ),
    ("['d', 3, 2, 'c'].sort()", Err("compile", "list literal")),
    ("[1, dyn(2u)].sort()", Err("evaluation", "list elements must have the same type")),  # int and uint differ
    ("[[1, 2, 3]].sort()", Err("compile", "no matching overload")),
    ("dyn([[1, 2, 3]]).sort()", Err("evaluation", "list elements must be comparable")),
    ("dyn([{'a': 1}, {'b': 2}]).sort()", Err("evaluation", "list elements must be comparable")),
    ("dyn([null]).sort()", Err("evaluation", "list elements must be comparable")),
    ("dyn('abc').sort()", Err("evaluation", "no such overload")),
    ("[].distinct() == []", True),
    ("[1].distinct() == [1]", True),
    ("[-2, 5, -2, 1, 1, 5, -2, 1].distinct() == [-2, 5, 1]", True),
    ("['c', 'a', 'a', 'b', 'a', 'b', 'c', 'c'].distinct() == ['c', 'a', 'b']", True),
    ("[dyn(1), 2.0, 'c', 3, 'c', 1].distinct() == [dyn(1), 2.0, 'c', 3]", True),
    ("[dyn(1), 1.0, 2].distinct() == [1, 2]", True),
    ("[[1], [1], [2]].distinct() == [[1], [2]]", True),
    ("[1, 2, 2, 1].distinct() == [1, 2]", True),
    ("[1, 2, 2, 3, 3, 3].distinct()", [1, 2, 3]),
    ("['b', 'b', 'c', 'a', 'c'].distinct()", ["b", "c", "a"]),
    ("[dyn(1), 'b', 2, 'b'].distinct()", [1, "b", 2]),
    ("[dyn(1), 1u, 1.0, true, 'a', b'a', null, null].distinct()", [1, True, "a", "YQ==", None]),
    ("[dyn(1.0), 1].distinct()", [1.0]),  # the first of equal values is kept
    ("[dyn(1u), 1.0, 1].distinct()", [1]),
    ("[dyn(1.0), 1u].distinct()", [1.0]),
    ("[dyn([1]), [1.0], {'a': 1}, {'a': 1u}].distinct()", [[1], {"a": 1}]),
    ("[0.0/0.0, 0.0/0.0].distinct().size()", 2),  # NaN is not equal to itself
    ("[duration('60s'), duration('1m')].distinct().size()", 1),
    ("dyn(1).distinct()", Err("evaluation", "no such overload")),
]

SORT_BY = [
    ("[].sortBy(e, e) == []", True),
    ("['a'].sortBy(e, e) == ['a']", True),
    ("[-3, 1, -5, -2, 4].sortBy(e, -(e * e)) == [-5, 4, -3, -2, 1]", True),
    ("[-3, 1, -5, -2, 4].map(e, e * 2).sortBy(e, -(e * e)) == [-10, 8, -6, -4, 2]", True),
    ("lists.range(3).sortBy(e, -e) == [2, 1, 0]", True),
    ("['a', 'c', 'b', 'first'].sortBy(e, e == 'first' ? '' : e) == ['first', 'a', 'b', 'c']", True),
    ("[{'field': 'lo'}, {'field': 'hi'}].sortBy(m, m.field) == [{'field': 'hi'}, {'field': 'lo'}]", True),
    (
        "[{'name': dyn('foo'), 'score': 0}, {'name': dyn('bar'), 'score': -10}, {'name': dyn('baz'), 'score': 1000}]"
        ".sortBy(e, e.score).map(e, e.name) == ['bar', 'foo', 'baz']",
        True,
    ),
    ("[3, 1, 2].sortBy(e, -e)", [3, 2, 1]),
    ("[{'a': 1}, {'a': 2}].sortBy(e, e)", Err("evaluation", "no such overload")),  # keys must be ordered
]

# Kubernetes added the cel-go lists library (v3) to its base environment in 1.34, so it works in
# the Kubernetes profile too.
KUBERNETES = [
    ("lists.range(3)", [0, 1, 2]),
    ("[3, 1, 2].sort()", [1, 2, 3]),
    ("[1, 2, 1].distinct()", [1, 2]),
    ("[1, 2].slice(0, 1)", [1]),
    ("[[1], [2]].flatten()", [1, 2]),
    ("[3, 1, 2].sortBy(e, e)", [1, 2, 3]),
]


@cases(RANGE_REVERSE_SLICE + FLATTEN + SORT_DISTINCT + SORT_BY)
def test_lists(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(KUBERNETES)
def test_lists_in_the_kubernetes_profile(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes")


def test_list_builders_are_charged_for_their_output() -> None:
    items = [[0] * 1000] * 2000  # 2,000,000 elements once flattened
    check_case("variables.l.flatten().size()", Err("cost", "cost limit"), variables={"l": items})
    # only the slice is flattened: the shared list's size is never charged
    check_case("variables.l.slice(0, 2).flatten().size()", 2000, variables={"l": items})
    check_case("variables.l.sort().size()", Err("cost", "cost limit"), variables={"l": list(range(200_000))})


def test_lists_range_within_the_budget_allocates_the_list() -> None:
    program = cel.Environment("kyverno").compile("lists.range(100000).size()")
    budget = cel.Budget(per_call_limit=10**7, limit=10**7)
    assert program.evaluate(cel.Activation(budget=budget)) == 100_000
