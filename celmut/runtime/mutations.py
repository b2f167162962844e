"""Apply one mutation's CEL result to an object: RFC 6902 patches or an ApplyConfiguration merge.

Both return a new object and never modify their input. JSONPatch follows json-patch v4 as the API
server does (:mod:`celmut.runtime.jsonpatch_v4`): a failed ``test`` makes the whole mutation a silent
no-op (Kyverno and Kubernetes agree); every other failure is an error whose message is the API
server's (``JSON Patch: …``), naming the operation and path, never object data.
"""

from __future__ import annotations

from typing import Any

from celmut.cel import values
from celmut.compile.result_shapes import Shape
from celmut.jsonutil import PointerTokens, escape_pointer, json_copy
from celmut.runtime import go_values, jsonpatch_v4, smd, typed
from celmut.runtime.failures import MergeError, MutationError
from celmut.runtime.merge import apply_configuration, strip_nulls
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
            # json-patch v4 ``Patch.ApplyIndent``'s text, with where and what would do
            raise MutationError(f"JSON Patch: Unexpected kind: {op} (JSONPatch[{index}]; supported: {', '.join(_OPS)})")
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


def apply_json_patch(
    obj: dict[str, Any], operations: list[dict[str, Any]], pointers: PointerTokens | None = None
) -> dict[str, Any]:
    """The patched object; raises :class:`TestFailed` when a ``test`` operation does not hold.

    ``obj`` is not modified: the patch copies only the containers on its paths, once each.
    ``pointers``: the paths' tokens, remembered by the engine.
    """
    document = patch_document(obj, operations, pointers=pointers)
    if not isinstance(document, dict):
        # An operation on the root (path "") can replace the whole document; the API server then fails
        # to decode the result into an object, and so does this.
        raise MutationError(f"the patched object must be an object, got {values.type_name(document)}")
    return document


def patch_document(
    document: Any, operations: list[dict[str, Any]], *, any_root: bool = False, pointers: PointerTokens | None = None
) -> Any:
    """``document`` patched as the API server patches (json-patch v4: :mod:`celmut.runtime.jsonpatch_v4`).

    Raises :class:`TestFailed` as :func:`apply_json_patch`, and :class:`MutationError` with the API
    server's ``JSON Patch: …`` message otherwise. With ``any_root`` (Kyverno's JSON payloads, which
    may be scalars) a ``replace`` of the root ``""`` takes any value; v4 itself only patches objects
    and lists, and ignores a root ``replace`` whose value is neither.
    """
    try:
        if not any_root:
            return jsonpatch_v4.apply_patch(document, operations, pointers)
        for operation in operations:
            if operation["op"] == "replace" and operation["path"] == "":
                document = json_copy(operation.get("value"))
            else:
                document = jsonpatch_v4.apply_patch(document, [operation])
        return document
    except jsonpatch_v4.JsonPatchTestFailed as failed:
        raise TestFailed(failed.path) from None
    except jsonpatch_v4.JsonPatchError as ex:
        raise MutationError(f"JSON Patch: {ex}") from None


def apply_object(
    obj: dict[str, Any],
    applied: Any,
    schema: Schema | None,
    *,
    replace_atomic: bool,
    shape: Shape = None,
    plain: Any = None,
    checked: bool = False,
) -> dict[str, Any]:
    """Merge an ApplyConfiguration (``Object{…}``) into a copy of ``obj`` in the API server's order
    (``patch/smd.go`` ``ApplyStructuredMergeDiff``): the patch typed against the kind's schema
    (:func:`celmut.runtime.smd.type_errors`), its atomic fields refused unless ``replace_atomic``
    (Kyverno's ``useServerSideApply``), then merged. ``shape``: which lists and maps the mutation's
    expression builds (:mod:`celmut.compile.result_shapes`). ``plain``, when given, is
    :func:`plain_configuration` of ``applied``, worked out before (a literal's, once); ``checked``:
    it was typed against ``schema`` before (:func:`check_configuration`, a literal's once).

    Errors carry the API server's ``error applying patch:`` prefix.
    """
    try:
        if plain is None:
            plain = plain_configuration(applied, shape)
            if plain is None:
                raise MutationError(
                    f"ApplyConfiguration expression must return an Object, got {values.type_name(applied)}"
                )
        if schema is not None:
            if not checked:
                check_configuration(plain, schema, replace_atomic=replace_atomic)
        else:
            plain = strip_nulls(go_values.to_json(plain))  # no schema types it: JSON, nulls "no opinion"
        merged = apply_configuration(obj, plain, schema, replace_atomic=replace_atomic)
    except MergeError as ex:
        raise MutationError(f"error applying patch: {ex}") from None
    return merged


def check_configuration(plain: dict[str, Any], schema: Schema, *, replace_atomic: bool) -> None:
    """Raise the :class:`MergeError` the API server's typed conversion of the patch (``ObjectToTyped``)
    or its atomic guard (``validatePatch``) gives ``plain``, if any."""
    node = typed.node_of(schema)
    problem = smd.type_errors(plain, node)
    if problem is not None:
        raise MergeError(f"failed to convert patch object to typed object: {problem}")
    if not replace_atomic:
        atomics = smd.atomic_paths(plain, node)
        if atomics:
            where = ", ".join(atomics)
            raise MergeError(f"invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {where}")


def plain_configuration(applied: Any, shape: Shape = None) -> dict[str, Any] | None:
    """An ApplyConfiguration result as the API server hands it to structured-merge-diff: its Go
    values (:func:`celmut.runtime.go_values.from_cel`), so that the typed conversion refuses what the
    API server refuses; None when it is not an Object (:func:`apply_object` says why)."""
    if not isinstance(applied, dict):
        return None
    return go_values.from_cel(applied, shape)


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
