"""cel-go's Sets extension (``ext.Sets()``): set relations over lists, with CEL heterogeneous equality
(``1 == 1u == 1.0``) deciding membership.

``sets.contains(list(T), list(T)) -> bool``  every element of the second list is in the first:
``sets.contains([1, 2, 3, 4], [2, 3]) == true``, ``sets.contains([], [1]) == false``
``sets.equivalent(list(T), list(T)) -> bool``  each list contains the other (sizes may differ):
``sets.equivalent([1], [1, 1]) == true``
``sets.intersects(list(T), list(T)) -> bool``  some element is in both:
``sets.intersects([[1], [2, 3]], [[1, 2], [2, 3.0]]) == true``
"""

from __future__ import annotations

from typing import Any

from celmut.cel import costs
from celmut.cel.declarations import Library
from celmut.cel.evalcontext import EvalContext
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("cel.lib.ext.sets")
fn = LIBRARY.function


def _product_cost(a: Any, b: Any) -> int:
    """cel-go ext/sets.go ``trackSetsCost``: ``1 + m*n*f`` (shallow sizes); the comparisons then
    charge what they walk (:class:`celmut.cel.costs.Equality`)."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) * len(b)
    return 0


def _lists(name: str, a: Any, b: Any) -> None:
    if not isinstance(a, list | tuple) or not isinstance(b, list | tuple):
        raise no_such_overload(name, a, b)


def _contains(comparison: costs.Equality, items: list[Any] | tuple[Any, ...], element: Any) -> bool:
    equal = comparison.equal
    return any(equal(element, item) for item in items)


@fn("sets.contains", ("list(T)", "list(T)"), "bool", cost=_product_cost, context=True)
def contains(ctx: EvalContext, items: list[Any], sublist: list[Any]) -> bool:
    _lists("sets.contains", items, sublist)
    comparison = costs.Equality(ctx)
    try:
        return all(_contains(comparison, items, element) for element in sublist)
    finally:
        comparison.done()


@fn("sets.equivalent", ("list(T)", "list(T)"), "bool", cost=lambda a, b: 2 * _product_cost(a, b), context=True)
def equivalent(ctx: EvalContext, a: list[Any], b: list[Any]) -> bool:
    _lists("sets.equivalent", a, b)
    comparison = costs.Equality(ctx)
    try:
        return all(_contains(comparison, a, element) for element in b) and all(
            _contains(comparison, b, element) for element in a
        )
    finally:
        comparison.done()


@fn("sets.intersects", ("list(T)", "list(T)"), "bool", cost=_product_cost, context=True)
def intersects(ctx: EvalContext, a: list[Any], b: list[Any]) -> bool:
    _lists("sets.intersects", a, b)
    comparison = costs.Equality(ctx)
    try:
        return any(_contains(comparison, b, element) for element in a)
    finally:
        comparison.done()
