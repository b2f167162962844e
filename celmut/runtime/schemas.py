"""OpenAPI schemas that tell an ApplyConfiguration merge how to treat each field, and the Go
round trip (:mod:`celmut.runtime.decode`) what each field of a built-in kind is in Go.

Built-in kinds use the real Kubernetes schemas shipped by ``kubernetes-validate`` (with
``x-kubernetes-list-type``, ``x-kubernetes-list-map-keys``, ``x-kubernetes-map-type`` and each
struct's ``required`` list); custom resources use their CRD's ``openAPIV3Schema`` (with the standard
``apiVersion``/``kind``/``metadata`` fields added, as the API server does). A kind with no schema gets
``None`` and the merge falls back to a documented rule (see :mod:`celmut.runtime.merge`).

Only built-in kinds are Go structs in kube-apiserver: :meth:`SchemaRegistry.typed_schema` returns
their schema and ``None`` for custom resources, which the API server keeps unstructured.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any

from celmut import kinds

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
NO_DEFAULT: Any = object()  # Schema.default of a node without one


class Schema:
    """One node of an OpenAPI v3 schema; ``$ref`` links are followed lazily. Immutable once built (a
    registry builds each tree once per policy set), so every derived fact is computed once, on first
    use: the ApplyConfiguration merge asks several per field."""

    __slots__ = ("__dict__", "_children", "_defs", "_node", "_site_map_type", "definition", "typed_node")

    def __init__(self, node: dict[str, Any], defs: dict[str, Any]) -> None:
        definition = ""  # the last $ref followed: the Go type's definition name for built-ins
        # a map type set where the $ref is (PersistentVolumeSpec.claimRef: granular, though
        # ObjectReference is atomic) wins over the definition's (schemaconv makeOpenAPIRef)
        self._site_map_type = node.get("x-kubernetes-map-type") if "$ref" in node or "allOf" in node else None
        while "$ref" in node:
            definition = node["$ref"].rsplit("/", 1)[-1]
            node = defs[definition]
        if "allOf" in node and len(node["allOf"]) == 1 and "properties" not in node:
            node = {**node["allOf"][0], **{k: v for k, v in node.items() if k != "allOf"}}
            while "$ref" in node:
                definition = node["$ref"].rsplit("/", 1)[-1]
                node = defs[definition]
        self._node = node
        self._defs = defs
        self._children: dict[str, Schema | None] = {}
        self.definition = definition
        self.typed_node: object = None  # its structured-merge-diff type (celmut.runtime.typed), once used

    def _types(self) -> set[str]:
        declared = self._node.get("type")
        if isinstance(declared, str):
            return {declared}
        if isinstance(declared, list):
            return set(declared)
        return set()

    @cached_property
    def scalar_types(self) -> frozenset[str]:
        """The declared JSON types without ``null``."""
        return frozenset(self._types() - {"null"})

    @cached_property
    def is_array(self) -> bool:
        return "array" in self._types() or "items" in self._node

    @cached_property
    def is_object(self) -> bool:
        return (
            "object" in self._types()
            or "properties" in self._node
            or "additionalProperties" in self._node
            or self.preserve_unknown_fields
        )

    @cached_property
    def is_scalar(self) -> bool:
        types = self.scalar_types
        return bool(types) and not (types & {"object", "array"}) and not self.is_object and not self.is_array

    @cached_property
    def scalar_type(self) -> str:
        return "/".join(sorted(self.scalar_types))

    @cached_property
    def list_type(self) -> str:
        """``atomic`` (the default for lists), ``map`` or ``set``."""
        return str(self._node.get("x-kubernetes-list-type", "atomic"))

    @cached_property
    def list_map_keys(self) -> tuple[str, ...]:
        return tuple(self._node.get("x-kubernetes-list-map-keys", ()))

    @cached_property
    def map_type(self) -> str:
        """``atomic`` or ``granular`` (the default for maps and structs)."""
        return str(self._site_map_type or self._node.get("x-kubernetes-map-type", "granular"))

    @cached_property
    def declares_list_type(self) -> bool:
        return "x-kubernetes-list-type" in self._node

    @cached_property
    def patch_strategy(self) -> str:
        return str(self._node.get("x-kubernetes-patch-strategy", ""))

    @cached_property
    def patch_merge_key(self) -> str:
        return str(self._node.get("x-kubernetes-patch-merge-key", ""))

    @cached_property
    def declared_type(self) -> str:
        """The one JSON type the node declares (``null`` aside), or "" for none (any value)."""
        types = sorted(self.scalar_types)
        return types[0] if len(types) == 1 else ""

    @cached_property
    def properties(self) -> dict[str, Any]:
        """The declared fields' schemas, as written (:meth:`field` builds their nodes)."""
        properties = self._node.get("properties")
        return properties if isinstance(properties, dict) else {}

    @cached_property
    def additional_properties(self) -> bool | None:
        """``additionalProperties`` when it is a boolean (True: any field, False: none), else None
        (absent, or a schema: :attr:`values`)."""
        additional = self._node.get("additionalProperties")
        return additional if isinstance(additional, bool) else None

    @cached_property
    def preserve_unknown_fields(self) -> bool:
        return bool(self._node.get("x-kubernetes-preserve-unknown-fields"))

    @cached_property
    def items(self) -> Schema | None:
        node = self._node.get("items")
        return Schema(node, self._defs) if isinstance(node, dict) else None

    def field(self, name: str) -> Schema | None:
        """The schema of a struct field or map value; None when the field is unknown here (memoised:
        a schema tree is immutable and built once per policy set)."""
        try:
            return self._children[name]
        except KeyError:
            pass
        child: Schema | None = None
        properties = self._node.get("properties") or {}
        if name in properties:
            child = Schema(properties[name], self._defs)
        elif self.values is not None:
            child = self.values
        self._children[name] = child
        return child

    @cached_property
    def values(self) -> Schema | None:
        """The schema of a map's values (``additionalProperties``); None for structs."""
        additional = self._node.get("additionalProperties")
        return Schema(additional, self._defs) if isinstance(additional, dict) else None

    @cached_property
    def required(self) -> frozenset[str]:
        """Fields listed in ``required``. For built-in kinds kube-openapi lists exactly the Go fields
        with neither ``omitempty`` nor ``+optional`` (kubernetes/kube-openapi
        pkg/generators/openapi.go, ``hasOptionalTag``)."""
        return frozenset(self._node.get("required") or ())

    @cached_property
    def go_kind(self) -> str:
        """What the field is in a built-in kind's Go type, as ``encoding/json`` sees it:

        * ``struct`` — declared properties; encoded even when empty (``omitempty`` never drops a
          struct), ``{}`` for an empty one;
        * ``map`` / ``slice`` — ``additionalProperties`` / ``items``; ``omitempty`` drops them empty;
        * ``time`` — ``metav1.Time``/``MicroTime``, whose ``MarshalJSON`` writes a zero time as null;
        * ``custom`` — ``Quantity``, ``IntOrString``, ``Duration``: their own JSON (un)marshalers;
        * ``scalar`` — string, integer, number, boolean;
        * ``opaque`` — any JSON kept as written (``RawExtension``, ``FieldsV1``, apiextensions
          ``JSON``, ``x-kubernetes-preserve-unknown-fields``).
        """
        name = self.definition.rsplit(".", 1)[-1]
        if self.preserve_unknown_fields:
            return "opaque"
        if self.definition and name in ("Time", "MicroTime") and "apimachinery" in self.definition:
            return "time"
        if self.alternatives or (self.definition and name in ("Quantity", "IntOrString", "Duration")):
            return "custom"
        if self.is_array:
            return "slice"
        if self.values is not None:
            return "map"
        if self._node.get("properties"):
            return "struct"
        if self.is_scalar:
            return "scalar"
        return "opaque"

    @cached_property
    def default(self) -> Any:
        """The node's ``default`` (a CRD's structural schema keeps it; the bundled built-in schemas
        drop it, see :data:`celmut.runtime.typed.MARKED_KEY_DEFAULTS`), or :data:`NO_DEFAULT`."""
        return self._node.get("default", NO_DEFAULT)

    @cached_property
    def format(self) -> str:
        return str(self._node.get("format", ""))

    @cached_property
    def alternatives(self) -> tuple[str, ...]:
        """Scalar types of a ``oneOf`` (Quantity: string or number, IntOrString: string or integer)."""
        found: list[str] = []
        for option in self._node.get("oneOf") or ():
            declared = option.get("type") if isinstance(option, dict) else None
            names = [declared] if isinstance(declared, str) else list(declared or ())
            found += [name for name in names if name != "null" and name not in found]
        return tuple(found)

    @cached_property
    def declares_fields(self) -> bool:
        return bool(self._node.get("properties")) and not isinstance(self._node.get("additionalProperties"), dict)

    @cached_property
    def description(self) -> str:
        return str(self._node.get("description") or "")


class SchemaRegistry:
    """Schemas by apiVersion and kind: the CRDs it was built with, then built-in kinds.

    Built once per policy set (by :func:`celmut.service.assembly.assemble_engine`) and never
    changed: a reload builds a new one, so nothing accumulates across reloads or leaks between
    stores. :attr:`kinds` is the matching kind ↔ resource naming table.
    """

    def __init__(self, crds: Iterable[Mapping[str, Any]] = (), kubernetes_version: str | None = None) -> None:
        crds = list(crds)
        self.kinds = kinds.KindTable(crds)
        self._defs = kinds.bundled_definitions(kubernetes_version)
        self._by_gvk = _builtin_index(kubernetes_version)
        self._crds: dict[tuple[str, str, str], Schema] = {}
        self._builtins: dict[str, Schema] = {}  # definition name → root schema, memoised with its children
        for crd in crds:
            self._add_crd(crd)

    def _add_crd(self, crd: Mapping[str, Any]) -> None:
        """Use a CustomResourceDefinition's schemas for its kind (every served version)."""
        spec = crd.get("spec") or {}
        group = spec.get("group", "")
        kind = (spec.get("names") or {}).get("kind", "")
        for version in spec.get("versions") or []:
            node = ((version.get("schema") or {}).get("openAPIV3Schema")) or {}
            properties = dict(node.get("properties") or {})
            properties.setdefault("apiVersion", {"type": "string"})
            properties.setdefault("kind", {"type": "string"})
            properties["metadata"] = {"$ref": f"#/$defs/{_OBJECT_META}"}
            self._crds[(group, version.get("name", ""), kind)] = Schema({**node, "properties": properties}, self._defs)

    def for_kind(self, api_version: str, kind: str) -> Schema | None:
        group, version = kinds.split_api_version(api_version)
        crd = self._crds.get((group, version, kind))
        if crd is not None:
            return crd
        return self._builtin(group, version, kind)

    def typed_schema(self, api_version: str, kind: str) -> Schema | None:
        """The schema of a kind kube-apiserver decodes into a Go struct: built-in kinds only. A custom
        resource (or an unknown kind) is ``unstructured.Unstructured`` there and gets ``None``."""
        group, version = kinds.split_api_version(api_version)
        if (group, version, kind) in self._crds:
            return None
        return self._builtin(group, version, kind)

    def _builtin(self, group: str, version: str, kind: str) -> Schema | None:
        name = self._by_gvk.get((group, version, kind))
        if name is None:
            return None
        schema = self._builtins.get(name)
        if schema is None:
            schema = self._builtins[name] = Schema({"$ref": f"#/$defs/{name}"}, self._defs)
        return schema


@functools.cache
def _builtin_index(kubernetes_version: str | None) -> dict[tuple[str, str, str], str]:
    """(group, version, kind) → definition name of every built-in kind (immutable upstream data)."""
    index: dict[tuple[str, str, str], str] = {}
    for name, node in kinds.bundled_definitions(kubernetes_version).items():
        for gvk in node.get("x-kubernetes-group-version-kind", ()):
            index[(gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))] = name
    return index
