"""The Go values kube-apiserver hands structured-merge-diff for an ApplyConfiguration, and how Go's
``fmt`` prints them in its messages.

The API server takes the CEL result's Go values, not its JSON (``staging/src/k8s.io/apiserver/pkg/cel/
mutation/dynamic/objects.go``, ``ObjectVal.ConvertToNative``/``convertField``; Kyverno's
MutatingPolicy calls the same): an ``Object{…}`` is a ``map[string]any``; a list or map the
expression built is, as a field, ``[]any``/``map[string]any`` of its items' ``ref.Val.Value()``, and
one level further a ``[]ref.Val`` (:class:`RefValList`) or ``map[ref.Val]ref.Val``
(:class:`RefValMap`), which structured-merge-diff takes for neither a list nor a map (nor the Go
``[]string`` of ``split``, :class:`GoStrings`). A value read from
the input is a plain Go value all the way down, its ``null`` a Go nil (``None`` here); CEL's own
``null`` is ``structpb.NullValue`` (:data:`CEL_NULL`), which is not a nil; ``int``, ``float64``,
``string``, ``bool``, ``[]uint8`` for bytes and ``uint64`` for a CEL ``uint`` complete the set. Which
lists and maps a result built comes from the expression (:mod:`celmut.compile.result_shapes`).

Messages print those values with ``%T``, ``%v`` and ``%#v`` (the value wrapped in a
``*value.valueUnstructured``).
"""

from __future__ import annotations

from typing import Any

from celmut.cel import values
from celmut.cel.values import StructValue, UintType, format_double
from celmut.compile.result_shapes import CONCAT, LIST, MAP, STRINGS, Built, Shape, Struct
from celmut.runtime.go_containers import GoStrings, RefValList, RefValMap


class _NullValue:
    """``structpb.NullValue``: CEL's ``null`` as ``ref.Val.Value()`` gives it (not a Go nil)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "CEL_NULL"


CEL_NULL: Any = _NullValue()
_SCALARS = frozenset((str, int, float, bool))


def from_cel(result: dict[str, Any], shape: Shape) -> dict[str, Any]:
    """``ObjectVal.Value()`` of an ApplyConfiguration result of ``shape``."""
    return _object(result, shape if isinstance(shape, Struct) else None)


def _object(value: dict[Any, Any], shape: Struct | None) -> dict[str, Any]:
    fields = shape.by_name if shape is not None else _NO_FIELDS
    out: dict[str, Any] = {}
    for key, item in value.items():
        cls = type(item)
        out[key if type(key) is str else _key(key)] = item if cls in _SCALARS else _field(item, fields.get(key))
    return out


_NO_FIELDS: dict[str, Shape] = {}


def _field(value: Any, shape: Shape) -> Any:
    """``convertField``: a built list or map gives ``[]any``/``map[string]any`` of its items' ``Value()``."""
    if type(shape) is Built and shape.kind in (LIST, MAP):
        if isinstance(value, list | tuple):
            size = len(value)
            return [_value(item, shape.item(index, size)) for index, item in enumerate(value)]
        if isinstance(value, dict) and not isinstance(value, StructValue):
            return {_key(k): _value(item, shape.entry(k)) for k, item in value.items()}
    return _value(value, shape)


def _value(value: Any, shape: Shape) -> Any:
    """``ref.Val.Value()``."""
    cls = type(value)
    if cls in _SCALARS:
        return value
    if value is None:
        return CEL_NULL
    if type(shape) is Struct or cls is StructValue:
        return _object(value, shape if type(shape) is Struct else None)
    if type(shape) is Built:
        if isinstance(value, list | tuple):
            size = len(value)
            if shape.kind == CONCAT:  # concatList.Value(): []any of its items' Value()
                return [_value(item, shape.item(index, size)) for index, item in enumerate(value)]
            if shape.kind == LIST:
                return RefValList(_ref(item) for item in value)
            if shape.kind == STRINGS:
                return GoStrings(value)
        if shape.kind == MAP and isinstance(value, dict):
            return RefValMap({k: _ref(item) for k, item in value.items()})
    return _plain(value)


def _ref(value: Any) -> Any:
    """An item of a ``[]ref.Val`` or ``map[ref.Val]ref.Val``: kept as CEL has it (only printed)."""
    if isinstance(value, list | tuple):
        return RefValList(_ref(item) for item in value)
    if isinstance(value, dict):
        return RefValMap({k: _ref(item) for k, item in value.items()})
    return CEL_NULL if value is None else value


def _plain(value: Any) -> Any:
    """A plain Go value (from the input, a lookup, or where the expression does not tell): ``null``
    inside it is a Go nil."""
    cls = type(value)
    if cls in _SCALARS or value is None or cls is bytes or cls is UintType:
        return value
    if isinstance(value, dict):
        return {_key(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return values.to_plain(value)


def _key(key: Any) -> str:
    """A CEL map key as JSON writes it (``true``, ``1``)."""
    if type(key) is str:
        return key
    plain: dict[str, Any] = values.to_plain({key: None})
    return next(iter(plain))


def to_json(value: Any) -> Any:
    """The JSON of a Go value (where no schema types it: the merge without a schema)."""
    if value is CEL_NULL:
        return None
    if isinstance(value, dict):
        return {_key(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_json(v) for v in value]
    return values.to_plain(value)


# --- how fmt prints them ------------------------------------------------------------------------------


def go_type(value: Any) -> str:
    """``%T`` of the Go value."""
    if value is CEL_NULL:
        return "structpb.NullValue"
    if value is None:
        return "<nil>"
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
    if isinstance(value, RefValMap):
        return "map[ref.Val]ref.Val"
    if isinstance(value, RefValList):
        return "[]ref.Val"
    if isinstance(value, GoStrings):
        return "[]string"
    if isinstance(value, dict):
        return "map[string]interface {}"
    return "[]interface {}"


def value_v(value: Any) -> str:
    """``%v`` of the ``*value.valueUnstructured`` holding the value."""
    return "&{" + _v(value) + "}"


def value_sharp_v(value: Any) -> str:
    """``%#v`` of the ``*value.valueUnstructured`` holding the value."""
    return "&value.valueUnstructured{Value:" + _sharp_v(value) + "}"


def _v(value: Any, in_ref: bool = False) -> str:
    """``%v``; ``in_ref``: an item of a ``[]ref.Val``/``map[ref.Val]ref.Val``, a CEL value printed
    by its own ``String()`` when it is a list or map (cel-go ``baseList``/``baseMap``), its null
    ``types.Null`` (an int32)."""
    if value is CEL_NULL:
        return "0" if in_ref else "NULL_VALUE"  # structpb.NullValue's String()
    if value is None:
        return "<nil>"
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
    if in_ref and isinstance(value, dict):
        return "{" + ", ".join(f"{_v(k, True)}: {_v(v, True)}" for k, v in value.items()) + "}"
    if in_ref and isinstance(value, list):
        return "[" + ", ".join(_v(item, True) for item in value) + "]"
    inner = isinstance(value, RefValList | RefValMap)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_v(value[k], inner)}" for k in sorted(value)) + "]"
    return "[" + " ".join(_v(item, inner) for item in value) + "]"


def _sharp_v(value: Any, in_ref: bool = False) -> str:
    if value is CEL_NULL:
        return "0"  # structpb.NullValue (and cel-go's types.Null) are int32 enums without GoString
    if value is None:
        return "interface {}(nil)"
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
        return ("types.Bytes" if in_ref else "[]uint8") + "{" + ", ".join(f"0x{b:x}" for b in value) + "}"
    if in_ref and isinstance(value, RefValList | RefValMap):
        return "(*types.base" + ("Map" if isinstance(value, dict) else "List") + ")(0xc000000000)"  # a pointer
    if isinstance(value, RefValMap):
        items = ", ".join(f"{go_quote(str(k))}:{_sharp_v(value[k], True)}" for k in sorted(value))
        return "map[ref.Val]ref.Val{" + items + "}"
    if isinstance(value, RefValList):
        return "[]ref.Val{" + ", ".join(_sharp_v(item, True) for item in value) + "}"
    if isinstance(value, GoStrings):
        return "[]string{" + ", ".join(go_quote(item) for item in value) + "}"
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
