"""How kube-apiserver sees an object around a MutatingAdmissionPolicy's JSONPatch.

The API server applies a MAP's JSONPatch to the object re-encoded from its Go type, then decodes
the result back into that type (kubernetes-map-observed.md):

* :func:`as_encoded` — empty maps, empty lists and nulls disappear (``omitempty``), so
  ``annotations: {}`` in the input is gone and an ``add`` under it has no parent;
* :func:`decode_problems` — an unknown field or a value of the wrong type in the patched object is
  an internal error that rejects the request whatever the failurePolicy.

Without a schema for the kind, decoding cannot fail and nothing is reported.
"""

from __future__ import annotations

from typing import Any

from celmut.runtime.schemas import Schema

_JSON_TYPES = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def as_encoded(value: Any) -> Any:
    """The object as Go re-encodes it: empty maps and lists and nulls omitted (shared when unchanged)."""
    if isinstance(value, dict):
        out = {}
        changed = False
        for key, item in value.items():
            encoded = as_encoded(item)
            if encoded is None or encoded == {} or encoded == []:
                changed = True
                continue
            changed = changed or encoded is not item
            out[key] = encoded
        return out if changed else value
    if isinstance(value, list):
        items = [as_encoded(item) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


def decode_problems(value: Any, schema: Schema | None, path: str = "") -> list[str]:
    """Why ``value`` would not decode into the kind's Go type (unknown fields, wrong types)."""
    if schema is None or schema.preserve_unknown_fields or value is None:
        return []
    if isinstance(value, dict):
        if schema.is_scalar or (schema.is_array and not schema.is_object):
            return [f"{path or '.'}: cannot decode a map into {schema.scalar_type or 'a list'}"]
        problems: list[str] = []
        for key, item in value.items():
            child = schema.field(key)
            if child is None:
                if schema.declares_fields:
                    problems.append(f'unknown field "{path.lstrip(".")}.{key}"'.replace('"."', '"'))
                continue
            problems += decode_problems(item, child, f"{path}.{key}")
        return problems
    if isinstance(value, list):
        if schema.is_object and not schema.is_array:
            return [f"{path or '.'}: cannot decode a list into an object"]
        if schema.is_scalar:
            return [f"{path or '.'}: cannot decode a list into {schema.scalar_type}"]
        items = schema.items
        return [p for index, item in enumerate(value) for p in decode_problems(item, items, f"{path}[{index}]")]
    if schema.is_scalar:
        allowed = tuple(t for name in schema.scalar_type.split("/") for t in _JSON_TYPES.get(name, ()))
        if allowed and (not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed)):
            return [f"{path or '.'}: cannot decode {type(value).__name__} into {schema.scalar_type}"]
    return []
