"""Apply one mutation's CEL result to an object: RFC 6902 patches or an ApplyConfiguration merge.

Both return a new object and never modify their input. A failed JSONPatch ``test`` makes the whole
mutation a silent no-op (Kyverno and Kubernetes agree); a ``test`` on a path that does not exist
and every other failure are errors. Error messages name the operation and path, never object data.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer

from celmut.cel import values
from celmut.jsonutil import escape_pointer, json_copy, unescape_pointer
from celmut.runtime.failures import MergeError, MutationError
from celmut.runtime.merge import apply_configuration
from celmut.runtime.schemas import Schema

_OPS = ("add", "remove", "replace", "move", "copy", "test")


class TestFailed(Exception):
    """A JSONPatch ``test`` operation did not hold: the whole mutation is skipped, without error."""

    def __init__(self, path: str) -> None:
        super().__init__(f"JSONPatch test at {path} did not hold; the mutation was skipped")
        self.path = path


def patch_operations(result: Any) -> list[dict[str, Any]]:
    """Normalise a JSONPatch expression result into plain RFC 6902 operations."""
    if not isinstance(result, list):
        raise MutationError(f"JSONPatch expression must return a list, got {values.type_name(result)}")
    operations = []
    for index, item in enumerate(result):
        if not isinstance(item, dict):
            raise MutationError(f"JSONPatch[{index}] must be a JSONPatch, got {values.type_name(item)}")
        op, path = item.get("op"), item.get("path")
        if op not in _OPS:
            raise MutationError(f"JSONPatch[{index}]: unsupported op {op!r}; supported: {', '.join(_OPS)}")
        if not isinstance(path, str):
            raise MutationError(f"JSONPatch[{index}] ({op}): path must be a string")
        operation: dict[str, Any] = {"op": op, "path": path}
        if op in ("add", "replace", "test"):
            operation["value"] = values.to_plain(item.get("value"))
        if op in ("move", "copy"):
            source = item.get("from")
            if not isinstance(source, str):
                raise MutationError(f"JSONPatch[{index}] ({op} {path}): from must be a string")
            operation["from"] = source
        operations.append(operation)
    return operations


def _resolve_negative_indexes(document: Any, path: str) -> str:
    """evanphx/json-patch accepts ``-N`` list indexes (from the end); RFC 6902 and python-jsonpatch do not."""
    if "/-" not in path:
        return path
    tokens = path.split("/")[1:]
    node = document
    for position, token in enumerate(tokens):
        if isinstance(node, list) and token.startswith("-") and token[1:].isdigit():
            index = len(node) - int(token[1:])
            if index < 0:
                raise MutationError(f"index {token} out of range at {path}")
            tokens[position] = str(index)
            token = tokens[position]
        if isinstance(node, dict):
            node = node.get(unescape_pointer(token))
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            break
    return "/" + "/".join(tokens)


def _exists(document: Any, path: str) -> bool:
    try:
        jsonpointer.resolve_pointer(document, path)
        return True
    except jsonpointer.JsonPointerException:
        return False


def _copy_along(document: Any, parts: list[str]) -> tuple[Any, Any]:
    """A new root whose containers along the pointer ``parts`` lead to are shallow copies, so an
    in-place change there leaves the original untouched while every other subtree stays shared; and
    the (copied) container of the last part, or None when the path does not lead to one."""
    root = _shallow(document)
    node = root
    for token in parts[:-1]:
        if isinstance(node, dict) and token in node:
            key: Any = token
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            key = int(token)
        else:
            return root, None
        child = node[key]
        if not isinstance(child, dict | list):
            return root, None
        node[key] = child = _shallow(child)
        node = child
    return root, node


def _shallow(value: Any) -> Any:
    cls = type(value)
    return value.copy() if cls is dict or cls is list else copy.copy(value)


def apply_json_patch(obj: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, Any]:
    """The patched object; raises :class:`TestFailed` when a ``test`` operation does not hold.

    ``obj`` is not modified: each operation copies only the containers on its path.
    """
    document = patch_document(obj, operations)
    if not isinstance(document, dict):
        # An operation on the root (path "") can replace the whole document; the API server then fails
        # to decode the result into an object, and so does this.
        raise MutationError(f"the patched object must be an object, got {values.type_name(document)}")
    return document


def patch_document(document: Any, operations: list[dict[str, Any]]) -> Any:
    """``document`` (any JSON value) patched; a path of ``""`` is the root, which an operation may
    replace with a value of another type. Raises :class:`TestFailed` as :func:`apply_json_patch`."""
    kind = path = ""
    try:
        for operation in operations:  # valid operations (patch_operations): no JsonPatch re-validation
            op = dict(operation)
            kind, path = op["op"], _resolve_negative_indexes(document, op["path"])
            op["path"] = path
            if kind == "test":
                if not _exists(document, path):
                    raise MutationError(f"test {path}: path does not exist")
                try:
                    jsonpatch.TestOperation(op).apply(document)
                except jsonpatch.JsonPatchTestFailed:
                    raise TestFailed(path) from None
                continue
            pointer = jsonpointer.JsonPointer(path)  # parsed once: the copy and the operation share it
            parts = pointer.parts
            document, parent = _copy_along(document, parts)
            if kind == "add" and parts and type(parent) is dict:
                # RFC 6902 §4.1 on an object member: added, or replaced when it exists — what
                # jsonpatch's AddOperation does, without its pointer walk, journal and second copy
                parent[parts[-1]] = json_copy(op["value"])
                continue
            if kind == "move":
                document, _ = _copy_along(document, jsonpointer.JsonPointer(op["from"]).parts)
            if "value" in op:
                op["value"] = json_copy(op["value"])
            op["path"] = pointer
            document = jsonpatch.JsonPatch.operations[kind](op).apply(document)
    except (jsonpatch.JsonPatchConflict, jsonpointer.JsonPointerException) as ex:
        raise MutationError(f"{kind} {path}: {_safe_reason(ex)}") from None
    except jsonpatch.JsonPatchException as ex:
        raise MutationError(f"{kind} {path}: {_safe_reason(ex)}") from None
    return document


def _safe_reason(ex: Exception) -> str:
    text = str(ex)
    if "not found" in text or "non-existent" in text:
        return "path not found"
    if "outside of list" in text or "sequence index" in text or "out of range" in text:
        return "list index out of range"
    if "must start with" in text:
        return "path must start with /"
    return type(ex).__name__


def apply_object(obj: dict[str, Any], applied: Any, schema: Schema | None, *, replace_atomic: bool) -> dict[str, Any]:
    """Merge an ApplyConfiguration (``Object{…}``) into a copy of ``obj``.

    Errors carry the API server's ``error applying patch:`` prefix (``patch/smd.go``).
    """
    if not isinstance(applied, dict):
        raise MutationError(f"ApplyConfiguration expression must return an Object, got {values.type_name(applied)}")
    try:
        _refuse_bytes(applied, schema, "")
        merged = apply_configuration(obj, values.to_plain(applied), schema, replace_atomic=replace_atomic)
    except MergeError as ex:
        raise MutationError(f"error applying patch: {ex}") from None
    return merged


def _refuse_bytes(value: Any, schema: Schema | None, path: str) -> None:
    """CEL bytes reach structured-merge-diff as a Go ``[]byte``, which no schema type accepts
    (``typed/validate.go`` ``validateScalar``): the merge fails where a JSONPatch would have
    base64-encoded them."""
    if isinstance(value, bytes):
        kind = schema.scalar_type if schema is not None and schema.is_scalar else "string"
        expected = {"boolean": "boolean", "integer": "numeric (int or float)", "number": "numeric (int or float)"}
        raise MergeError(
            f"failed to convert patch object to typed object: {path or '.'}: "
            f"expected {expected.get(kind, 'string')}, got []uint8"
        )
    if isinstance(value, dict):
        for key, item in value.items():
            child = schema.field(str(key)) if schema is not None else None
            _refuse_bytes(item, child, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        items = schema.items if schema is not None else None
        for index, item in enumerate(value):
            _refuse_bytes(item, items, f"{path}[{index}]")


def written_pointers(patch_type: str, result: Any) -> list[str]:
    """The pointers one mutation's result writes, for explanations: the paths of its JSONPatch
    operations (and a move's source), or the leaves of its ApplyConfiguration (a list as a whole:
    where its items land depends on the merge). A result that cannot be applied writes nothing here;
    applying it fails on its own."""
    out: list[str] = []
    if patch_type == "JSONPatch":
        for item in result if isinstance(result, list) else ():
            if not isinstance(item, dict) or item.get("op") not in ("add", "replace", "remove", "move", "copy"):
                continue
            if item.get("op") == "move" and isinstance(item.get("from"), str):
                out.append(item["from"])
            if isinstance(item.get("path"), str):
                out.append(item["path"])
        return out
    if isinstance(result, dict):
        applied = values.to_plain(result)
        for key, value in applied.items():
            if key not in ("apiVersion", "kind"):  # they name the object; the merge does not write them
                _leaves(value, "/" + escape_pointer(str(key)), out)
    return out


def _leaves(value: Any, pointer: str, out: list[str]) -> None:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _leaves(item, f"{pointer}/{escape_pointer(str(key))}", out)
    else:
        out.append(pointer)
