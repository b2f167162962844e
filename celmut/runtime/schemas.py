"""OpenAPI schemas that tell an ApplyConfiguration merge how to treat each field.

Built-in kinds use the real Kubernetes schemas shipped by ``kubernetes-validate`` (with
``x-kubernetes-list-type``, ``x-kubernetes-list-map-keys`` and ``x-kubernetes-map-type``); custom
resources use their CRD's ``openAPIV3Schema`` (with the standard ``apiVersion``/``kind``/``metadata``
fields added, as the API server does). A kind with no schema gets ``None`` and the merge falls back to
a documented rule (see :mod:`celmut.runtime.merge`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any

from celmut import kinds

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


class Schema:
    """One node of an OpenAPI v3 schema; ``$ref`` links are followed lazily."""

    __slots__ = ("__dict__", "_defs", "_node")

    def __init__(self, node: dict[str, Any], defs: dict[str, Any]) -> None:
        while "$ref" in node:
            node = defs[node["$ref"].rsplit("/", 1)[-1]]
        if "allOf" in node and len(node["allOf"]) == 1 and "properties" not in node:
            node = {**node["allOf"][0], **{k: v for k, v in node.items() if k != "allOf"}}
            while "$ref" in node:
                node = defs[node["$ref"].rsplit("/", 1)[-1]]
        self._node = node
        self._defs = defs

    def _types(self) -> set[str]:
        declared = self._node.get("type")
        if isinstance(declared, str):
            return {declared}
        if isinstance(declared, list):
            return set(declared)
        return set()

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

    @property
    def is_scalar(self) -> bool:
        types = self._types() - {"null"}
        return bool(types) and not (types & {"object", "array"}) and not self.is_object and not self.is_array

    @property
    def scalar_type(self) -> str:
        return "/".join(sorted(self._types() - {"null"}))

    @property
    def list_type(self) -> str:
        """``atomic`` (the default for lists), ``map`` or ``set``."""
        return str(self._node.get("x-kubernetes-list-type", "atomic"))

    @property
    def list_map_keys(self) -> tuple[str, ...]:
        return tuple(self._node.get("x-kubernetes-list-map-keys", ()))

    @property
    def map_type(self) -> str:
        """``atomic`` or ``granular`` (the default for maps and structs)."""
        return str(self._node.get("x-kubernetes-map-type", "granular"))

    @property
    def preserve_unknown_fields(self) -> bool:
        return bool(self._node.get("x-kubernetes-preserve-unknown-fields"))

    @cached_property
    def items(self) -> Schema | None:
        node = self._node.get("items")
        return Schema(node, self._defs) if isinstance(node, dict) else None

    def field(self, name: str) -> Schema | None:
        """The schema of a struct field or map value; None when the field is unknown here."""
        properties = self._node.get("properties") or {}
        if name in properties:
            return Schema(properties[name], self._defs)
        additional = self._node.get("additionalProperties")
        if isinstance(additional, dict):
            return Schema(additional, self._defs)
        return None

    @property
    def declares_fields(self) -> bool:
        return bool(self._node.get("properties")) and not isinstance(self._node.get("additionalProperties"), dict)


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
        name = self._by_gvk.get((group, version, kind))
        return Schema(self._defs[name], self._defs) if name else None


@functools.cache
def _builtin_index(kubernetes_version: str | None) -> dict[tuple[str, str, str], str]:
    """(group, version, kind) → definition name of every built-in kind (immutable upstream data)."""
    index: dict[tuple[str, str, str], str] = {}
    for name, node in kinds.bundled_definitions(kubernetes_version).items():
        for gvk in node.get("x-kubernetes-group-version-kind", ()):
            index[(gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))] = name
    return index
