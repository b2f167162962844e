"""A merged ApplyConfiguration converted to the Go type of a built-in kind, as kube-apiserver does.

After the merge, the MutatingAdmissionPolicy dispatcher turns the unstructured result back into the
kind's Go struct (``staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/mutating/dispatcher.go``,
``dispatchOne``: ``ConvertToVersion``, i.e. ``runtime.Scheme.unstructuredToTyped`` and apimachinery
``pkg/runtime/converter.go`` ``DefaultUnstructuredConverter.FromUnstructured``). Its error is a plain
error, so the policy's failurePolicy decides; it reads
``unable to convert unstructured object to apps/v1, Kind=Deployment: cannot convert float64 to int32``.
What a field is in Go comes from :attr:`TypedNode.go <celmut.runtime.typed.TypedNode.go>` (the OpenAPI
``format``). Per scalar (``fromUnstructured``):

* an integer into ``int32``/``int64`` is converted as Go converts it: a value out of an ``int32``'s
  range wraps around (``4294967299`` becomes ``3``);
* a float into an integer field converts when it is integral (``3.0`` → ``3``; a float beyond
  ``int64`` becomes its minimum first, as ``reflect`` converts through ``int64``), else
  ``cannot convert float64 to int32``;
* an integer into a ``float64`` field becomes a float;
* a ``[]byte`` field (``format: byte``, e.g. ConfigMap ``binaryData``) is base64 decoded
  (``error decoding from json: illegal base64 data at input byte 4``) and encoded again, padded;
* ``IntOrString`` (handed the whole value: a map too) and ``Quantity`` go through their
  ``UnmarshalJSON``: ``json: cannot unmarshal number 1.5 into Go value of type int32``,
  ``quantities must match the regular expression …``; a quantity is then written in its canonical
  form (``1.5`` → ``1500m``).

The scalar conversions are :mod:`celmut.runtime.go_scalars`, which the strict decoding after a
JSONPatch shares.

Go converts struct fields in declaration order and stops at the first error, so of two wrong
fields the one declared first is reported: the bundled schemas list fields alphabetically, and
:data:`~celmut.runtime.go_field_order.GO_FIELD_ORDER` keeps the declaration order where it differs
(a map's entries are converted in Go's random order; celmut takes the object's). ``metav1.Time``
fields are kept as written.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from celmut.runtime import go_scalars
from celmut.runtime.go_field_order import GO_FIELD_ORDER
from celmut.runtime.typed import (
    GO_BYTES,
    GO_FLOAT64,
    GO_INT32,
    GO_INT64,
    GO_INT_OR_STRING,
    GO_QUANTITY,
    TypedNode,
)

_ABSENT: Any = object()
_BITS = {GO_INT32: 32, GO_INT64: 64}


class ConversionError(Exception):
    """``FromUnstructured`` failed; the message is Go's."""


def convert(value: Any, node: TypedNode, previous: Any = None) -> Any:
    """``value`` as it comes out of the Go type: converted scalars, unchanged subtrees shared (and
    those shared with ``previous``, already converted, not walked). Raises :class:`ConversionError`."""
    if value is previous:
        return value
    cls = type(value)
    if cls is dict:
        if not node.has_map:
            return value
        if node.go:  # IntOrString: its UnmarshalJSON is handed the whole map (and refuses it)
            return convert_scalar(value, node.go)
        old = previous if type(previous) is dict else None
        try:
            return _fields(value, node, old, value.items())
        except ConversionError:
            if node.schema is None or not node.closed:
                raise  # a map: Go's random order (the object's here)
            _fields(value, node, old, _in_go_order(value, node.schema.definition))  # the error Go meets first
            raise
    if cls is list:
        if not node.has_list:
            return value
        if node.go:
            return convert_scalar(value, node.go)
        item_node = node.item
        old_items = previous if type(previous) is list else []
        items = [
            convert(item, item_node, old_items[index] if index < len(old_items) else _ABSENT)
            for index, item in enumerate(value)
        ]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return convert_scalar(value, node.go) if node.go else value


def _fields(
    value: dict[str, Any], node: TypedNode, old: dict[str, Any] | None, items: Iterable[tuple[str, Any]]
) -> Any:
    """``value``'s fields converted, taken in the order of ``items``."""
    out: dict[str, Any] | None = None
    for key, item in items:
        before = old.get(key, _ABSENT) if old is not None else _ABSENT
        if item is before or item is None:
            continue
        child = node.field(key)
        if child is None:
            continue
        new = convert(item, child, before)
        if new is not item:
            if out is None:
                out = dict(value)
            out[key] = new
    return value if out is None else out


def _in_go_order(struct: dict[str, Any], definition: str) -> list[tuple[str, Any]]:
    """A struct's fields in the order ``structFromUnstructured`` converts them (its declaration order,
    which decides which of two bad fields is reported)."""
    order = GO_FIELD_ORDER.get(definition, ())
    rank = {name: index for index, name in enumerate(order)}
    return sorted(struct.items(), key=lambda item: (rank.get(item[0], len(order)), item[0]))


def convert_scalar(value: Any, go: str) -> Any:
    """One scalar into the Go type ``go`` and back to JSON (``fromUnstructured``'s simple types and
    the types with their own ``UnmarshalJSON``)."""
    cls = type(value)
    bits = _BITS.get(go)
    if bits is not None:
        if cls is int:
            return _wrap(value, bits)
        if cls is float:
            if value != math.trunc(value):
                raise ConversionError(f"cannot convert float64 to {go}")
            as_int64 = int(value) if -(2.0**63) <= value < 2.0**63 else -(1 << 63)  # cvtFloatInt via int64
            return _wrap(as_int64, bits)
        return value
    if go == GO_FLOAT64:
        return float(value) if cls is int else value
    try:
        if go == GO_BYTES:
            return go_scalars.base64_bytes(value) if cls is str else value
        if go == GO_INT_OR_STRING:
            return go_scalars.int_or_string(value)
        if go == GO_QUANTITY:
            return go_scalars.quantity(value)
    except go_scalars.CorruptBase64 as ex:
        raise ConversionError(f"error decoding from json: {ex}") from None  # sliceFromUnstructured
    except go_scalars.ScalarError as ex:
        raise ConversionError(str(ex)) from None
    return value


def _wrap(value: int, bits: int) -> int:
    """Go's integer conversion: the low ``bits`` bits, two's complement."""
    half = 1 << (bits - 1)
    return ((value + half) % (1 << bits)) - half
