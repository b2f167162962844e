"""The API server's typed view of an object: structured-merge-diff's schema, compiled once per node.

kube-apiserver types an ApplyConfiguration before merging it (``staging/src/k8s.io/apiserver/pkg/
admission/plugin/policy/mutating/patch/smd.go``, ``ApplyStructuredMergeDiff``): ``ObjectToTyped``
validates the patch against the kind's schema (structured-merge-diff ``typed/validate.go``), then
``validatePatch`` refuses atomic fields (``findAtomics``), then the merge. Its schema is the OpenAPI
one converted by kube-openapi ``pkg/schemaconv/smd.go`` (``ToSchemaFromOpenAPI``); a :class:`TypedNode`
is that conversion of one :class:`~celmut.runtime.schemas.Schema` node, worked out at its first use
and kept with the node (a registry, and so every node, lives as long as its policy set):

* ``integer`` and ``number`` are *numeric* (an int or a float), ``string`` with no format or
  ``format: byte`` is *string*, ``boolean`` is *boolean*; every other string format
  (``date-time``, a CRD's ``uri``) and ``Quantity`` (hard-coded) take *any scalar*;
* a node without a type (``IntOrString``, whose published schema is a ``oneOf``, a CRD's
  ``x-kubernetes-int-or-string`` or preserved field) takes any scalar, list or map; ``RawExtension``
  any atomic value;
* an object with properties and no ``additionalProperties`` refuses other fields, unless
  ``x-kubernetes-preserve-unknown-fields`` is set on it or on an inlined ancestor;
* a list is associative with ``x-kubernetes-list-type`` ``map`` (its keys) or ``set``, or with a
  ``x-kubernetes-patch-strategy: merge`` (its ``x-kubernetes-patch-merge-key``), atomic otherwise.

Beside the structured-merge-diff type, a node knows its Go type (:attr:`TypedNode.go`) as far as the
OpenAPI ``format`` tells it: ``int32``/``int64``/``float64``, ``[]byte`` (``format: byte``),
``IntOrString``, ``Quantity``, ``Time``. The Go conversion of the merged object
(:mod:`celmut.runtime.go_convert`) and the strict decoding after a JSONPatch
(:mod:`celmut.runtime.decode`) read these same facts: one place says what a field is.
"""

from __future__ import annotations

from typing import Any

from celmut.runtime.schemas import NO_DEFAULT, Schema

# structured-merge-diff schema.Scalar values
NUMERIC = "numeric"
STRING = "string"
BOOLEAN = "boolean"
UNTYPED = "untyped"

# Go types of scalar leaves (TypedNode.go); "" for structs, maps, slices and untyped values
GO_INT32 = "int32"
GO_INT64 = "int64"
GO_FLOAT64 = "float64"
GO_STRING = "string"
GO_BOOL = "bool"
GO_BYTES = "[]uint8"
GO_INT_OR_STRING = "IntOrString"
GO_QUANTITY = "Quantity"
GO_TIME = "Time"

# An item of a keyed list that omits a key field takes the field's OpenAPI ``default`` as its key
# (structured-merge-diff typed/helpers.go ``getAssociativeKeyDefault``). The bundled built-in schemas
# drop ``default``; what kube-apiserver publishes has one for (kube-openapi generators/openapi.go
# ``mustEnforceDefault``, ``generateDefault``): every required scalar, its Go zero value (a field
# without ``omitempty``), and the fields marked ``+default=`` — among list keys, these three
# (checked against a v1.36 API server's /openapi/v3: every other list key is required or has no default).
MARKED_KEY_DEFAULTS: dict[tuple[str, str], Any] = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.LocalObjectReference", "name"): "",
}
_ZERO = {"string": "", "integer": 0, "number": 0, "boolean": False}

_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_RAW_EXTENSION = "io.k8s.apimachinery.pkg.runtime.RawExtension"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"


class TypedNode:
    """One structured-merge-diff ``schema.Atom``: which of scalar, list and map it accepts, and how."""

    __slots__ = (
        "_fields",
        "_item",
        "associative",
        "closed",
        "go",
        "has_list",
        "has_map",
        "key_defaults",
        "keys",
        "list_atomic",
        "map_atomic",
        "preserve",
        "scalar",
        "schema",
        "sorted_keys",
    )

    def __init__(self, schema: Schema | None, preserve: bool) -> None:
        self.schema = schema
        self.preserve = preserve
        self.scalar: str | None = None
        self.has_map = False
        self.map_atomic = False
        self.closed = False  # a struct: fields it does not declare are refused
        self.has_list = False
        self.list_atomic = False
        self.associative = False
        self.keys: tuple[str, ...] = ()
        self.sorted_keys: tuple[str, ...] = ()  # keyMap.Sort(): a path element names its keys sorted
        self.key_defaults: dict[str, Any] = {}  # the keys an item may omit, and what it then has
        self.go = ""
        self._fields: dict[str, TypedNode | None] = {}
        self._item: TypedNode | None = None

    def field(self, name: str) -> TypedNode | None:
        """The type of a map's key ``name`` (a declared field, else the element type); None when the
        map declares its fields and no other (``field not declared in schema``)."""
        try:
            return self._fields[name]
        except KeyError:
            pass
        child: TypedNode | None
        schema = self.schema
        if schema is None:
            child = DEDUCED if self is DEDUCED else UNTYPED_ATOMIC
        else:
            properties = schema.properties
            if name in properties:
                child = node_of(schema.field(name), self.preserve)
            elif schema.values is not None:
                child = node_of(schema.values, self.preserve)
            elif self.closed:
                child = None
            else:
                child = DEDUCED
        self._fields[name] = child
        return child

    def is_field(self, name: str) -> bool:
        """Whether ``name`` is a declared struct field (``schema.Map.FindField``)."""
        return self.schema is not None and name in self.schema.properties

    @property
    def item(self) -> TypedNode:
        """The type of a list's items (untyped and atomic when the schema has no ``items``)."""
        item = self._item
        if item is None:
            items = self.schema.items if self.schema is not None else None
            if self is DEDUCED or self is UNTYPED_ATOMIC or items is None:
                item = UNTYPED_ATOMIC
            else:
                item = node_of(items, self.preserve)
            self._item = item
        return item


def _common(scalar: str, *, list_atomic: bool, map_atomic: bool) -> TypedNode:
    node = TypedNode(None, True)
    node.scalar = scalar
    node.has_list = node.has_map = True
    node.list_atomic = list_atomic
    node.map_atomic = map_atomic
    return node


# schemaconv's two common types: ``__untyped_atomic_`` (lists and maps of it, atomic) and
# ``__untyped_deduced_`` (its maps granular, of itself; its lists atomic).
UNTYPED_ATOMIC = _common(UNTYPED, list_atomic=True, map_atomic=True)
DEDUCED = _common(UNTYPED, list_atomic=True, map_atomic=False)


def node_of(schema: Schema | None, inherited_preserve: bool = False) -> TypedNode:
    """The compiled type of ``schema`` (memoised on the node); ``inherited_preserve``: an inlined
    ancestor sets ``x-kubernetes-preserve-unknown-fields`` (a named type starts afresh)."""
    if schema is None:
        return DEDUCED
    node = schema.typed_node
    if node is None:
        node = schema.typed_node = _compile(schema, inherited_preserve and not schema.definition)
    assert isinstance(node, TypedNode)
    return node


def _compile(schema: Schema, inherited: bool) -> TypedNode:
    """schemaconv ``parseSchema`` of one node (``convertPrimitive``, ``parseObject``, ``parseList``)."""
    preserve = inherited or schema.preserve_unknown_fields
    node = TypedNode(schema, preserve)
    definition = schema.definition
    if definition == _RAW_EXTENSION:
        return UNTYPED_ATOMIC
    if definition == _QUANTITY or (schema.alternatives and "number" in schema.alternatives):
        node.scalar, node.go = UNTYPED, GO_QUANTITY  # hard-coded in ToSchemaFromOpenAPI
        return node
    if definition == _INT_OR_STRING or schema.alternatives:
        # the published IntOrString has no ``type`` (``format: int-or-string`` and a ``oneOf``): parseSchema
        # makes it any scalar, an atomic list of untyped items and a granular map of deduced values, so
        # only the Go conversion refuses a map (``json: cannot unmarshal object into Go value of type int32``)
        node.scalar, node.go = UNTYPED, GO_INT_OR_STRING
        node.has_list = node.list_atomic = node.has_map = True
        return node
    declared = schema.declared_type
    additional = schema.additional_properties
    if declared == "" and (schema.properties or schema.values is not None or additional is not None):
        declared = "object"  # kubernetes-validate drops some ``type: object``
    elif declared == "" and schema.items is not None:
        declared = "array"
    if declared in ("", "object"):
        node.has_map = True
        node.map_atomic = schema.map_type == "atomic"
        # parseObject's element type: none (other fields refused) for additionalProperties: false, or
        # for declared properties without additionalProperties and without preserved unknown fields
        node.closed = additional is False or (
            additional is None and schema.values is None and bool(schema.properties) and not preserve
        )
    if declared in ("", "array"):
        node.has_list = True
        list_type, keys = schema.list_type, schema.list_map_keys
        if schema.declares_list_type:
            node.associative = list_type in ("map", "set")
            node.keys = keys if list_type == "map" else ()
        elif schema.patch_strategy in ("merge", "merge,retainKeys"):
            node.associative = True
            node.keys = (schema.patch_merge_key,) if schema.patch_merge_key else ()
        node.list_atomic = not node.associative
        node.sorted_keys = tuple(sorted(node.keys))
        if node.keys and schema.items is not None:
            node.key_defaults = key_defaults(schema.items, node.keys)
    if declared == "":
        node.scalar = UNTYPED
    elif declared in ("integer", "number"):
        node.scalar = NUMERIC
        node.go = GO_FLOAT64 if declared == "number" else (GO_INT32 if schema.format == "int32" else GO_INT64)
    elif declared == "boolean":
        node.scalar, node.go = BOOLEAN, GO_BOOL
    elif declared == "string":
        fmt = schema.format
        if fmt in ("", "byte"):
            node.scalar, node.go = STRING, (GO_BYTES if fmt == "byte" else GO_STRING)
        else:
            node.scalar, node.go = UNTYPED, (GO_TIME if fmt == "date-time" else GO_STRING)
    return node


def key_defaults(item: Schema, keys: tuple[str, ...]) -> dict[str, Any]:
    """The default of each key field of a keyed list's ``item`` that has one (see
    :data:`MARKED_KEY_DEFAULTS`)."""
    found: dict[str, Any] = {}
    for key in keys:
        field = item.field(key) if key in item.properties else None
        if field is None:
            continue
        if field.default is not NO_DEFAULT:
            found[key] = field.default
        elif (item.definition, key) in MARKED_KEY_DEFAULTS:
            found[key] = MARKED_KEY_DEFAULTS[(item.definition, key)]
        elif item.definition and key in item.required and field.declared_type in _ZERO:
            found[key] = _ZERO[field.declared_type]  # a built-in's required scalar (CRDs publish their own)
    return found
