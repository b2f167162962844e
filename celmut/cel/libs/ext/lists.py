"""cel-go's Lists extension (``ext.Lists()``, version 3). ``sortBy`` is a macro planned by the core
(:mod:`celmut.cel.comprehensions`); ``first()``/``last()`` live in :mod:`celmut.cel.libs.optional`.

``lists.range(<int>) -> <list(int)>``  ``lists.range(3) == [0, 1, 2]``; negative sizes and sizes over
10,000,000 are errors
``<list(T)>.slice(<int>, <int>) -> <list(T)>``  ``[1, 2, 3, 4].slice(1, 3) == [2, 3]``
``<list(list(T))>.flatten() -> <list(T)>``  ``[[1, 2], [3]].flatten() == [1, 2, 3]`` (one level; a list that
is already flat passes through at run time)
``<list(dyn)>.flatten(<int>) -> <list(dyn)>``  ``dyn([1, [2, [3, [4]]]]).flatten(2) == [1, 2, 3, [4]]``
``<list(T)>.distinct() -> <list(T)>``  ``[1, 2.0, 1u, 'b', 'b'].distinct() == [1, 2.0, 'b']`` (CEL equality)
``<list(T)>.reverse() -> <list(T)>``  ``[5, 3, 1, 2].reverse() == [2, 1, 3, 5]``
``<list(T)>.sort() -> <list(T)>``  T in int, uint, double, bool, duration, timestamp, string, bytes:
``['b', 'c', 'a'].sort() == ['a', 'b', 'c']``; mixed or unordered element types are errors
``<list(T)>.sortBy(<var>, <keyExpr>) -> <list(T)>``  ``[3, 1, 2].sortBy(e, -e) == [3, 2, 1]``

Functions that build lists cost their output size, so ``lists.range(100000000)`` exhausts the budget
before anything is allocated. The size of a flattened list is counted once per distinct sublist, so
lists that share their parts cannot make the count itself unbounded; ``distinct`` charges every
comparison by what it walks (:class:`celmut.cel.costs.Equality`).
"""

from __future__ import annotations

import functools
import math
from typing import Any

from celmut.cel import costs
from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.evalcontext import EvalContext
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("cel.lib.ext.lists")
fn, method = LIBRARY.function, LIBRARY.method

MAX_RANGE_SIZE = 10_000_000


def _size(value: Any, *_: Any) -> int:
    return len(value) if isinstance(value, list | tuple) else 0


@fn("lists.range", ("int",), "list(int)", cost=lambda n: max(n, 0) if type(n) is int else 0, since=2)
def range_(n: int) -> list[int]:
    if type(n) is not int:
        raise no_such_overload("lists.range", n)
    if n < 0:
        raise CelEvaluationError(f"lists.range: size must be non-negative, got {n}")
    if n > MAX_RANGE_SIZE:
        raise CelEvaluationError(f"lists.range: size {n} exceeds maximum allowed ({MAX_RANGE_SIZE})")
    return list(range(n))


def _slice_cost(items: Any, start: Any, end: Any) -> int:
    if type(start) is int and type(end) is int:
        return max(end - start, 0) if isinstance(items, list | tuple) and end <= len(items) else 0
    return 0


@method("slice", "list(T)", ("int", "int"), "list(T)", cost=_slice_cost)
def slice_(items: list[Any], start: int, end: int) -> list[Any]:
    if not isinstance(items, list | tuple) or type(start) is not int or type(end) is not int:
        raise no_such_overload("slice", items, start, end)
    if start < 0 or end < 0:
        raise CelEvaluationError(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        raise CelEvaluationError(f"cannot slice({start}, {end}), start index must be less than or equal to end index")
    if len(items) < end:
        raise CelEvaluationError(f"cannot slice({start}, {end}), list is length {len(items)}")
    return list(items[start:end])


def _flat_size(items: Any, depth: int, memo: dict[tuple[int, int], int]) -> int:
    """How many elements flattening ``items`` to ``depth`` produces (counted, not built; each
    distinct sublist once per depth, so shared sublists do not unfold)."""
    key = (id(items), depth)
    found = memo.get(key)
    if found is not None:
        return found
    count = 0
    for item in items:
        if depth > 0 and isinstance(item, list | tuple):
            count += _flat_size(item, depth - 1, memo)
        else:
            count += 1
    memo[key] = count
    return count


def _flatten_cost(items: Any, depth: Any = 1) -> int:
    if not isinstance(items, list | tuple) or type(depth) is not int or depth < 0:
        return 0
    return _flat_size(items, depth, {})


def _flatten(items: Any, depth: int, out: list[Any]) -> None:
    for item in items:
        if depth > 0 and isinstance(item, list | tuple):
            _flatten(item, depth - 1, out)
        else:
            out.append(item)


@method("flatten", "list(list(T))", (), "list(T)", cost=_flatten_cost, since=1)
@method("flatten", "list(dyn)", ("int",), "list(dyn)", cost=_flatten_cost, since=1)
def flatten(items: list[Any], *depth: int) -> list[Any]:
    """Flatten nested lists ``depth`` levels deep (1 by default); a negative depth is an error."""
    level = depth[0] if depth else 1
    if not isinstance(items, list | tuple) or type(level) is not int:
        raise no_such_overload("flatten", items, *depth)
    if level < 0:
        raise CelEvaluationError("level must be non-negative")
    out: list[Any] = []
    _flatten(items, level, out)
    return out


_EXACT_DOUBLE_INTS = 2**53


def _distinct_key(value: Any) -> Any:
    """A hashable key whose equality is CEL equality, or None when the value needs a linear scan."""
    kind = type(value)
    if kind is bool:
        return ("bool", value)
    if kind is int or kind is v.UintType or (kind is float and not math.isnan(value)):
        if abs(value) >= _EXACT_DOUBLE_INTS:
            return None  # int vs double compares through double there (values.equals): not transitive
        return ("number", int(value) if kind is v.UintType else value)  # celpy's uint refuses == double
    if kind is str or kind is bytes:
        return (kind.__name__, value)
    if value is None:
        return ("null",)
    if kind is v.Timestamp or kind is v.Duration:
        return (v.type_name(value), value)
    return None


@method("distinct", "list(T)", (), "list(T)", cost=_size, context=True, since=2)
def distinct(ctx: EvalContext, items: list[Any]) -> list[Any]:
    """The first occurrence of each value, in order, under CEL equality (``1``, ``1u``, ``1.0`` are
    equal); comparisons of lists and maps are charged by what they walk."""
    if not isinstance(items, list | tuple):
        raise no_such_overload("distinct", items)
    seen: set[Any] = set()
    others: list[Any] = []
    out: list[Any] = []
    comparison = costs.Equality(ctx)
    try:
        for item in items:
            key = _distinct_key(item)
            if key is not None:
                if key in seen:
                    continue
                seen.add(key)
            elif any(comparison.equal(item, other) for other in others):
                continue
            else:
                others.append(item)
            out.append(item)
    finally:
        comparison.done()
    return out


@method("reverse", "list(T)", (), "list(T)", cost=_size, since=2)
def reverse(items: list[Any]) -> list[Any]:
    if not isinstance(items, list | tuple):
        raise no_such_overload("reverse", items)
    return list(reversed(items))


_COMPARABLE = ("int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes")
_ORDERED_TYPES = (int, v.UintType, float, bool, str, bytes, v.Timestamp, v.Duration)


def _sort_cost(items: Any) -> int:
    if not isinstance(items, list | tuple) or len(items) < 2:
        return _size(items)
    return len(items) * max(1, (len(items) - 1).bit_length())


def sort(items: list[Any]) -> list[Any]:
    """Sort a list whose elements all have one ordered type; anything else is an error."""
    if not isinstance(items, list | tuple):
        raise no_such_overload("sort", items)
    if not items:
        return []
    first = items[0]
    if not isinstance(first, _ORDERED_TYPES):
        raise CelEvaluationError("list elements must be comparable")
    kind = v.type_name(first)
    if any(v.type_name(item) != kind for item in items):
        raise CelEvaluationError("list elements must have the same type")

    def order(a: Any, b: Any) -> int:
        result = v.compare(a, b, "sort")
        return 0 if result == 2 else result

    return sorted(items, key=functools.cmp_to_key(order))


for _t in _COMPARABLE:
    method("sort", f"list({_t})", (), f"list({_t})", cost=_sort_cost, since=2)(sort)
