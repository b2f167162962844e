"""The four PATCH formats of the API server.

* ``application/json-patch+json`` — RFC 6902, exactly, through the ``jsonpatch`` package.
* ``application/merge-patch+json`` — RFC 7386, exactly.
* ``application/strategic-merge-patch+json`` — APPROXIMATED: an RFC 7386 merge in which lists of maps
  that the real server merges by a key (containers, initContainers, ephemeralContainers, volumes,
  imagePullSecrets, env, envFrom-less lists ... see :data:`MERGE_KEYS`) are merged item by item on that
  key instead of replaced, ``finalizers`` merge as a set, and the directives ``$patch: delete`` (list
  item or map), ``$patch: replace`` (map) and ``$deleteFromPrimitiveList/<field>`` are honoured;
  ``$setElementOrder/...`` and ``$retainKeys`` are dropped. The real server reads the merge keys from
  the Go struct tags of each kind; this table covers the common core/apps fields only. Custom resources
  refuse it with 415, as on the real server.
* ``application/apply-patch+yaml`` — server-side apply with field managers (apply.py) when the request
  names its ``fieldManager`` (:class:`AppliedConfig`); an in-process apply of a bare dict is the
  strategic merge above.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import jsonpatch
import orjson
import yaml

from .apply import server_side_apply
from .errors import ApiError, bad_request

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH, STRATEGIC_MERGE_PATCH)

#: List fields merged by a key in strategic merge patches (field name -> merge key candidates).
MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "volumes": ("name",),
    "env": ("name",),
    "imagePullSecrets": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "ports": ("containerPort", "port"),
    "hostAliases": ("ip",),
    "conditions": ("type",),
    "ownerReferences": ("uid",),
    "resourceClaims": ("name",),
    "readinessGates": ("conditionType",),
    "topologySpreadConstraints": ("topologyKey",),
    "secrets": ("name",),
}
#: Primitive lists merged as sets.
SET_LISTS = frozenset({"finalizers"})


@dataclass(frozen=True)
class AppliedConfig:
    """The body of a server-side apply with its ``fieldManager`` and ``force`` query parameters."""

    obj: dict[str, Any]
    manager: str
    force: bool = False


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: returns the patched value (``target`` is not modified)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _merge_key(field: str, items: list[Any]) -> str | None:
    candidates = MERGE_KEYS.get(field)
    if not candidates:
        return None
    for key in candidates:
        if all(isinstance(i, dict) and key in i for i in items):
            return key
    return None


def _strategic_list(field: str, target: Any, patch: list[Any]) -> list[Any]:
    current = list(target) if isinstance(target, list) else []
    if field in SET_LISTS:
        return current + [v for v in patch if v not in current]
    key = _merge_key(field, patch) if all(isinstance(i, dict) for i in patch) else None
    if key is None or not all(isinstance(i, dict) and key in i for i in current):
        return [_strip_directives(i) for i in patch]
    result = list(current)
    for item in patch:
        index = next((n for n, cur in enumerate(result) if cur.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if index is not None:
                result.pop(index)
        elif index is None:
            result.append(_strip_directives(item))
        else:
            result[index] = strategic_merge(result[index], item)
    return result


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip_directives(v)
            for k, v in value.items()
            if not (k.startswith("$setElementOrder/") or k.startswith("$deleteFromPrimitiveList/") or k.startswith("$"))
        }
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value


def strategic_merge(target: Any, patch: Any, field: str = "") -> Any:
    """The approximated strategic merge patch (see the module docstring)."""
    if isinstance(patch, list):
        return _strategic_list(field, target, patch)
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return _strip_directives({k: v for k, v in patch.items() if k != "$patch"})
    if directive == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            if isinstance(result.get(name), list):
                result[name] = [v for v in result[name] if v not in (value or [])]
            continue
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
            continue
        merged = strategic_merge(result.get(key), value, key)
        if merged is None and isinstance(value, dict) and value.get("$patch") == "delete":
            result.pop(key, None)
        else:
            result[key] = merged
    return result


def parse_patch_body(content_type: str, body: bytes) -> Any:
    """Decode a PATCH body of the given type (400 when it does not parse)."""
    try:
        if content_type == APPLY_PATCH:
            return yaml.safe_load(body.decode("utf-8"))
        return json.loads(body)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"error decoding patch: {exc}") from exc


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply a decoded patch of ``content_type`` to ``target`` (not modified) and return the result."""
    if content_type == JSON_PATCH:
        if not isinstance(patch, list):
            raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
        try:
            # jsonpatch's own copy is copy.deepcopy; a JSON round trip is ~10x faster for the same result
            result = jsonpatch.JsonPatch(patch).apply(orjson.loads(orjson.dumps(target)), in_place=True)
        except jsonpatch.JsonPatchTestFailed as exc:
            raise ApiError(422, f"the server rejected our request due to an error in our request: {exc}") from exc
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError, TypeError) as exc:
            raise ApiError(422, f"the server rejected our request due to an error in our request: {exc}") from exc
    elif content_type == MERGE_PATCH:
        if not isinstance(patch, dict):
            raise bad_request("the patch body must be a JSON object for a merge patch")
        result = merge_patch(target, patch)
    elif isinstance(patch, AppliedConfig):
        result = server_side_apply(target, patch.obj, patch.manager, patch.force)
    else:
        if not isinstance(patch, dict):
            raise bad_request("the patch body must be an object for a strategic merge or apply patch")
        result = strategic_merge(target, patch)
    if not isinstance(result, dict):
        raise ApiError(422, "the patched object is not a JSON object")
    return result
