"""A small validator for CRD schemas, as the API server applies them.

* :func:`structural_problems` checks the rules of a *structural* schema (every node typed, value
  validations in ``allOf``/``anyOf``/``oneOf``/``not`` free of types and descriptions and only about
  fields specified outside them, list-map keys required), which the API server enforces on
  ``apiextensions.k8s.io/v1`` CRDs and ``kubernetes_validate`` (a JSON-shape check) does not.
* :func:`validate` checks a custom resource against its CRD version's schema with ``jsonschema``:
  types, enums, bounds, patterns, required fields and the ``anyOf``/``oneOf`` rules, plus what
  JSON Schema cannot say: unique keys of ``x-kubernetes-list-type: map`` lists and unique items of
  ``set`` lists. Unknown fields are errors, as with ``kubectl apply --validate=strict`` (the API
  server would drop them silently).
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema

Schema = dict[str, Any]
_BRANCHES = ("allOf", "anyOf", "oneOf", "not")
_FORBIDDEN_IN_BRANCHES = ("type", "description", "default", "additionalProperties", "nullable")


def _children(schema: Schema, path: str) -> list[tuple[Schema, str]]:
    out = [(child, f"{path}.{name}") for name, child in (schema.get("properties") or {}).items()]
    if isinstance(schema.get("items"), dict):
        out.append((schema["items"], f"{path}[]"))
    if isinstance(schema.get("additionalProperties"), dict):
        out.append((schema["additionalProperties"], f"{path}{{}}"))
    return out


def _branch_problems(branch: Any, outside: Schema, path: str) -> list[str]:
    problems: list[str] = []
    nodes = branch if isinstance(branch, list) else [branch]
    for node in nodes:
        for key in _FORBIDDEN_IN_BRANCHES:
            if key in node:
                problems.append(f"{path}: {key} inside a value validation")
        for name, inner in (node.get("properties") or {}).items():
            known = (outside.get("properties") or {}).get(name)
            if known is None:
                problems.append(f"{path}.{name}: only specified inside a value validation")
            else:
                problems += _branch_problems(inner, known, f"{path}.{name}")
        for key in _BRANCHES:
            if key in node:
                problems += _branch_problems(node[key], outside, f"{path}.{key}")
    return problems


def structural_problems(schema: Schema, path: str = "") -> list[str]:
    """Why ``schema`` is not structural (empty when it is)."""
    problems: list[str] = []
    free = schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("x-kubernetes-int-or-string")
    if "type" not in schema and not free:
        problems.append(f"{path or '<root>'}: no type")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{path}: properties and additionalProperties together")
    if schema.get("additionalProperties") is False:
        problems.append(f"{path}: additionalProperties: false is not allowed")
    if schema.get("x-kubernetes-list-type") == "map":
        items = schema.get("items") or {}
        for key in schema.get("x-kubernetes-list-map-keys") or ["<none>"]:
            if key not in (items.get("required") or []) and "default" not in (items.get("properties") or {}).get(
                key, {}
            ):
                problems.append(f"{path}: list-map key {key} is neither required nor defaulted")
    for key in _BRANCHES:
        if key in schema:
            problems += _branch_problems(schema[key], schema, f"{path}.{key}")
    for child, child_path in _children(schema, path):
        problems += structural_problems(child, child_path)
    return problems


def _strict(schema: Schema) -> Schema:
    """The schema as JSON Schema: objects with known properties reject unknown ones."""
    out = copy.copy(schema)
    if schema.get("x-kubernetes-int-or-string"):
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if "properties" in schema:
        out["properties"] = {name: _strict(child) for name, child in schema["properties"].items()}
        if not schema.get("x-kubernetes-preserve-unknown-fields") and "additionalProperties" not in schema:
            out["additionalProperties"] = False
    if isinstance(schema.get("items"), dict):
        out["items"] = _strict(schema["items"])
    if isinstance(schema.get("additionalProperties"), dict):
        out["additionalProperties"] = _strict(schema["additionalProperties"])
    return out


def _list_problems(schema: Schema, value: Any, path: str) -> list[str]:
    problems: list[str] = []
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or []
            seen = [tuple(item.get(k) for k in keys) for item in value if isinstance(item, dict)]
            problems += [f"{path}: duplicate entry {key}" for i, key in enumerate(seen) if key in seen[:i]]
        elif list_type == "set":
            problems += [f"{path}: duplicate value {item!r}" for i, item in enumerate(value) if item in value[:i]]
        for index, item in enumerate(value):
            problems += _list_problems(schema["items"], item, f"{path}[{index}]")
    elif isinstance(value, dict):
        for name, child in (schema.get("properties") or {}).items():
            if name in value:
                problems += _list_problems(child, value[name], f"{path}.{name}")
    return problems


def version_schema(crd: dict[str, Any], version: str) -> Schema:
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            return entry["schema"]["openAPIV3Schema"]
    raise KeyError(f"{crd['metadata']['name']} has no version {version}")


def validate(crd: dict[str, Any], document: dict[str, Any]) -> list[str]:
    """Every problem of ``document`` against the CRD version its apiVersion names."""
    version = str(document.get("apiVersion", "")).rsplit("/", 1)[-1]
    schema = version_schema(crd, version)
    validator = jsonschema.Draft202012Validator(_strict(schema))
    problems = [
        f"{'.'.join(map(str, error.absolute_path)) or '<root>'}: {error.message}"
        for error in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    ]
    return problems + _list_problems(schema, document, "")
