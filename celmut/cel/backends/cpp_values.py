"""cel-cpp results and errors as celmut values and typed errors.

Results come back through ``Value.plain_value()`` (plain Python) and are converted by the static
result type the checker computed: uint, bytes, timestamps, durations, type values, typed objects
(``Object``/``JSONPatch`` → :class:`~celmut.cel.values.StructValue`) and optionals (lowered to a list
of zero or one element) become what the cel-python engine returns.

Error values are mapped to the errors and, for the common cases, the messages of the cel-python
engine (cel-go's wording). Messages never carry input data: keys are shortened as
:func:`~celmut.cel.errors.describe` does, and anything cel-cpp appends after ``->`` (a value dump)
is cut.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from cel_expr_python import cel

from celmut.cel import types as t
from celmut.cel import values as v
from celmut.cel.backends.cpp_bridge import ERROR_TOKEN, BridgeState, Unrepresentable, from_cpp
from celmut.cel.errors import CelCostError, CelError, CelEvaluationError, describe

ITERATION_LIMIT = 10_000
ITERATION_MESSAGE = (
    f"operation cancelled: cost limit exceeded: more than {ITERATION_LIMIT:,} comprehension iterations "
    "(the C++ engine's fixed iteration limit per evaluation)"
)

_CPP_TYPE_NAMES = {
    "int64": "int",
    "uint64": "uint",
    "timestamp": "google.protobuf.Timestamp",
    "duration": "google.protobuf.Duration",
    "*opaque*": "optional_type",
}


class NeedsRerun(Exception):
    """The result cannot be represented exactly: evaluate again on cel-python."""


def deep(value: Any) -> Any:
    """A plain value from cel-cpp as a celmut value (see :func:`~.cpp_bridge.from_cpp`)."""
    try:
        return from_cpp(value)
    except Unrepresentable as ex:
        raise NeedsRerun(str(ex)) from None


Converter = Callable[[Any, Any], Any]  # (plain value, cel.Value) -> celmut value


def _same(value: Any, _: Any) -> Any:
    return value


def _deep(value: Any, _: Any) -> Any:
    return deep(value)


def _dynamic(value: Any, result: Any) -> Any:
    if type(value) is int and result.type() == cel.Type.UINT:
        return v.UintType(value)
    return deep(value)


def converter(result_type: t.CelType, optional: bool = False) -> Converter:
    """How to turn the plain result of an expression of this static type into a celmut value."""
    if optional:
        element = result_type.element
        inner = _deep if element.kind in ("dyn", "param") else converter(element)

        def unwrap(value: Any, result: Any) -> Any:
            return v.OptionalValue(inner(value[0], None)) if value else v.NONE

        return unwrap
    kind = result_type.kind
    if kind in ("bool", "int", "double", "string", "null_type"):
        return _same
    if kind == "uint":
        return lambda value, _: v.UintType(value)
    if kind == "struct":
        name = result_type.name
        return lambda value, _: v.StructValue(name, deep(value))
    if kind == "list" and result_type.element.kind == "struct":
        name = result_type.element.name
        return lambda value, _: [
            v.StructValue(name, deep(item)) if type(item) is dict else deep(item) for item in value
        ]
    if kind == "list" and result_type.element.kind == "uint":
        return lambda value, _: [v.UintType(item) for item in value]
    if kind in ("dyn", "param"):
        return _dynamic
    return _deep


# --- errors -------------------------------------------------------------------------------------------

_STATUS = re.compile(r"^[A-Z_]+: ")
# A Python function's error as the bridge hands it to cel-cpp: the whole message (after the status) is the
# token and an index into BridgeState.errors. Matched whole: the token may also occur inside user data.
_BRIDGE_ERROR = re.compile(re.escape(ERROR_TOKEN) + r"(\d+)")
_KEY = re.compile(r"Key not found in map : (.*)\Z", re.S)
_OVERLOAD = re.compile(
    r"No matching overloads found : (?:\((?P<recv>[^)]*)\)\.)?(?P<name>[^\s(]+)(?:\((?P<args>.*)\))?\Z"
)
_MISSING = re.compile(r'No value with name "([^"]+)" found in Activation')
_INDEX_TYPE = re.compile(r"Index error: expected integer type, got (\w+)\Z")
_CONVERSIONS = {
    "double out of int64 range": "int overflow: value out of range",
    "uint64 out of int64 range": "integer overflow",
    "int64 out of uint64 range": "uint overflow: value out of range",
    "double out of uint64 range": "uint overflow: value out of range",
    "duplicate key in map": "Failed with repeated key (duplicate key in map)",
    # cel-go common/types/bytes.go ConvertToType(StringType); cel-spec conversions "bytes_invalid"
    "malformed UTF-8 bytes": "invalid UTF-8 in bytes, cannot convert to string",
}
_INDEX = re.compile(r"Index error: index=(-?\d+) size=\d+")
_TIMESTAMP_BOUND = re.compile(r'Timestamp "[^"]*" (?:below minimum|above maximum) allowed timestamp')


def _type_name(name: str) -> str:
    name = name.strip()
    return _CPP_TYPE_NAMES.get(name, name)


def _function_name(name: str) -> str:
    for prefix in ("celmut.fn.", "celmut.method."):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _key_text(raw: str) -> str:
    if raw.startswith('"') and raw.endswith('"') and len(raw) >= 2:
        key = raw[1:-1]
        return key if len(key) <= 40 else describe(key)
    return raw if len(raw) <= 40 else raw[:40] + "…"


def error_from_cpp(message: str, state: BridgeState | None, missing: Mapping[str, CelError] | None = None) -> CelError:
    """The celmut error for a cel-cpp error value (``missing``: errors of hoisted paths that failed)."""
    text = _STATUS.sub("", message, count=1).split(" -> ", 1)[0]
    if state is not None and ERROR_TOKEN in text:
        bridged = _BRIDGE_ERROR.fullmatch(text)
        if bridged is not None and int(bridged.group(1)) < len(state.errors):
            return state.errors[int(bridged.group(1))]
    if missing:
        match = _MISSING.search(message)
        if match and match.group(1) in missing:
            return missing[match.group(1)]
    match = _KEY.match(text)
    if match:
        return CelEvaluationError(f"no such key: {_key_text(match.group(1))}")
    match = _OVERLOAD.match(text)
    if match and match.group("name") == "<iter_range>":
        return CelEvaluationError("expression cannot be the range of a comprehension")
    if match:
        args = [_type_name(a) for a in (match.group("args") or "").split(",") if a.strip()]
        if match.group("recv") is not None:
            args.insert(0, _type_name(match.group("recv")))
        name = _function_name(match.group("name"))
        if name in ("_?._", "_[?_]"):  # x.?f, x[?k] on a value that is no container: cel-go answers
            # optional.none() (interpreter/attributes.go refQualify with its presence test on)
            raise NeedsRerun("an optional selection on a value that is no container")
        if name != match.group("name") and args:
            args.pop()  # the bridge's candidate-set index
        return CelEvaluationError(f"no such overload: {name}({', '.join(args)})")
    match = _INDEX.search(text)
    if match:
        return CelEvaluationError(f"index out of bounds: {match.group(1)}")
    match = _INDEX_TYPE.match(text)
    if match:
        return CelEvaluationError(f"no such overload: _[_](list, {_type_name(match.group(1))})")
    conversion = _CONVERSIONS.get(text)
    if conversion is not None:
        return CelEvaluationError(conversion)
    if text == "divide by zero":
        return CelEvaluationError("division by zero")
    if text == "timestamp overflow" or _TIMESTAMP_BOUND.match(text):
        # cel-spec timestamps.textproto timestamp_range: "range" (cel-python's own message)
        return CelEvaluationError("timestamp out of range")
    if text == "Applying SELECT to non-message type":
        return CelEvaluationError("no such key")  # cel-go refQualify's missingKey; cel-cpp names no field
    if text.startswith("Invalid container type"):
        return CelEvaluationError(f"no such overload: _[_] ({text})")
    if len(text) > 300:
        text = text[:300] + "…"
    return CelEvaluationError(text)


def runtime_error(ex: RuntimeError) -> CelError:
    """An exception raised by ``Expression.eval`` (rather than an error value)."""
    text = str(ex)
    if "Iteration budget exceeded" in text:
        return CelCostError(ITERATION_MESSAGE)
    if "Non-CEL value type" in text or "Unexpected value type" in text:
        raise NeedsRerun("a value cel-cpp cannot hold")
    return error_from_cpp(text.split(" [", 1)[0], None)
