"""The fields of a kind at a path of its schema, for an editor's completion: the real OpenAPI schemas of
built-in kinds (shipped by ``kubernetes-validate``) and the ``openAPIV3Schema`` of the CRDs given, as
the runtime reads them for ApplyConfiguration merges (:class:`celmut.runtime.schemas.SchemaRegistry`).

A path is field names with ``[]`` for a list's items or a map's values (``spec``, ``containers``,
``[]`` after ``object.spec.containers[0].``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from celmut import kinds
from celmut.runtime.schemas import Schema, SchemaRegistry

MAX_DESCRIPTION = 300  # characters of a field's description shown beside it


def json_type(schema: Schema) -> str:
    """``string``, ``integer``, ``boolean``, ``number``, ``array``, ``object`` (fields), ``map``, or ``""``."""
    if schema.is_array:
        return "array"
    if schema.values is not None and not schema.properties:
        return "map"
    if schema.properties or schema.is_object:
        return "object"
    if schema.alternatives:
        return "/".join(schema.alternatives)
    return schema.scalar_type


def _short(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1].rstrip() + "…"


def kind_of(target: Mapping[str, Any], table: kinds.KindTable) -> tuple[str, str]:
    """(apiVersion, kind) of ``{apiVersion, kind}`` or of a resource rule's ``{group, version, resource}``."""
    if target.get("kind"):
        return str(target.get("apiVersion") or ""), str(target["kind"])
    group, version = str(target.get("group") or ""), str(target.get("version") or "")
    api_version = f"{group}/{version}" if group else version
    return api_version, table.kind_for(api_version, str(target.get("resource") or "").partition("/")[0])


@functools.lru_cache(maxsize=16)
def _registry(crds_json: str) -> SchemaRegistry:
    return SchemaRegistry(json.loads(crds_json))


def fields(target: Mapping[str, Any], path: Sequence[str], crds: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """``{"apiVersion", "kind", "type", "fields": [{"name", "type", "description"}]}`` at ``path`` of
    the kind ``target`` names (``fields`` empty when the kind or the path is unknown)."""
    registry = _registry(json.dumps(list(crds), sort_keys=True, default=str))
    api_version, kind = kind_of(target, registry.kinds)
    schema: Schema | None = registry.for_kind(api_version, kind) if api_version and kind else None
    for step in path:
        if schema is None:
            break
        schema = (schema.items or schema.values) if step == "[]" else schema.field(step)
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "type": "", "fields": []}
    if schema is None:
        return out
    out["type"] = json_type(schema)
    for name in schema.properties:
        child = schema.field(name)
        if child is not None:
            out["fields"].append({"name": name, "type": json_type(child), "description": _short(child.description)})
    return out
