"""Merge an ApplyConfiguration into an object, as server-side apply (structured-merge-diff) does.

Rules, driven by the object's schema (:mod:`celmut.runtime.schemas`):

* structs and granular maps merge key by key; the applied value wins for scalars;
* ``listType=map`` lists merge items by their key fields — existing items keep their place, new ones
  are appended in the applied order;
* ``listType=set`` lists are unioned (existing order, then new values);
* atomic lists, maps and structs (including lists with no list type) are **rejected anywhere in the
  applied object**, even inside a new list item, with ``may not mutate atomic arrays, maps or
  structs: <path>`` — unless ``replace_atomic`` (Kyverno's ``useServerSideApply: true``), which
  replaces them whole;
* a field the schema does not declare is an error; ``null`` in the applied object means "no opinion".

Fallback without a schema (a custom resource whose CRD is not known, or a subtree with
``x-kubernetes-preserve-unknown-fields``): maps merge key by key and lists are replaced whole.
"""

from __future__ import annotations

from typing import Any

from celmut.runtime.failures import MergeError
from celmut.runtime.schemas import Schema

# Key fields the API server defaults before merging (so an item without them still matches).
_KEY_DEFAULTS = {"protocol": "TCP"}


def apply_configuration(
    live: dict[str, Any], applied: dict[str, Any], schema: Schema | None, *, replace_atomic: bool = False
) -> dict[str, Any]:
    """The merged object; ``live`` is not modified (changed parts are copied)."""
    return _merge_map(live, applied, schema, "", replace_atomic)


def _untyped(path: str, problem: str) -> MergeError:
    """The applied object does not fit the schema (SMD's ``ObjectToTyped`` step, before merging)."""
    return MergeError(f"failed to convert patch object to typed object: {path or '.'}: {problem}")


def _atomic(path: str) -> MergeError:
    return MergeError(f"invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {path or '.'}")


def _merge(live: Any, applied: Any, schema: Schema | None, path: str, replace_atomic: bool) -> Any:
    if isinstance(applied, dict):
        return _merge_map(live, applied, schema, path, replace_atomic)
    if isinstance(applied, list):
        return _merge_list(live, applied, schema, path, replace_atomic)
    return applied


def _merge_map(
    live: Any, applied: dict[str, Any], schema: Schema | None, path: str, replace_atomic: bool
) -> dict[str, Any]:
    if schema is not None and not schema.preserve_unknown_fields:
        if schema.is_array and not schema.is_object:
            raise _untyped(path, "expected a list, got a map")
        if schema.is_scalar:
            raise _untyped(path, f"expected a {schema.scalar_type}, got a map")
        if schema.map_type == "atomic":
            if not replace_atomic:
                raise _atomic(path)
            return _strip_map_nulls(applied)
    result = dict(live) if isinstance(live, dict) else {}
    for key, value in applied.items():
        if value is None:
            continue
        child_path = f"{path}.{key}"
        child_schema: Schema | None = None
        if schema is not None and not schema.preserve_unknown_fields:
            child_schema = schema.field(key)
            if child_schema is None and schema.declares_fields:
                raise _untyped(child_path, "field not declared in schema")
        result[key] = _merge(result.get(key), value, child_schema, child_path, replace_atomic)
    return result


def _merge_list(live: Any, applied: list[Any], schema: Schema | None, path: str, replace_atomic: bool) -> Any:
    if schema is None or schema.preserve_unknown_fields:
        return [_strip_nulls(item) for item in applied]
    if schema.is_object and not schema.is_array:
        raise _untyped(path, "expected a map, got a list")
    if schema.is_scalar:
        raise _untyped(path, f"expected a {schema.scalar_type}, got a list")
    list_type = schema.list_type
    existing = list(live) if isinstance(live, list) else []
    if list_type == "set":
        for item in applied:
            if item not in existing:
                existing.append(item)
        return existing
    if list_type == "map":
        return _merge_associative(existing, applied, schema, path, replace_atomic)
    if not replace_atomic:
        raise _atomic(path)
    return [_strip_nulls(item) for item in applied]


def _key_of(item: Any, keys: tuple[str, ...]) -> tuple[Any, ...]:
    if not isinstance(item, dict):
        return (item,)
    return tuple(item.get(k, _KEY_DEFAULTS.get(k)) for k in keys)


def _render_key(keys: tuple[str, ...], values: tuple[Any, ...]) -> str:
    return ",".join(f"{k}={v!r}" for k, v in zip(keys, values, strict=True))


def _merge_associative(
    existing: list[Any], applied: list[Any], schema: Schema, path: str, replace_atomic: bool
) -> list[Any]:
    keys = schema.list_map_keys
    positions = {_key_of(item, keys): index for index, item in enumerate(existing)}
    seen: set[tuple[Any, ...]] = set()
    for item in applied:
        if item is None:
            continue
        key = _key_of(item, keys)
        item_path = f"{path}[{_render_key(keys, key)}]"
        if key in seen:
            raise MergeError(f"{item_path}: duplicate entries for key in the applied list")
        seen.add(key)
        if key in positions:
            index = positions[key]
            existing[index] = _merge(existing[index], item, schema.items, item_path, replace_atomic)
        else:
            positions[key] = len(existing)
            existing.append(_merge(None, item, schema.items, item_path, replace_atomic))
    return existing


def _strip_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return _strip_map_nulls(value)
    if isinstance(value, list):
        return [_strip_nulls(v) for v in value]
    return value


def _strip_map_nulls(value: dict[str, Any]) -> dict[str, Any]:
    return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
