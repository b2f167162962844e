"""Calling library overloads: the one implementation of how a call is charged, dispatched and how a
Python error in a library becomes a CEL error, shared by the planner's closures
(:mod:`celmut.cel.planner`) and the generated Python code (:mod:`celmut.cel.backends.pycode`). Also
CEL ordering (``<``, ``<=``, ``>``, ``>=``) beyond the int fast path.

Every value these functions take has been evaluated already: argument evaluation order and error
absorption are the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from celmut.cel import costs
from celmut.cel import values as v
from celmut.cel.declarations import Overload
from celmut.cel.errors import CelError, CelEvaluationError
from celmut.cel.evalcontext import EvalContext
from celmut.cel.values import no_such_overload

# Python exceptions a library implementation may raise on bad input; they become CEL errors.
IMPL_ERRORS = (TypeError, ValueError, ArithmeticError, KeyError, IndexError, AttributeError, UnicodeError)


def impl_error(name: str, ex: Exception) -> CelEvaluationError:
    """The CEL error for a Python error a library implementation raised on its input."""
    detail = str(ex) or type(ex).__name__
    return CelEvaluationError(f"{name}: {detail}")


def charge_result(ctx: EvalContext, name: str, result: Any) -> Any:
    """Count a value a costed library function built as the request's allocation; refuse a string
    over :data:`celmut.cel.costs.MAX_STRING_BYTES`."""
    cls = type(result)
    if cls is str or cls is bytes:
        costs.check_string_size(len(result), f"{name}()")
        ctx.allocate(len(result) + 48)
    elif cls is list or cls is dict:
        ctx.allocate(costs.allocation_bytes(result))
    return result


def _charged_call(ctx: EvalContext, name: str, overload: Overload, values: Sequence[Any]) -> Any:
    """Charge the overload's cost of the arguments and call it; a Python error becomes a CEL one."""
    cost = overload.cost
    try:
        if cost is not None:
            ctx.charge(cost(ctx, *values) if costs.takes_context(cost) else cost(*values))
        return overload.impl(ctx, *values) if overload.needs_context else overload.impl(*values)
    except CelError:
        raise
    except IMPL_ERRORS as ex:
        raise impl_error(name, ex) from ex


def call_costed(ctx: EvalContext, name: str, overload: Overload, values: Sequence[Any]) -> Any:
    """Call an overload that takes the evaluation context or declares a cost: charge the cost of
    the arguments, call, then count what it built."""
    return charge_result(ctx, name, _charged_call(ctx, name, overload, values))


def dispatch(ctx: EvalContext, name: str, overloads: Sequence[Overload], values: tuple[Any, ...]) -> Any:
    """Call the first overload whose parameter guards accept the runtime arguments."""
    for overload in overloads:
        if overload.accepts(values):
            result = _charged_call(ctx, name, overload, values)
            costed = overload.cost is not None or overload.needs_context
            return charge_result(ctx, name, result) if costed else result
    raise no_such_overload(name, *values)


def shares_one_impl(overloads: Sequence[Overload]) -> bool:
    """Whether every candidate overload has the same implementation, context and cost, so one call
    serves them all (the implementation dispatches on its own)."""
    first = overloads[0]
    return len({id(o.impl) for o in overloads}) == 1 and all(
        o.needs_context == first.needs_context and o.cost is first.cost for o in overloads
    )


ORDER_TESTS: dict[str, Callable[[int], bool]] = {
    "_<_": lambda c: c == -1,
    "_<=_": lambda c: c in (-1, 0),
    "_>_": lambda c: c == 1,
    "_>=_": lambda c: c in (0, 1),
}


def ordered(ctx: EvalContext, a: Any, b: Any, name: str) -> bool:
    """``a < b`` (``name`` is one of :data:`ORDER_TESTS`) under CEL ordering, charged as cel-go does."""
    if type(a) is int and type(b) is int:
        return ORDER_TESTS[name](-1 if a < b else (1 if a > b else 0))
    if (type(a) is str or type(a) is bytes) and type(b) is type(a) and min(len(a), len(b)) > 10:
        ctx.charge(min(len(a), len(b)) // 10)  # cel-go runtimecost.go: ceil(min(size) * 0.1)
    return ORDER_TESTS[name](v.compare(a, b, name))
