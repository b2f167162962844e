"""Closures for the comprehension macros: all, exists, exists_one, map, filter, the two-variable
forms, transformList/transformMap/transformMapEntry and sortBy.

Each iteration charges the static cost of the loop body, so a large range or a nested loop runs
into the cost budget instead of running forever (cel-go charges the loop's sub-expressions each time
they run, interpreter/runtimecost.go); the lists and maps a macro builds are charged to the
request's allocation. Error handling follows cel-go: ``all``/``exists``
absorb an element's error when another element decides the result; every other macro propagates it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from celmut.cel import ast, costs
from celmut.cel import values as v
from celmut.cel.errors import CelCostError, CelEvaluationError, describe
from celmut.cel.evalcontext import EvalContext
from celmut.cel.values import no_such_overload

Fn = Callable[[EvalContext], Any]


def _pairs(range_value: Any, two_vars: bool, macro: str) -> Iterable[Any]:
    """What the loop variables range over: elements or (index, element) for lists, keys or
    (key, value) for maps."""
    if isinstance(range_value, list | tuple):
        return enumerate(range_value) if two_vars else range_value
    if isinstance(range_value, dict):
        return range_value.items() if two_vars else range_value.keys()
    raise CelEvaluationError(
        f"{macro}(): expression of type '{v.type_name(range_value)}' cannot be the range of a comprehension"
    )


def plan_comprehension(
    node: ast.Comprehension,
    range_fn: Fn,
    body: Fn,
    predicate: Fn | None,
    first: int,
    second: int | None,
    cost: int,
) -> Fn:
    """Dispatch to the builder for the macro's kind; each builder captures what its loop uses."""
    two_vars = second is not None
    macro = node.macro or node.kind
    kind = node.kind
    builder = _BUILDERS.get(kind)
    if builder is None:  # pragma: no cover
        raise ValueError(f"unknown comprehension kind {kind!r}")
    loop = _Loop(
        kind, macro, _items(range_fn, two_vars, macro), _binder(cost, first, second), body, predicate, two_vars
    )
    return builder(loop)


class _Loop:
    """What a builder needs at build time; builders copy the fields into locals so the closures
    they return do no attribute lookups per iteration."""

    __slots__ = ("bind", "body", "items", "kind", "macro", "predicate", "two_vars")

    def __init__(
        self,
        kind: str,
        macro: str,
        items: Callable[[EvalContext], Iterable[Any]],
        bind: Callable[[EvalContext, Any], None],
        body: Fn,
        predicate: Fn | None,
        two_vars: bool,
    ) -> None:
        self.kind, self.macro, self.items, self.bind = kind, macro, items, bind
        self.body, self.predicate, self.two_vars = body, predicate, two_vars


def _binder(cost: int, first: int, second: int | None) -> Callable[[EvalContext, Any], None]:
    def bind(ctx: EvalContext, item: Any) -> None:
        ctx.charge(cost)
        if second is not None:
            ctx.slots[first], ctx.slots[second] = item
        else:
            ctx.slots[first] = item

    return bind


def _items(range_fn: Fn, two_vars: bool, macro: str) -> Callable[[EvalContext], Iterable[Any]]:
    def items(ctx: EvalContext) -> Iterable[Any]:
        return _pairs(range_fn(ctx), two_vars, macro)

    return items


def _selector(predicate: Fn | None, macro: str) -> Callable[[EvalContext, Any], bool]:
    def selected(ctx: EvalContext, item: Any) -> bool:
        if predicate is None:
            return True
        keep = predicate(ctx)
        if keep is True:
            return True
        if keep is False:
            return False
        raise no_such_overload(macro, keep)

    return selected


def _build_quantifier(loop: _Loop) -> Fn:
    """all / exists: an element's error is absorbed when another element decides the result."""
    items, bind, body, macro = loop.items, loop.bind, loop.body, loop.macro
    stop = loop.kind == "exists"

    def quantifier(ctx: EvalContext) -> bool:
        error: CelEvaluationError | None = None
        for item in items(ctx):
            bind(ctx, item)
            try:
                result: object = body(ctx)
            except CelCostError:
                raise
            except CelEvaluationError as ex:
                error = error or ex
                continue
            if result is stop:
                return stop
            if result is not (not stop):
                error = error or no_such_overload(macro, result)
        if error is not None:
            try:
                raise error
            finally:
                error = None  # no cycle frame -> error -> traceback -> frame (its garbage holds the request)
        return not stop

    return quantifier


def _build_exists_one(loop: _Loop) -> Fn:
    items, bind, body, macro = loop.items, loop.bind, loop.body, loop.macro

    def exists_one(ctx: EvalContext) -> bool:
        count = 0
        for item in items(ctx):
            bind(ctx, item)
            result = body(ctx)
            if result is True:
                count += 1
            elif result is not False:
                raise no_such_overload(macro, result)
        return count == 1

    return exists_one


def _build_filter(loop: _Loop) -> Fn:
    items, bind, body, macro, two_vars = loop.items, loop.bind, loop.body, loop.macro, loop.two_vars

    def filter_(ctx: EvalContext) -> list[Any]:
        out = []
        for item in items(ctx):
            bind(ctx, item)
            keep = body(ctx)
            if keep is True:
                out.append(item[1] if two_vars else item)
            elif keep is not False:
                raise no_such_overload(macro, keep)
        ctx.allocate(costs.allocation_bytes(out))
        return out

    return filter_


def _build_map(loop: _Loop) -> Fn:
    """map / transformList, with the optional filter predicate."""
    items, bind, body = loop.items, loop.bind, loop.body
    selected = _selector(loop.predicate, loop.macro)

    def map_(ctx: EvalContext) -> list[Any]:
        out = []
        for item in items(ctx):
            bind(ctx, item)
            if selected(ctx, item):
                out.append(body(ctx))
        ctx.allocate(costs.allocation_bytes(out))
        return out

    return map_


def _build_transform_map(loop: _Loop) -> Fn:
    items, bind, body = loop.items, loop.bind, loop.body
    selected = _selector(loop.predicate, loop.macro)

    def transform_map(ctx: EvalContext) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for item in items(ctx):
            bind(ctx, item)
            if selected(ctx, item):
                out[item[0]] = body(ctx)
        ctx.allocate(costs.allocation_bytes(out))
        return out

    return transform_map


def _build_transform_map_entry(loop: _Loop) -> Fn:
    items, bind, body = loop.items, loop.bind, loop.body
    selected = _selector(loop.predicate, loop.macro)

    def transform_map_entry(ctx: EvalContext) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for item in items(ctx):
            bind(ctx, item)
            if not selected(ctx, item):
                continue
            entry = body(ctx)
            if not isinstance(entry, dict):
                raise no_such_overload("transformMapEntry", entry)
            for key, value in entry.items():
                if key in out:
                    raise CelEvaluationError(f"insert failed: key {describe(key)} already exists")
                out[v.require_map_key(key)] = value
        ctx.allocate(costs.allocation_bytes(out))
        return out

    return transform_map_entry


def _build_sort_by(loop: _Loop) -> Fn:
    items, bind, body = loop.items, loop.bind, loop.body

    def sort_by(ctx: EvalContext) -> list[Any]:
        keyed = []
        for item in items(ctx):
            bind(ctx, item)
            keyed.append((body(ctx), item))
        return finish_sort_by(ctx, keyed)

    return sort_by


def finish_sort_by(ctx: EvalContext, keyed: list[tuple[Any, Any]]) -> list[Any]:
    """sortBy's elements ordered by their keys (stable), the sort's comparisons charged."""
    ctx.charge(len(keyed) * max(1, len(keyed).bit_length()))
    ctx.allocate(2 * costs.allocation_bytes(keyed))
    return [item for _, item in _stable_sort(keyed)]


_BUILDERS: dict[str, Callable[[_Loop], Fn]] = {
    "all": _build_quantifier,
    "exists": _build_quantifier,
    "exists_one": _build_exists_one,
    "filter": _build_filter,
    "map": _build_map,
    "transformList": _build_map,
    "transformMap": _build_transform_map,
    "transformMapEntry": _build_transform_map_entry,
    "sortBy": _build_sort_by,
}


def _stable_sort(keyed: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    import functools

    def order(a: tuple[Any, Any], b: tuple[Any, Any]) -> int:
        result = v.compare(a[0], b[0], "sortBy")
        return 0 if result == 2 else result

    return sorted(keyed, key=functools.cmp_to_key(order))
