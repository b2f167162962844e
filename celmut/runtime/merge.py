"""Merge an ApplyConfiguration into an object, as server-side apply (structured-merge-diff) does.

Rules, driven by the object's schema (:mod:`celmut.runtime.schemas`):

* structs and granular maps merge key by key; the applied value wins for scalars;
* ``listType=map`` lists merge items by their key fields and ``listType=set`` lists are unioned, in
  structured-merge-diff's order, collapsing a duplicated live key the applied list names
  (:func:`_merge_items`);
* atomic lists, maps and structs (including lists with no list type) are replaced whole;
* a ``null`` in the applied object (a Go nil: one read from the input, see
  :mod:`celmut.runtime.go_values`; CEL's own ``null`` is refused before) keeps a non-empty granular
  map or associative list as it is and sets anything else to null (structured-merge-diff's merge:
  ``mapValue``/``listValue`` take a nil for empty, and an empty pair is a leaf the applied side wins).

The applied object was typed against the schema before (:func:`celmut.runtime.mutations.
check_configuration`: fields it does not declare, values of the wrong type and atomic fields are
refused there, as structured-merge-diff's ``ObjectToTyped`` and the API server's ``validatePatch``
refuse them before merging), so the merge itself meets no error but a duplicated applied key.

Fallback without a schema (a custom resource whose CRD is not known, or a subtree with
``x-kubernetes-preserve-unknown-fields``): maps merge key by key and lists are replaced whole. Where
no schema types the object at all, celmut drops the applied nulls first (:func:`strip_nulls`): the
API server always has one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from celmut.jsonutil import json_copy
from celmut.runtime.failures import MergeError
from celmut.runtime.schemas import Schema
from celmut.runtime.typed import node_of


def apply_configuration(
    live: dict[str, Any], applied: dict[str, Any], schema: Schema | None, *, replace_atomic: bool = False
) -> dict[str, Any]:
    """The merged object; ``live`` is not modified (changed parts are copied)."""
    return _merge_map(live, applied, schema, _ROOT, replace_atomic)


# Where the merge is, as the error messages name it (``.spec.containers[name="web"].image``), built as
# it goes down and rendered only for an error: ``()`` is the root, ``(parent, field)`` a field of a
# map, ``(parent, keys, key)`` the item of a keyed list (most merges raise nothing, and formatting
# every field's path cost more than the merge itself).
_Path = tuple[Any, ...]
_ROOT: _Path = ()


def _render(path: _Path) -> str:
    segments: list[str] = []
    while path:
        if len(path) == 2:
            path, field = path
            segments.append(f".{field}")
        else:
            path, keys, key = path
            segments.append(f"[{_render_key(keys, key)}]")
    return "".join(reversed(segments))


def _merge(live: Any, applied: Any, schema: Schema | None, path: _Path, replace_atomic: bool) -> Any:
    if isinstance(applied, dict):
        return _merge_map(live, applied, schema, path, replace_atomic)
    if isinstance(applied, list):
        return _merge_list(live, applied, schema, path, replace_atomic)
    return applied


def _merge_map(
    live: Any, applied: dict[str, Any], schema: Schema | None, path: _Path, replace_atomic: bool
) -> dict[str, Any]:
    if schema is not None and not schema.preserve_unknown_fields and schema.map_type == "atomic":
        return json_copy(applied)  # an atomic map, taken whole (a copy: a literal's is shared)
    result = dict(live) if isinstance(live, dict) else {}
    for key, value in applied.items():
        child_schema = schema.field(key) if schema is not None and not schema.preserve_unknown_fields else None
        if value is None:
            if not _nil_keeps(result.get(key), child_schema):
                result[key] = None
            continue
        result[key] = _merge(result.get(key), value, child_schema, (path, key), replace_atomic)
    return result


def _nil_keeps(live: Any, schema: Schema | None) -> bool:
    """Whether an applied Go nil leaves ``live`` as it is: a non-empty granular map or associative
    list merged with nothing (structured-merge-diff typed/merge.go ``doMap``/``doList``)."""
    node = node_of(schema)
    if type(live) is dict and live:
        return node.has_map and not node.map_atomic
    if type(live) is list and live:
        return node.has_list and not node.list_atomic
    return False


def _merge_list(live: Any, applied: list[Any], schema: Schema | None, path: _Path, replace_atomic: bool) -> Any:
    if schema is None or schema.preserve_unknown_fields:
        return json_copy(applied)  # an atomic list, taken whole
    list_type = schema.list_type
    existing = list(live) if isinstance(live, list) else []
    if list_type == "set":
        # an atomic item is taken whole, as a copy: the applied object may be a literal every request shares
        return _merge_items(existing, applied, _set_key, lambda key, old, new: json_copy(new), path, ("value",))
    if list_type == "map":
        keys = schema.list_map_keys
        defaults = node_of(schema).key_defaults

        def merge_item(key: tuple[Any, ...], old: Any, new: Any) -> Any:
            return _merge(old, new, schema.items, (path, keys, key), replace_atomic)

        return _merge_items(existing, applied, lambda item: _key_of(item, keys, defaults), merge_item, path, keys)
    return json_copy(applied)


_NO_KEY: Any = object()  # a key field an item omits and that has no default


def _key_of(item: Any, keys: tuple[str, ...], defaults: dict[str, Any]) -> tuple[Any, ...]:
    """The item's key: each key field's value, else its default (typed/helpers.go ``getAssociativeKeyDefault``)."""
    if not isinstance(item, dict):
        return (item,)
    return tuple(item[k] if k in item else defaults.get(k, _NO_KEY) for k in keys)


def _set_key(item: Any) -> tuple[Any, ...]:
    return (orjson.dumps(item, option=orjson.OPT_SORT_KEYS),) if isinstance(item, dict | list) else (item,)


def _render_key(keys: tuple[str, ...], values: tuple[Any, ...]) -> str:
    return ",".join(f"{k}={v!r}" for k, v in zip(keys, values, strict=True))


_ItemKey = tuple[Any, ...]


def _merge_items(
    existing: list[Any],
    applied: list[Any],
    key_of: Callable[[Any], _ItemKey],
    merge_item: Callable[[_ItemKey, Any, Any], Any],
    path: _Path,
    keys: tuple[str, ...],
) -> list[Any]:
    """An associative list (``listType`` map or set) merged as structured-merge-diff's
    ``typed/merge.go`` ``visitListItems`` does (v4.4+, kubernetes-sigs/structured-merge-diff#254):

    * the applied items come in their applied order; live items they do not name stay where they
      are relative to them (live ``[a, b, c]`` + applied ``[c, a]`` → ``[b, c, a]``);
    * a key the live list holds more than once (``env`` with two ``test`` entries, which create and
      update allow) is kept as is while the applied list does not name it, and collapses into the
      one applied item when it does — the applied item alone, merged with none of the duplicates
      (``indexListPathElements``: "Duplicated items are not merged with the new value");
    * duplicates in the applied list are an error.

    Split in three passes, each called once per list (never per item): index the applied items, index
    the live ones, then walk both."""
    rhs_order, rhs = _index_applied(applied, key_of, path, keys)
    lhs_order, lhs = _index_live(existing, key_of)
    return _interleave(existing, lhs_order, lhs, rhs_order, rhs, merge_item)


def _index_applied(
    applied: list[Any], key_of: Callable[[Any], _ItemKey], path: _Path, keys: tuple[str, ...]
) -> tuple[list[_ItemKey], dict[_ItemKey, Any]]:
    """The applied items' keys in order and the items by key (null items skipped); a
    :class:`MergeError` for a key given twice."""
    rhs_order: list[_ItemKey] = []
    rhs: dict[_ItemKey, Any] = {}
    for item in applied:
        if item is None:
            continue
        key = key_of(item)
        if key in rhs:
            where = _render((path, keys, key))
            raise MergeError(f"{where}: duplicate entries for key in the applied list")
        rhs[key] = item
        rhs_order.append(key)
    return rhs_order, rhs


def _index_live(existing: list[Any], key_of: Callable[[Any], _ItemKey]) -> tuple[list[_ItemKey], dict[_ItemKey, Any]]:
    """The live items' keys in order and the items by key, None for a key held more than once."""
    lhs_order = [key_of(item) for item in existing]
    lhs: dict[_ItemKey, Any] = {}
    for key, item in zip(lhs_order, existing, strict=True):
        lhs[key] = None if key in lhs else item  # a duplicated key is merged with nothing
    return lhs_order, lhs


def _interleave(
    existing: list[Any],
    lhs_order: list[_ItemKey],
    lhs: dict[_ItemKey, Any],
    rhs_order: list[_ItemKey],
    rhs: dict[_ItemKey, Any],
    merge_item: Callable[[_ItemKey, Any, Any], Any],
) -> list[Any]:
    """The merged list: both lists walked together in ``visitListItems``'s order (see
    :func:`_merge_items`)."""
    shared = iter([key for key in rhs_order if key in lhs])
    next_shared = next(shared, None)
    merged: set[_ItemKey] = set()
    out: list[Any] = []
    left, right = 0, 0
    while left < len(lhs_order) or right < len(rhs_order):
        if left < len(lhs_order) and right < len(rhs_order):
            key = lhs_order[left]
            if key == rhs_order[right]:  # merge the live and the applied item
                merged.add(key)
                out.append(merge_item(key, lhs[key], rhs[key]))
                left, right = left + 1, right + 1
                next_shared = next(shared, None)
                continue
            if key in rhs and next_shared is not None and next_shared != key:
                left += 1  # a shared item, but not the one this round wants
                continue
        if left < len(lhs_order):
            key = lhs_order[left]
            if key not in rhs:  # a live item the applied list does not name: kept as it is
                out.append(existing[left])
                left += 1
                continue
            if key in merged:  # a later duplicate of an item already merged
                left += 1
                continue
        if right < len(rhs_order):
            key = rhs_order[right]
            merged.add(key)
            out.append(merge_item(key, lhs.get(key), rhs[key]))
            right += 1
            if next_shared is not None and next_shared == key:
                next_shared = next(shared, None)
    return out


def strip_nulls(value: Any) -> Any:
    """``value`` without the nulls of its maps (for the merge where no schema types the object)."""
    if isinstance(value, dict):
        return {k: strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_nulls(v) for v in value]
    return value
