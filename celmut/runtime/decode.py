"""How kube-apiserver sees a built-in object around a MutatingAdmissionPolicy mutation.

The API server holds a built-in object as its Go struct. Before a JSONPatch it encodes it with
``encoding/json``; after the patch it decodes the result, strictly, into a fresh struct, and the next
mutation (or the storage) sees that struct encoded again (``staging/src/k8s.io/apiserver/pkg/admission/
plugin/policy/mutating/patch/json_patch.go``, ``jsonPatcher.Patch``). Custom resources stay
``unstructured.Unstructured`` and are never changed: every function here is the identity for them
(their schema is ``None``, see :meth:`~celmut.runtime.schemas.SchemaRegistry.typed_schema`).

:func:`as_encoded` is that round trip, driven by the kind's schema:

* a struct field (``properties``) is always kept, ``{}`` when empty: ``encoding/json`` never omits a
  struct (``status: {}``, ``resources: {}``, ``securityContext: {}``);
* a map or list field drops when empty unless the Go field lacks ``omitempty``. The OpenAPI schema
  does not carry ``omitempty``, but kube-openapi lists in ``required`` exactly the fields with
  neither ``omitempty`` nor ``+optional`` (kubernetes/kube-openapi ``pkg/generators/openapi.go``,
  ``hasOptionalTag``): those are kept (``containers: []``), every other one is treated as
  ``omitempty``. A field marked ``+optional`` without ``omitempty`` is the rare case this rule gets
  wrong;
* ``null`` in a map (``annotations: {b: null}``) decodes to the value type's zero value (``""`` in a
  ``map[string]string``); a ``null`` field a patch wrote removes an optional field (a nil pointer,
  map or slice) and zeroes a required one; ``metav1.Time`` keeps ``null`` (its ``MarshalJSON`` writes
  the zero time as null, e.g. ``creationTimestamp: null``). A ``null`` field already present in the
  input is kept: Go writes null only for fields without ``omitempty``;
* a scalar a mutation wrote is written back as its Go type writes it (a quantity canonical, a
  ``[]byte``'s base64 padded, an integral float in an integer field an integer:
  :mod:`celmut.runtime.go_scalars`, shared with the ApplyConfiguration path); scalars of the input
  are kept as they are (the API server's own encoding already is). Whether a zero scalar (``0``,
  ``false``, ``""``) is an omitted non-pointer or a kept pointer is not in the schema, and the API
  server's own encoding of its input never contains a zero it would omit.

Given the object the patch started from (``previous``), only what the patch changed is walked: an
object the API server encoded is already its own round trip, so a no-op mutation yields the same
object and an empty admission patch.

:func:`decode_error` is the error the strict decoder (``sigs.k8s.io/json`` ``UnmarshalStrict``)
returns for a patched object that does not fit the Go type: a value of the wrong JSON type is Go's
``UnmarshalTypeError`` (``json: cannot unmarshal string into Go struct field Container.spec.
containers.env of type v1.EnvVar``), an unknown field a strict decoding error. The API server wraps
it in ``NewInternalError``, a status error that rejects the request whatever the failurePolicy.
"""

from __future__ import annotations

from typing import Any

from celmut.runtime import go_scalars, typed
from celmut.runtime.schemas import Schema
from celmut.runtime.typed import node_of

_OMIT: Any = object()
_ABSENT: Any = object()
_EMPTY: dict[str, Any] = {}
_ZERO_DEPTH = 8  # zero values of nested required structs: deep enough for every built-in kind


def as_encoded(value: Any, schema: Schema | None, previous: Any = None) -> Any:
    """``value`` as the API server re-encodes it from its Go type (see the module docstring).

    ``previous`` is the already encoded object a patch started from: subtrees shared with it are not
    walked again. Without it, the whole input is encoded and its ``null`` fields are kept. Returns
    ``value`` itself when nothing changes, and shares every unchanged subtree.
    """
    if schema is None or not isinstance(value, dict):
        return value
    return _struct(value, schema, previous if type(previous) is dict else None, previous is None)


class EncodedObjects:
    """The objects of one admission request already in the API server's encoding: a mutation's
    result is, so the next mutation of the request starts from it without walking it again."""

    def __init__(self) -> None:
        self._objects: dict[int, Any] = {}  # id → object (held, so an id is never reused meanwhile)

    def encode(self, value: Any, schema: Schema | None) -> Any:
        """:func:`as_encoded` of ``value``, skipped for an object this request already encoded."""
        if schema is None or self._objects.get(id(value)) is value:
            return value
        return self.remember(as_encoded(value, schema))

    def remember(self, value: Any) -> Any:
        self._objects[id(value)] = value
        return value


def _struct(value: dict[str, Any], schema: Schema, previous: dict[str, Any] | None, from_input: bool) -> Any:
    if value is previous:
        return value
    out: dict[str, Any] | None = None
    required = schema.required
    for key, item in value.items():
        before = previous.get(key, _ABSENT) if previous is not None else _ABSENT
        if item is before:
            continue
        child = schema.field(key)
        if child is None:
            continue  # an unknown field: decode_error reports it
        new = _field(item, child, key in required, before, from_input)
        if new is item:
            continue
        if out is None:
            out = dict(value)
        if new is _OMIT:
            del out[key]
        else:
            out[key] = new
    return value if out is None else out


def _field(item: Any, schema: Schema, required: bool, before: Any, from_input: bool) -> Any:
    if item is not None and type(item) is not dict and type(item) is not list:
        return item if from_input else _scalar(item, schema)
    kind = schema.go_kind
    if kind == "opaque":
        return item
    if item is None:
        if from_input or kind == "time":
            return None
        return _zero(schema, _ZERO_DEPTH) if required else _OMIT
    if kind in ("custom", "scalar"):
        return item
    if kind == "struct":
        return (
            _struct(item, schema, before if type(before) is dict else None, from_input) if type(item) is dict else item
        )
    if kind in ("map", "slice"):
        encoded = _element(item, schema, before, from_input)
        if not encoded and not required and isinstance(encoded, dict | list):
            return _OMIT
        return encoded
    return item


def _element(item: Any, schema: Schema, before: Any, from_input: bool = False) -> Any:
    """A map value, list item or the map/list itself: never omitted, nulls become zero values."""
    if item is before:
        return item
    if item is not None and type(item) is not dict and type(item) is not list:
        return item if from_input else _scalar(item, schema)
    if item is None:
        return _zero(schema, _ZERO_DEPTH)
    kind = schema.go_kind
    if kind == "struct":
        return (
            _struct(item, schema, before if type(before) is dict else None, from_input) if type(item) is dict else item
        )
    if kind == "map" and type(item) is dict and schema.values is not None:
        values = schema.values
        old = before if type(before) is dict else {}
        out: dict[str, Any] | None = None
        for key, entry in item.items():
            new = _element(entry, values, old.get(key, _ABSENT), from_input)
            if new is not entry:
                if out is None:
                    out = dict(item)
                out[key] = new
        return item if out is None else out
    if kind == "slice" and type(item) is list and schema.items is not None:
        items = schema.items
        old_items = before if type(before) is list else []
        encoded = [
            _element(entry, items, old_items[index] if index < len(old_items) else _ABSENT, from_input)
            for index, entry in enumerate(item)
        ]
        return item if all(a is b for a, b in zip(encoded, item, strict=True)) else encoded
    return item


def _scalar(item: Any, schema: Schema) -> Any:
    """A scalar a mutation wrote, as its Go type writes it back (:mod:`celmut.runtime.go_scalars`): a
    Quantity canonical (``1.5`` → ``1500m``), a ``[]byte``'s base64 padded, an integer field's
    integral float an integer; as it is when it does not convert (:func:`decode_error` says why)."""
    go = node_of(schema).go
    if not go or go in (typed.GO_STRING, typed.GO_BOOL, typed.GO_FLOAT64, typed.GO_TIME):
        return item
    try:
        if go in (typed.GO_INT32, typed.GO_INT64):
            return int(item) if type(item) is float and item.is_integer() else item
        if go == typed.GO_BYTES:
            return go_scalars.base64_bytes(item) if type(item) is str else item
        if go == typed.GO_QUANTITY:
            return go_scalars.quantity(item)
        if go == typed.GO_INT_OR_STRING:
            return go_scalars.int_or_string(item)
    except go_scalars.ScalarError:
        pass
    return item


def _zero(schema: Schema, depth: int) -> Any:
    """How Go encodes the zero value of the field's type (what a JSON ``null`` decodes to)."""
    kind = schema.go_kind
    if kind == "scalar":
        go = node_of(schema).go
        if go in (typed.GO_STRING, typed.GO_BYTES):
            return None if go == typed.GO_BYTES else ""  # a nil []byte encodes as null
        if go == typed.GO_BOOL:
            return False
        return 0
    if kind == "custom":
        name = schema.definition.rsplit(".", 1)[-1]
        return {"Quantity": "0", "IntOrString": 0, "Duration": "0s"}.get(name)
    if kind == "struct" and depth > 0:
        zero: dict[str, Any] = {}
        for key in sorted(schema.required):
            child = schema.field(key)
            if child is not None:
                zero[key] = _zero(child, depth - 1)
        return zero
    return None  # nil map, slice or pointer; the zero metav1.Time


# --- decoding errors -------------------------------------------------------------------------------


def decode_error(value: Any, schema: Schema | None, previous: Any = None) -> str | None:
    """The strict decoder's error for ``value`` decoded into the kind's Go type, or None.

    Subtrees shared with ``previous`` (the object the patch started from, which came out of a
    decode) are not checked again. The decoder reads the patched JSON in document order, and
    json-patch v4 writes every object it touched, and the values it added, with their keys sorted (a
    Go map): the keys are walked sorted. An error of a type's own ``UnmarshalJSON`` (IntOrString,
    Quantity) ends the decoding and is the answer; a plain type mismatch or bad base64 is kept
    while decoding goes on (the first one kept is the answer); unknown fields count only when neither
    happened (``sigs.k8s.io/json`` ``UnmarshalStrict``).
    """
    if schema is None or not isinstance(value, dict):
        return None
    check = _Decoder()
    try:
        check.struct(value, schema, _go_struct_name(schema), (), "", previous if type(previous) is dict else None)
    except _Returned as returned:
        return str(returned)
    if check.type_error is not None:
        return check.type_error
    if check.unknown:
        return "strict decoding error: " + ", ".join(f'unknown field "{path}"' for path in check.unknown)
    return None


class _Returned(Exception):
    """An ``UnmarshalJSON`` failed: the decoding stops with its error."""


class _Decoder:
    """Walks a value against its Go type: the first type error (Go keeps the first) and every
    unknown field (strict mode collects them all)."""

    def __init__(self) -> None:
        self.type_error: str | None = None
        self.unknown: list[str] = []

    def struct(
        self, value: dict[str, Any], schema: Schema, struct: str, fields: tuple[str, ...], path: str, before: Any
    ) -> None:
        old = before if type(before) is dict else _EMPTY
        for key in sorted(value):
            item = value[key]
            previous = old.get(key, _ABSENT)
            if item is previous:
                continue
            child = schema.field(key)
            item_path = f"{path}.{key}" if path else key
            if child is None:
                if schema.declares_fields:
                    self.unknown.append(item_path)
                continue
            self.value(item, child, struct, (*fields, key), item_path, previous)

    def value(self, item: Any, schema: Schema, struct: str, fields: tuple[str, ...], path: str, before: Any) -> None:
        if item is None or item is before:
            return
        kind = schema.go_kind
        if kind == "custom":
            self.custom(item, schema, struct, fields)
        elif kind in ("opaque", "time"):
            return  # any JSON, or metav1.Time's own UnmarshalJSON (not checked here)
        elif kind == "struct":
            if type(item) is dict:
                self.struct(item, schema, _go_struct_name(schema), fields, path, before)
            else:
                self.mismatch(item, schema, struct, fields)
        elif kind == "map":
            if type(item) is not dict:
                self.mismatch(item, schema, struct, fields)
            elif schema.values is not None:
                old = before if type(before) is dict else _EMPTY
                for key in sorted(item):
                    self.value(item[key], schema.values, struct, fields, f"{path}[{key}]", old.get(key, _ABSENT))
        elif kind == "slice":
            if type(item) is not list:
                self.mismatch(item, schema, struct, fields)
            elif schema.items is not None:
                old_items = before if type(before) is list else []
                for index, entry in enumerate(item):
                    previous = old_items[index] if index < len(old_items) else _ABSENT
                    self.value(entry, schema.items, struct, fields, f"{path}[{index}]", previous)
        elif not _scalar_fits(item, schema):
            self.mismatch(item, schema, struct, fields)
        elif type(item) is str and node_of(schema).go == typed.GO_BYTES and self.type_error is None:
            try:
                go_scalars.base64_bytes(item)
            except go_scalars.CorruptBase64 as ex:
                self.type_error = str(ex)  # literalStore keeps it (saveError) and decodes on

    def custom(self, item: Any, schema: Schema, struct: str, fields: tuple[str, ...]) -> None:
        """A type with its own ``UnmarshalJSON`` (:mod:`celmut.runtime.go_scalars`): its error is
        returned, with the struct field added to a type error (``addErrorContext``)."""
        go = node_of(schema).go
        try:
            if go == typed.GO_INT_OR_STRING:
                go_scalars.int_or_string(item)
            elif go == typed.GO_QUANTITY:
                go_scalars.quantity(item)
        except go_scalars.UnmarshalTypeError as ex:
            raise _Returned(ex.in_field(struct, ".".join(fields))) from None
        except go_scalars.ScalarError as ex:
            raise _Returned(str(ex)) from None

    def mismatch(self, item: Any, schema: Schema, struct: str, fields: tuple[str, ...]) -> None:
        """Go's ``UnmarshalTypeError`` text: JSON kind, innermost struct, JSON field path (no
        indexes), Go type; only the first is kept."""
        if self.type_error is None:
            self.type_error = (
                f"json: cannot unmarshal {_json_kind(item, schema)} into Go struct field "
                f"{struct}.{'.'.join(fields)} of type {_go_type(schema)}"
            )


def _scalar_fits(item: Any, schema: Schema) -> bool:
    """Whether ``encoding/json`` decodes the scalar into the field's Go type (:attr:`TypedNode.go
    <celmut.runtime.typed.TypedNode.go>`, the one place that says what a field is in Go)."""
    go = node_of(schema).go
    if isinstance(item, bool):
        return go == typed.GO_BOOL
    if isinstance(item, str):
        return go in (typed.GO_STRING, typed.GO_BYTES)
    if isinstance(item, int):
        return go == typed.GO_FLOAT64 or _int_fits(item, go)
    if isinstance(item, float):
        return go == typed.GO_FLOAT64 or (item.is_integer() and _int_fits(int(item), go))
    return False


def _int_fits(item: int, go: str) -> bool:
    bits = {typed.GO_INT32: 32, typed.GO_INT64: 64}.get(go)
    return bits is not None and -(1 << (bits - 1)) <= item < 1 << (bits - 1)


def _json_kind(item: Any, schema: Schema) -> str:
    if isinstance(item, bool):
        return "bool"
    if isinstance(item, dict):
        return "object"
    if isinstance(item, list):
        return "array"
    if isinstance(item, str):
        return "string"
    if node_of(schema).go in (typed.GO_INT32, typed.GO_INT64):
        return f"number {go_scalars.json_text(item)}"  # Go: "number 1.5", "number 4294967296" (too big)
    return "number"


def _go_struct_name(schema: Schema) -> str:
    return schema.definition.rsplit(".", 1)[-1] or "Object"


def _go_type(schema: Schema) -> str:
    """The Go type as ``reflect.Type.String()`` prints it: ``v1.EnvVar``, ``[]v1.EnvVar``,
    ``map[string]string``, ``int32``."""
    kind = schema.go_kind
    if kind == "struct":
        parts = schema.definition.split(".")
        return ".".join(parts[-2:]) if len(parts) >= 2 else "struct"
    if kind == "slice":
        return "[]" + (_go_type(schema.items) if schema.items is not None else "interface {}")
    if kind == "map":
        return "map[string]" + (_go_type(schema.values) if schema.values is not None else "interface {}")
    return node_of(schema).go or "interface {}"
