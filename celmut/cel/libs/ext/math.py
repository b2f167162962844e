"""cel-go's Math extension (``ext.Math()``, version 2). int and uint are 64-bit.

``math.greatest(<number>, ...) -> <number>`` / ``math.greatest(<list(number)>)``  int, uint and double
compare by value: ``math.greatest(1, 2.5) == 2.5``, ``math.greatest(1, 2, 3) == 3``,
``math.greatest([1u, 7u]) == 7u``, ``math.greatest(1, 1.0, 1u) == 1`` (dyn: mixed types); at least one
argument; an empty list is an error
``math.least(<number>, ...) -> <number>`` / ``math.least(<list(number)>)``  ``math.least(-1, 0) == -1``
``math.ceil(<double>) -> <double>``  ``math.ceil(1.2) == 2.0``
``math.floor(<double>) -> <double>``  ``math.floor(-1.2) == -2.0``
``math.round(<double>) -> <double>``  ties away from zero: ``math.round(-1.5) == -2.0``
``math.trunc(<double>) -> <double>``  ``math.trunc(-1.3) == -1.0``
``math.abs(<int|uint|double>) -> same``  ``math.abs(-1) == 1``; ``math.abs(-9223372036854775808)`` overflows
``math.sign(<int|uint|double>) -> same``  ``math.sign(-42) == -1``, NaN stays NaN
``math.isNaN/isInf/isFinite(<double>) -> <bool>``  ``math.isInf(1.0/0.0) == true``
``math.bitAnd/bitOr/bitXor(<int>, <int>) -> <int>`` and uint  ``math.bitOr(1u, 2u) == 3u``
``math.bitNot(<int>) -> <int>`` and uint  ``math.bitNot(0u) == 18446744073709551615u``
``math.bitShiftLeft/bitShiftRight(<int|uint>, <int>) -> same``  shifts of 64 or more give 0, negative
shifts are errors, right shifts of ints are logical (cel-go ``bitShiftRightIntInt``):
``math.bitShiftRight(-1024, 3) == 2305843009213693824``
``math.sqrt(<int|uint|double>) -> <double>``  ``math.sqrt(25u) == 5.0``, ``math.sqrt(-1)`` is NaN
"""

from __future__ import annotations

import math
from typing import Any

from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("cel.lib.ext.math")
fn = LIBRARY.function

_NUMERIC = ("int", "uint", "double")
_MASK64 = (1 << 64) - 1


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float or type(value) is v.UintType


# --- greatest / least ---------------------------------------------------------------------------------
# cel-go expands these macros to math.@max / math.@min over one number, two numbers or a list; the
# declarations below accept the same shapes: one number or list, two numbers of any numeric types, or
# three or more numbers of one type (cel-go builds a homogeneous list literal from them).


def _pick(name: str, args: tuple[Any, ...], want: int) -> Any:
    items: Any = args
    if len(args) == 1:
        (items,) = args
        if _is_number(items):
            return items
        if not isinstance(items, list | tuple):
            raise CelEvaluationError(f"no such overload: {name}")
        if not items:
            raise CelEvaluationError(f"{name}(list) argument must not be empty")
    if not all(_is_number(item) for item in items):
        if len(args) == 1:
            raise CelEvaluationError(f"no such overload: {name}")
        raise no_such_overload(name, *args)
    best = items[0]
    for item in items[1:]:
        if _order(best, item, name) == want:
            best = item
    return best


def _order(a: Any, b: Any, name: str) -> int:
    """-1, 0 or 1 as cel-go's ``Compare`` orders numbers across int, uint and double (a double
    against an integer compares through double); NaN cannot be ordered."""
    order = v.compare(a, b, name)
    if order == 2:
        raise CelEvaluationError(f"NaN values cannot be ordered: {name}")
    return order


def greatest(*args: Any) -> Any:
    return _pick("math.@max", args, -1)


def least(*args: Any) -> Any:
    return _pick("math.@min", args, 1)


def _pick_cost(*args: Any) -> int:
    return len(args[0]) if len(args) == 1 and isinstance(args[0], list | tuple) else len(args)


for _name, _impl in (("math.greatest", greatest), ("math.least", least)):
    for _t in _NUMERIC:
        fn(_name, (_t,), _t, cost=_pick_cost)(_impl)
        fn(_name, (f"list({_t})",), _t, cost=_pick_cost)(_impl)
        fn(_name, (_t, _t, _t, _t), _t, variadic=True, cost=_pick_cost)(_impl)  # three or more arguments
        for _u in _NUMERIC:
            fn(_name, (_t, _u), _t if _t == _u else "dyn", cost=_pick_cost)(_impl)
    # Three or more numbers of mixed types: cel-go's macro makes them the list literal of
    # math.@max(list(dyn)) (ext/math.go mathGreatest/mathLeast; cel-spec math_ext.textproto
    # "ternary_with_decimal", "quaternary_mixed").
    fn(_name, ("dyn", "dyn", "dyn", "dyn"), "dyn", variadic=True, cost=_pick_cost, fallback=True)(_impl)


# --- rounding and floating point helpers ----------------------------------------------------------------


def _double(name: str, value: Any) -> float:
    if type(value) is not float:
        raise no_such_overload(name, value)
    return value


def _round_half_away(x: float) -> float:
    """Go's math.Round: ties away from zero, exact for every float."""
    if not math.isfinite(x):
        return x
    truncated = math.trunc(x)
    result = float(truncated) if truncated != 0 else math.copysign(0.0, x)
    if abs(x - truncated) >= 0.5:
        result += math.copysign(1.0, x)
    return result


def _whole(x: float, op: Any) -> float:
    if not math.isfinite(x):
        return x
    return math.copysign(float(op(x)), x) if op(x) == 0 else float(op(x))


@fn("math.ceil", ("double",), "double", since=1)
def ceil(x: float) -> float:
    return _whole(_double("math.ceil", x), math.ceil)


@fn("math.floor", ("double",), "double", since=1)
def floor(x: float) -> float:
    return _whole(_double("math.floor", x), math.floor)


@fn("math.round", ("double",), "double", since=1)
def round_(x: float) -> float:
    return _round_half_away(_double("math.round", x))


@fn("math.trunc", ("double",), "double", since=1)
def trunc(x: float) -> float:
    return _whole(_double("math.trunc", x), math.trunc)


@fn("math.isNaN", ("double",), "bool", since=1)
def is_nan(x: float) -> bool:
    return math.isnan(_double("math.isNaN", x))


@fn("math.isInf", ("double",), "bool", since=1)
def is_inf(x: float) -> bool:
    return math.isinf(_double("math.isInf", x))


@fn("math.isFinite", ("double",), "bool", since=1)
def is_finite(x: float) -> bool:
    return math.isfinite(_double("math.isFinite", x))


# --- sign, abs, sqrt ----------------------------------------------------------------------------------


def abs_(x: Any) -> Any:
    kind = type(x)
    if kind is int:
        if x == v.INT64_MIN:
            raise CelEvaluationError("integer overflow")
        return -x if x < 0 else x
    if kind is float:
        return math.fabs(x)
    if kind is v.UintType:
        return x
    raise no_such_overload("math.abs", x)


def sign(x: Any) -> Any:
    kind = type(x)
    if kind is int:
        return (x > 0) - (x < 0)
    if kind is float:
        if math.isnan(x):
            return x
        return 1.0 if x > 0 else -1.0 if x < 0 else 0.0
    if kind is v.UintType:
        return v.UintType(1 if x else 0)
    raise no_such_overload("math.sign", x)


def sqrt(x: Any) -> float:
    if not _is_number(x):
        raise no_such_overload("math.sqrt", x)
    number = float(x)
    return math.sqrt(number) if number >= 0 else math.nan


for _t in _NUMERIC:
    fn("math.abs", (_t,), _t, since=1)(abs_)
    fn("math.sign", (_t,), _t, since=1)(sign)
    fn("math.sqrt", (_t,), "double", since=2)(sqrt)


# --- bitwise ------------------------------------------------------------------------------------------


def _to_int64(bits: int) -> int:
    bits &= _MASK64
    return bits - (1 << 64) if bits >> 63 else bits


def _bitwise(name: str, op: Any) -> Any:
    def apply(a: Any, b: Any) -> Any:
        if type(a) is int and type(b) is int:
            return op(a, b)
        if type(a) is v.UintType and type(b) is v.UintType:
            return v.UintType(op(int(a), int(b)))
        raise no_such_overload(name, a, b)

    return apply


for _name, _op in (
    ("math.bitAnd", lambda a, b: a & b),
    ("math.bitOr", lambda a, b: a | b),
    ("math.bitXor", lambda a, b: a ^ b),
):
    _apply = _bitwise(_name, _op)
    fn(_name, ("int", "int"), "int", since=1)(_apply)
    fn(_name, ("uint", "uint"), "uint", since=1)(_apply)


def bit_not(x: Any) -> Any:
    if type(x) is int:
        return ~x
    if type(x) is v.UintType:
        return v.UintType(~int(x) & _MASK64)
    raise no_such_overload("math.bitNot", x)


fn("math.bitNot", ("int",), "int", since=1)(bit_not)
fn("math.bitNot", ("uint",), "uint", since=1)(bit_not)


def _shift(name: str, left: bool) -> Any:
    def apply(value: Any, bits: Any) -> Any:
        if type(bits) is not int or (type(value) is not int and type(value) is not v.UintType):
            raise no_such_overload(name, value, bits)
        if bits < 0:
            raise CelEvaluationError(f"{name}() negative offset: {bits}")
        # An int is shifted right as its two's complement bits, zero-filled: cel-go v0.26.0 (what
        # Kubernetes v1.36 vendors) ext/math.go bitShiftRightIntInt is types.Int(types.Uint(v) >> bs).
        unsigned = int(value) & _MASK64
        shifted = 0 if bits >= 64 else ((unsigned << bits) & _MASK64 if left else unsigned >> bits)
        return v.UintType(shifted) if type(value) is v.UintType else _to_int64(shifted)

    return apply


for _name, _left in (("math.bitShiftLeft", True), ("math.bitShiftRight", False)):
    _apply = _shift(_name, _left)
    fn(_name, ("int", "int"), "int", since=1)(_apply)
    fn(_name, ("uint", "int"), "uint", since=1)(_apply)
