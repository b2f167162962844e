"""How Go's ``fmt`` prints the values of an ApplyConfiguration, for the API server's messages.

kube-apiserver hands structured-merge-diff the native Go values of the CEL result
(``staging/src/k8s.io/apiserver/pkg/cel/mutation/dynamic/objects.go``, ``convertField``: each field's
``ref.Val.Value()``): ``int64``, ``float64``, ``string``, ``bool``, ``map[string]interface {}``,
``[]interface {}``, ``[]uint8`` for bytes, ``uint64`` for a CEL ``uint``, and
``structpb.NullValue`` for ``null``. Its messages print them with ``%T``, ``%v`` and ``%#v`` (the
value wrapped in a ``*value.valueUnstructured``). Here, ``None`` in an ApplyConfiguration stands for
CEL's ``null``.
"""

from __future__ import annotations

from typing import Any

from celmut.cel.values import UintType, format_double


def go_type(value: Any) -> str:
    """``%T`` of the Go value."""
    if value is None:
        return "structpb.NullValue"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, UintType):
        return "uint64"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "[]uint8"
    if isinstance(value, dict):
        return "map[string]interface {}"
    return "[]interface {}"


def value_v(value: Any) -> str:
    """``%v`` of the ``*value.valueUnstructured`` holding the value."""
    return "&{" + _v(value) + "}"


def value_sharp_v(value: Any) -> str:
    """``%#v`` of the ``*value.valueUnstructured`` holding the value."""
    return "&value.valueUnstructured{Value:" + _sharp_v(value) + "}"


def _v(value: Any) -> str:
    if value is None:
        return "NULL_VALUE"  # structpb.NullValue's String()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return format_double(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return "[" + " ".join(str(b) for b in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_v(value[k])}" for k in sorted(value)) + "]"
    return "[" + " ".join(_v(item) for item in value) + "]"


def _sharp_v(value: Any) -> str:
    if value is None:
        return "0"  # structpb.NullValue is an int32 enum without GoString
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, UintType):
        return hex(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_double(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bytes):
        return "[]uint8{" + ", ".join(f"0x{b:x}" for b in value) + "}"
    if isinstance(value, dict):
        items = ", ".join(f"{go_quote(k)}:{_sharp_v(value[k])}" for k in sorted(value))
        return "map[string]interface {}{" + items + "}"
    return "[]interface {}{" + ", ".join(_sharp_v(item) for item in value) + "}"


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPES["\v"] = "\\v"


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote`` (``%q``): printable characters as they are, the rest escaped."""
    out = ['"']
    for ch in text:
        escaped = _ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)
