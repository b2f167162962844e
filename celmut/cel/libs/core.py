"""The CEL standard definitions: operators, conversions, ``size``, string predicates, ``type``.

Arithmetic follows cel-go: int and uint are 64-bit with overflow errors, division truncates toward
zero, there is no mixed-type arithmetic (``1 + 1.0`` has no overload), and double division by zero
yields an infinity. Ordering comparisons are declared here for the checker (including the
cross-type numeric ones Kubernetes enables); the planner evaluates them directly.

Each operator has one implementation registered under all of its signatures: it dispatches on the
runtime types itself, so the planner calls it without per-overload guards.
"""

from __future__ import annotations

import math
from typing import Any, cast

from celmut.cel import costs, regex
from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError, describe
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("cel.lib.std")
fn, method = LIBRARY.function, LIBRARY.method

UintType = v.UintType


def concat_cost(a: Any, b: Any) -> int:
    """cel-go runtimecost.go: ``add_string``/``add_bytes`` cost ``ceil((size(a) + size(b)) * 0.1)``;
    ``add_list`` is O(1) there (a view), but celmut copies, so one unit per element. A string over
    :data:`celmut.cel.costs.MAX_STRING_BYTES` is refused before it is built."""
    ta = type(a)
    if ta is str or ta is bytes:
        length = len(a) + len(b) if type(b) is ta else 0
        costs.check_string_size(length, "_+_")
        return costs.string_cost(length)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) + len(b)
    return 0


# --- arithmetic ---------------------------------------------------------------------------------------


def add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return v.check_int(a + b)
    if ta is float and tb is float:
        return a + b
    if ta is str and tb is str:
        return a + b
    if ta is UintType and tb is UintType:
        return v.check_uint(int(a) + int(b))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return [*a, *b]
    if ta is bytes and tb is bytes:
        return a + b
    if ta is v.Timestamp and tb is v.Duration:
        return _timestamp_result(a.ns + b.ns)
    if ta is v.Duration and tb is v.Timestamp:
        return _timestamp_result(b.ns + a.ns)
    if ta is v.Duration and tb is v.Duration:
        return _duration_result(a.ns + b.ns)
    raise no_such_overload("_+_", a, b)


def subtract(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return v.check_int(a - b)
    if ta is float and tb is float:
        return a - b
    if ta is UintType and tb is UintType:
        return v.check_uint(int(a) - int(b))
    if ta is v.Timestamp and tb is v.Timestamp:
        return _duration_result(a.ns - b.ns)
    if ta is v.Timestamp and tb is v.Duration:
        return _timestamp_result(a.ns - b.ns)
    if ta is v.Duration and tb is v.Duration:
        return _duration_result(a.ns - b.ns)
    raise no_such_overload("_-_", a, b)


def multiply(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return v.check_int(a * b)
    if ta is float and tb is float:
        return a * b
    if ta is UintType and tb is UintType:
        return v.check_uint(int(a) * int(b))
    raise no_such_overload("_*_", a, b)


def divide(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        if a == v.INT64_MIN and b == -1:
            raise CelEvaluationError("integer overflow")
        return v.trunc_div(a, b)
    if ta is float and tb is float:
        if b == 0.0:
            if a == 0.0 or math.isnan(a):
                return math.nan
            return math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    if ta is UintType and tb is UintType:
        if b == 0:
            raise CelEvaluationError("division by zero")
        return UintType(int(a) // int(b))
    raise no_such_overload("_/_", a, b)


def modulo(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        if a == v.INT64_MIN and b == -1:
            raise CelEvaluationError("integer overflow")
        return v.trunc_mod(a, b)
    if ta is UintType and tb is UintType:
        if b == 0:
            raise CelEvaluationError("modulus by zero")
        return UintType(int(a) % int(b))
    raise no_such_overload("_%_", a, b)


def negate(a: Any) -> Any:
    if type(a) is int:
        return v.check_int(-a)
    if type(a) is float:
        return -a
    raise no_such_overload("-_", a)


def logical_not(a: Any) -> bool:
    if type(a) is bool:
        return not a
    raise no_such_overload("!_", a)


def _timestamp_result(ns: int) -> v.Timestamp:
    from celmut.cel.libs.timestamps import check_timestamp

    return check_timestamp(ns)


def _duration_result(ns: int) -> v.Duration:
    from celmut.cel.libs.timestamps import check_duration

    return check_duration(ns)


for _op, _impl in (("_+_", add), ("_-_", subtract), ("_*_", multiply), ("_/_", divide)):
    for _t in ("int", "uint", "double"):
        fn(_op, (_t, _t), _t, cost=concat_cost)(_impl)
for _t in ("int", "uint"):
    fn("_%_", (_t, _t), _t)(modulo)
for _sig in (
    (("string", "string"), "string"),
    (("bytes", "bytes"), "bytes"),
    (("list(A)", "list(A)"), "list(A)"),
    (("timestamp", "duration"), "timestamp"),
    (("duration", "timestamp"), "timestamp"),
    (("duration", "duration"), "duration"),
):
    fn("_+_", _sig[0], _sig[1], cost=concat_cost)(add)
for _sig in (
    (("timestamp", "timestamp"), "duration"),
    (("timestamp", "duration"), "timestamp"),
    (("duration", "duration"), "duration"),
):
    fn("_-_", _sig[0], _sig[1], cost=concat_cost)(subtract)
fn("-_", ("int",), "int")(negate)
fn("-_", ("double",), "double")(negate)
fn("!_", ("bool",), "bool")(logical_not)


# --- ordering (declared for the checker; evaluated by the planner) -------------------------------------


def _ordering_impl(name: str) -> Any:
    def ordering(a: Any, b: Any) -> bool:  # pragma: no cover - the planner handles these directly
        return v.compare(a, b, name) in {"_<_": (-1,), "_<=_": (-1, 0), "_>_": (1,), "_>=_": (0, 1)}[name]

    return ordering


_ORDERED = ("int", "uint", "double", "string", "bytes", "bool", "timestamp", "duration")
_CROSS_NUMERIC = (
    ("int", "uint"),
    ("int", "double"),
    ("uint", "int"),
    ("uint", "double"),
    ("double", "int"),
    ("double", "uint"),
)
for _op in ("_<_", "_<=_", "_>_", "_>=_"):
    _impl = _ordering_impl(_op)
    for _t in _ORDERED:
        fn(_op, (_t, _t), "bool")(_impl)
    for _a, _b in _CROSS_NUMERIC:
        fn(_op, (_a, _b), "bool")(_impl)


# --- size and string predicates -------------------------------------------------------------------


def size(value: Any) -> int:
    if isinstance(value, str | bytes | list | tuple | dict):
        return len(value)
    size_fn = getattr(value, "cel_size", None)
    if size_fn is not None:
        return int(size_fn())
    raise no_such_overload("size", value)


for _t in ("string", "bytes", "list(A)", "map(K, V)"):
    fn("size", (_t,), "int")(size)
    method("size", _t, (), "int")(size)


@method("contains", "string", ("string",), "bool")
def contains(text: str, part: str) -> bool:
    return part in text


@method("startsWith", "string", ("string",), "bool")
def starts_with(text: str, prefix: str) -> bool:
    return text.startswith(prefix)


@method("endsWith", "string", ("string",), "bool")
def ends_with(text: str, suffix: str) -> bool:
    return text.endswith(suffix)


@fn("matches", ("string", "string"), "bool")
@method("matches", "string", ("string",), "bool")
def matches(text: str, pattern: str) -> bool:
    return regex.matches(text, pattern)


# --- type, dyn and conversions ----------------------------------------------------------------------


@fn("type", ("A",), "type(A)")
def type_(value: Any) -> v.TypeValue:
    return v.type_value(value)


@fn("dyn", ("A",), "dyn")
def dyn(value: Any) -> Any:  # pragma: no cover - the planner inlines dyn()
    return value


def _conversion_error(value: Any, target: str) -> CelEvaluationError:
    return CelEvaluationError(f"type conversion error from '{v.type_name(value)}' to '{target}'")


def to_int(value: Any) -> int:
    kind = type(value)
    if kind is int:
        return cast(int, value)
    if kind is UintType:
        return v.check_int(int(value))
    if kind is float:
        if math.isnan(value) or not (-(2.0**63) < value < 2.0**63):
            raise CelEvaluationError("int overflow: value out of range")
        return int(value)
    if kind is str:
        try:
            return v.check_int(int(_go_integer_text(value), 10))
        except ValueError:
            raise CelEvaluationError(f"cannot convert string {describe(value)} to int") from None
    if kind is v.Timestamp:
        return cast(v.Timestamp, value).seconds
    raise _conversion_error(value, "int")


def _go_integer_text(text: str) -> str:
    """strconv.ParseInt accepts an optional sign and digits only (no spaces or underscores)."""
    body = text[1:] if text[:1] in "+-" else text
    if not body.isascii() or not body.isdigit():
        raise ValueError(text)
    return text


def to_uint(value: Any) -> UintType:
    kind = type(value)
    if kind is UintType:
        return cast(UintType, value)
    if kind is int:
        if value < 0:
            raise CelEvaluationError("uint overflow: value out of range")
        return UintType(value)
    if kind is float:
        if math.isnan(value) or not (-1.0 < value < 2.0**64):
            raise CelEvaluationError("uint overflow: value out of range")
        return UintType(int(value))
    if kind is str:
        try:
            if value.startswith(("+", "-")):
                raise ValueError(value)
            return v.check_uint(int(_go_integer_text(value), 10))
        except ValueError:
            raise CelEvaluationError(f"cannot convert string {describe(value)} to uint") from None
    raise _conversion_error(value, "uint")


_FLOAT_WORDS = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "infinity": math.inf, "nan": math.nan}


def to_double(value: Any) -> float:
    kind = type(value)
    if kind is float:
        return cast(float, value)
    if kind is int or kind is UintType:
        return float(value)
    if kind is str:
        word = _FLOAT_WORDS.get(value.lower())
        if word is not None:
            return word
        if value.strip() != value or "_" in value:
            raise CelEvaluationError(f"cannot convert string {describe(value)} to double")
        try:
            return float(value)
        except ValueError:
            raise CelEvaluationError(f"cannot convert string {describe(value)} to double") from None
    raise _conversion_error(value, "double")


def to_string(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return cast(str, value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is UintType:
        return str(int(value))
    if kind is float:
        return v.format_double(value)
    if kind is bytes:
        try:
            return cast(bytes, value).decode("utf-8")
        except UnicodeDecodeError:
            raise CelEvaluationError("invalid UTF-8 in bytes, cannot convert to string") from None
    if kind is v.Timestamp:
        return v.format_timestamp(value)
    if kind is v.Duration:
        return v.format_duration(value)
    string_fn = getattr(value, "cel_string", None)
    if string_fn is not None:
        return str(string_fn())
    raise _conversion_error(value, "string")


def to_bytes(value: Any) -> bytes:
    if type(value) is bytes:
        return value
    if type(value) is str:
        return value.encode("utf-8")
    raise _conversion_error(value, "bytes")


_BOOL_WORDS = {
    "1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
    "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False,
}  # fmt: skip


def to_bool(value: Any) -> bool:
    if type(value) is bool:
        return value
    if type(value) is str:
        if value in _BOOL_WORDS:
            return _BOOL_WORDS[value]
        raise CelEvaluationError(f"cannot convert string {describe(value)} to bool")
    raise _conversion_error(value, "bool")


for _t in ("int", "uint", "double", "string", "timestamp"):
    fn("int", (_t,), "int")(to_int)
for _t in ("int", "uint", "double", "string"):
    fn("uint", (_t,), "uint")(to_uint)
    fn("double", (_t,), "double")(to_double)
for _t in ("string", "bool", "int", "uint", "double", "bytes", "timestamp", "duration"):
    fn("string", (_t,), "string")(to_string)
for _t in ("bytes", "string"):
    fn("bytes", (_t,), "bytes")(to_bytes)
for _t in ("bool", "string"):
    fn("bool", (_t,), "bool")(to_bool)
