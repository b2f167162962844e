"""Kyverno's JSON library (kyverno/sdk ``extensions/cel/libs/json``).

``json`` is a Kyverno global; its two members parse and print JSON the way Go's ``encoding/json``
does, which is what Kyverno runs:

json.unmarshal(<dyn>) -> <dyn>

    Parses a JSON text. The argument must be a string at run time (Kyverno converts it to a Go
    string, so bytes are refused). As in Go's ``json.Unmarshal`` into ``any``, every number
    becomes a double.

        json.unmarshal('{"a": [1, true]}') == {'a': [1.0, true]}

json.marshal(<dyn>) -> <string>

    Prints a value as compact JSON with map keys sorted, HTML characters escaped (``<`` becomes
    ``\\u003c``), bytes as base64, timestamps as RFC 3339 strings and durations as nanoseconds.

        json.marshal({'b': 1, 'a': 2}) == '{"a":2,"b":1}'
        json.marshal('<x>') == '"\\u003cx\\u003e"'

:func:`go_json` and :func:`to_cel_value` are shared with the other Kyverno libraries (HTTP bodies,
provider results); :func:`shared_cel_value` with the lookups that keep their objects in that form.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
from collections.abc import Mapping
from typing import Any

from celmut.cel import costs
from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError

LIBRARY: Library = Library("kyverno.json")
fn = LIBRARY.function

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _go_string(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch in _HTML_ESCAPES:
            out.append(_HTML_ESCAPES[ch])
        elif code < 0x20:
            out.append(f"\\u{code:04x}")
        elif 0xD800 <= code <= 0xDFFF:  # a lone surrogate is invalid UTF-8 in Go: U+FFFD
            out.append("\ufffd")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_float(value: float) -> str:
    """Go's ``encoding/json`` float64 text: shortest digits, exponent form below 1e-6 or from 1e21."""
    if math.isnan(value) or math.isinf(value):
        raise CelEvaluationError(f"json: unsupported value: {v.format_double(value)}")
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digit_tuple, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    prefix = "-" if sign else ""
    magnitude = abs(value)
    if magnitude < 1e-6 or magnitude >= 1e21:
        exp = len(digits) + int(exponent) - 1
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        exp_text = f"{abs(exp):02d}"
        if exp < 0 and exp_text[0] == "0":
            exp_text = exp_text[1:]  # Go's encoder cleans e-07 up to e-7
        return f"{prefix}{mantissa}e{'-' if exp < 0 else '+'}{exp_text}"
    point = len(digits) + int(exponent)
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return prefix + digits + "0" * (point - len(digits))
    return f"{prefix}{digits[:point]}.{digits[point:]}"


def go_json(value: Any) -> str:
    """``json.Marshal`` of a CEL value as Kyverno converts it: compact, sorted keys, HTML-escaped."""
    parts: list[str] = []
    _encode(value, parts, 0)
    return "".join(parts)


def _encode(value: Any, out: list[str], depth: int) -> None:
    if depth > 1000:
        raise CelEvaluationError("json: value is nested too deeply")
    if value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, int) and not isinstance(value, bool):
        out.append(str(int(value)))
    elif isinstance(value, float):
        out.append(go_float(value))
    elif isinstance(value, str):
        out.append(_go_string(value))
    elif isinstance(value, bytes):
        out.append('"' + base64.b64encode(value).decode("ascii") + '"')
    elif isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise CelEvaluationError(f"json: unsupported map key type {v.type_name(key)}")
        out.append("{")
        for index, key in enumerate(sorted(value)):
            if index:
                out.append(",")
            out.append(_go_string(key))
            out.append(":")
            _encode(value[key], out, depth + 1)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out, depth + 1)
        out.append("]")
    elif type(value) is v.Timestamp:
        out.append('"' + v.format_timestamp(value) + '"')
    elif type(value) is v.Duration:  # Go's time.Duration is an int64 of nanoseconds
        out.append(str(value.ns))
    elif isinstance(value, v.OptionalValue) and value.present:
        _encode(value.value, out, depth + 1)
    elif hasattr(value, "to_plain"):
        _encode(value.to_plain(), out, depth + 1)
    else:
        raise CelEvaluationError(f"json: unsupported type: {v.type_name(value)}")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


_DECODER = json.JSONDecoder(parse_int=float, parse_constant=_refuse_constant)


def go_unmarshal(text: str) -> Any:
    """``json.Unmarshal`` into ``any``: numbers become doubles; trailing data is an error."""
    stripped = text.strip(" \t\r\n")
    if not stripped:
        raise CelEvaluationError("unexpected end of JSON input")
    try:
        value, end = _DECODER.raw_decode(stripped)
    except (ValueError, RecursionError) as ex:
        raise CelEvaluationError(f"invalid JSON: {ex}") from None
    if end != len(stripped):
        raise CelEvaluationError(f"invalid character {stripped[end]!r} after top-level value")
    return value


def go_decode_first(data: bytes) -> Any:
    """``json.NewDecoder(body).Decode(&v)``: the first JSON value of ``data`` (trailing data ignored);
    None when there is none or it does not parse, as Kyverno's HTTP library treats bodies."""
    text = data.decode("utf-8", errors="replace").lstrip(" \t\r\n")
    try:
        value, _ = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):
        return None
    return value


def to_cel_value(value: Any) -> Any:
    """Provider results (Kubernetes objects, global context entries, image metadata) as CEL values:
    mappings become dicts with string keys, sequences lists; scalars are kept."""
    if value is None or isinstance(value, str | bool | int | float | bytes):
        return value
    if isinstance(value, Mapping):
        return {str(k) if not isinstance(k, str) else k: to_cel_value(item) for k, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_cel_value(item) for item in value]
    if isinstance(value, datetime.datetime):
        return v.Timestamp.from_datetime(value)
    return value


_SCALARS = frozenset({str, int, float, bool, bytes, type(None)})


def is_cel_value(value: Any) -> bool:
    """Whether ``value`` already is what :func:`to_cel_value` makes of it: dicts with string keys,
    lists and JSON scalars (and bytes) only, so that :func:`to_cel_value` would answer an equal copy."""
    kind = type(value)
    if kind is dict:
        return all(type(key) is str and is_cel_value(item) for key, item in value.items())
    if kind is list:
        return all(is_cel_value(item) for item in value)
    return kind in _SCALARS


def shared_cel_value(value: Any) -> Any:
    """:func:`to_cel_value` of a value nobody changes any more (an object a lookup stores and replaces,
    never edits): ``value`` itself when it already is a CEL value, which CEL only reads."""
    return value if is_cel_value(value) else to_cel_value(value)


def encoding_cost(value: Any) -> int:
    """What printing ``value`` as JSON walks (Kubernetes' ``traversalCost``); refuses, before
    printing, a text over :data:`celmut.cel.costs.MAX_STRING_BYTES` (a value sharing its parts is
    measured without unfolding it). Shared with the HTTP library's request bodies."""
    measure = costs.Measure()
    costs.check_string_size(measure.nbytes(value), "JSON encoding")
    return measure.cost(value)


def _parse_cost(text: Any) -> int:
    return costs.string_cost(len(text)) if isinstance(text, str) else 0


@fn("json.unmarshal", ("dyn",), "dyn", cost=_parse_cost)
def unmarshal(text: Any) -> Any:
    if not isinstance(text, str):
        raise CelEvaluationError(f"type conversion error from '{v.type_name(text)}' to 'string'")
    return go_unmarshal(text)


@fn("json.marshal", ("dyn",), "string", cost=encoding_cost)
def marshal(value: Any) -> str:
    return go_json(value)
