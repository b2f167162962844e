"""JSON Patch as the API server applies a JSONPatch mutation: gopkg.in/evanphx/json-patch.v4.

``k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch/json_patch.go`` hands the CEL result to
``jsonpatch.Patch.Apply`` of json-patch v4 (default options), and Kyverno's MutatingPolicy reuses that
patcher. v4 differs from RFC 6902 in ways users' policies rely on; this module follows its
``patch.go`` function by function (``findObject``, ``partialDoc``/``partialArray`` ``get``/``set``/
``add``/``remove``, ``Patch.add``/``remove``/``replace``/``move``/``test``/``copy``):

- ``replace`` of a missing object member adds it (``partialDoc.get`` never fails); only a list index
  must exist.
- List indexes are parsed by Go's ``strconv.Atoi`` (``+1``, ``01`` and ``-0`` are indexes) and may be
  negative, counted from the end (``SupportNegativeIndices``); for ``add``, ``-1`` appends.
- A path without a leading ``/`` addresses from the root all the same (``a/b`` is ``/b``); ``""`` is
  the root only for ``replace`` (an object or list value; any other value is silently ignored) and
  ``test``; every other operation on ``""`` is "doc is missing path".
- Walking through a ``null`` or a scalar is "doc is missing path".
- ``test`` of a missing member or of a ``null`` fails the test (the patch is dropped) rather than
  erroring; only a missing parent is an error. Values compare as JSON (numbers by value).
- ``copy`` from a missing member copies ``null``; ``move`` from one fails on the removal.

Errors carry v4's own texts (``add operation does not apply: doc is missing path: "/a": missing
value``); the caller adds the API server's ``JSON Patch: `` prefix. Containers on an operation's path
are copied before they change, so the input is never modified and untouched subtrees stay shared.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from celmut.jsonutil import PointerTokens, json_copy, json_equal, split_pointer

_MISSING = ": missing value"  # pkg/errors.Wrapf(ErrMissing, …)
_INVALID_INDEX = ": invalid index referenced"  # Wrapf(ErrInvalidIndex, …)
_INT64 = 2**63


class JsonPatchError(Exception):
    """An operation does not apply; the message is json-patch v4's (paths and keys, never values)."""


class JsonPatchTestFailed(Exception):
    """A ``test`` operation did not hold (``ErrTestFailed``): the API server drops the whole patch."""

    def __init__(self, path: str) -> None:
        super().__init__(f"testing value {path} failed: test failed")
        self.path = path


def apply_patch(document: Any, operations: list[dict[str, Any]], pointers: PointerTokens | None = None) -> Any:
    """``document`` with ``operations`` applied in order (``Patch.ApplyIndent``); never modified.
    ``pointers`` remembers the paths' tokens across patches (an engine's: policies write the same paths
    on every request)."""
    patched = _Patched(document, pointers)
    for operation in operations:
        kind = operation.get("op")
        apply = _APPLY.get(kind) if isinstance(kind, str) else None
        if apply is None:
            raise JsonPatchError(f"Unexpected kind: {kind}")
        apply(patched, operation)
    return patched.root


class _Patched:
    """The document being patched: its root, and the containers this patch already copied.

    The input is never modified: the first operation that walks through a container copies it (and
    every container above it), and the later operations of the same patch change that copy in place
    instead of copying it again — three annotations added by one patch copy ``metadata`` and
    ``annotations`` once, not three times. Untouched subtrees stay shared with the input. A copy is
    only ever reachable from one place: values an operation adds are fresh deep copies, and a moved
    value leaves its old place."""

    __slots__ = ("_owned", "pointers", "root")

    def __init__(self, root: Any, pointers: PointerTokens | None) -> None:
        self.root = root
        self._owned: dict[int, Any] = {}  # id → a container this patch made (held, so ids stay unique)
        self.pointers = pointers

    def own(self, value: Any) -> Any:
        """``value`` itself when this patch made it, else a shallow copy this patch now owns."""
        if self._owned.get(id(value)) is value:
            return value
        copied = _shallow(value)
        self._owned[id(copied)] = copied
        return copied


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _atoi(key: str) -> int:
    """Go's ``strconv.Atoi``: an optional sign and decimal digits, within int64."""
    digits = key[1:] if key[:1] in ("+", "-") else key
    if not digits or not digits.isascii() or not digits.isdigit():
        raise JsonPatchError(f"strconv.Atoi: parsing {_go_quote(key)}: invalid syntax")
    value = int(key)
    if not -_INT64 <= value < _INT64:
        raise JsonPatchError(f"strconv.Atoi: parsing {_go_quote(key)}: value out of range")
    return value


def _shallow(value: Any) -> Any:
    cls = type(value)
    return value.copy() if cls is dict or cls is list else copy.copy(value)


def _array_get(node: list[Any], key: str) -> Any:
    """``partialArray.get``."""
    index = _atoi(key)
    if index < 0:
        if index < -len(node):
            raise JsonPatchError(f"Unable to access invalid index: {index}{_INVALID_INDEX}")
        index += len(node)
    if index >= len(node):
        raise JsonPatchError(f"Unable to access invalid index: {index}{_INVALID_INDEX}")
    return node[index]


def _get(node: dict[str, Any] | list[Any], key: str) -> Any:
    """``container.get``: a missing object member is ``None`` (no error) — what lets ``replace`` add."""
    if isinstance(node, dict):
        return node.get(key)
    return _array_get(node, key)


def _find_object(patched: _Patched, path: str) -> tuple[dict[str, Any] | list[Any], str] | None:
    """``findObject``: the container of the path's last token (owned by this patch, with every
    container above it) and that token decoded; None when a step is missing, ``null`` or a scalar.

    :meth:`_Patched.own`, inlined: this runs for every operation of every JSONPatch mutation."""
    tokens = patched.pointers.tokens(path) if patched.pointers is not None else split_pointer(path)
    if tokens is None or not isinstance(patched.root, dict | list):
        return None
    parts, last = tokens[:-1], tokens[-1]
    owned = patched._owned
    node = patched.root
    if owned.get(id(node)) is not node:
        node = patched.root = patched.own(node)
    for part in parts:
        child: Any
        if isinstance(node, dict):
            child = node.get(part)
        else:
            try:
                child = _array_get(node, part)
            except JsonPatchError:
                return None
        if not isinstance(child, dict | list):
            return None
        if owned.get(id(child)) is not child:
            copied = patched.own(child)
            if isinstance(node, dict):
                node[part] = copied
            else:
                node[_index_of(node, part)] = copied
            child = copied
        node = child
    return node, last


def _index_of(node: list[Any], part: str) -> int:
    """The position a (decoded) index token names, negative ones counted from the end."""
    index = _atoi(part)
    return index + len(node) if index < 0 else index


def _container_add(node: dict[str, Any] | list[Any], key: str, value: Any) -> None:
    """``partialDoc.add`` sets (adds or replaces); ``partialArray.add`` inserts, ``-`` appends."""
    if isinstance(node, dict):
        node[key] = value
        return
    if key == "-":
        node.append(value)
        return
    try:
        index = _atoi(key)
    except JsonPatchError as ex:
        raise JsonPatchError(f"value was not a proper array index: '{key}': {ex}") from None
    size = len(node) + 1
    if index >= size or index < -size:
        raise JsonPatchError(f"Unable to access invalid index: {index}{_INVALID_INDEX}")
    if index < 0:
        index += size
    node.insert(index, value)


def _container_remove(node: dict[str, Any] | list[Any], key: str) -> None:
    if isinstance(node, dict):
        if key not in node:
            raise JsonPatchError(f"Unable to remove nonexistent key: {key}{_MISSING}")
        del node[key]
        return
    index = _atoi(key)
    if index >= len(node) or index < -len(node):
        raise JsonPatchError(f"Unable to access invalid index: {index}{_INVALID_INDEX}")
    del node[index]


def _path(operation: dict[str, Any]) -> str:
    return str(operation["path"])


def _from(operation: dict[str, Any]) -> str:
    return str(operation.get("from", ""))


def _value(operation: dict[str, Any]) -> Any:
    return json_copy(operation.get("value"))


def _add(patched: _Patched, operation: dict[str, Any]) -> None:
    path = _path(operation)
    found = _find_object(patched, path)
    if found is None:
        raise JsonPatchError(f'add operation does not apply: doc is missing path: "{path}"{_MISSING}')
    node, key = found
    if isinstance(node, dict):  # partialDoc.add: sets the member (the common case, without a call)
        node[key] = json_copy(operation.get("value"))
        return
    try:
        _container_add(node, key, _value(operation))
    except JsonPatchError as ex:
        raise JsonPatchError(f"error in add for path: '{path}': {ex}") from None


def _remove(patched: _Patched, operation: dict[str, Any]) -> None:
    path = _path(operation)
    found = _find_object(patched, path)
    if found is None:
        raise JsonPatchError(f'remove operation does not apply: doc is missing path: "{path}"{_MISSING}')
    try:
        _container_remove(*found)
    except JsonPatchError as ex:
        raise JsonPatchError(f"error in remove for path: '{path}': {ex}") from None


def _replace(patched: _Patched, operation: dict[str, Any]) -> None:
    path = _path(operation)
    if path == "":
        value = _value(operation)
        if isinstance(value, dict | list):
            patched.root = value
        # else: v4 returns errors.Wrapf(nil, …), which is nil: the operation is silently ignored
        return
    found = _find_object(patched, path)
    if found is None:
        raise JsonPatchError(f"replace operation does not apply: doc is missing path: {path}{_MISSING}")
    node, key = found
    try:
        _get(node, key)
    except JsonPatchError:
        raise JsonPatchError(f"replace operation does not apply: doc is missing key: {path}{_MISSING}") from None
    if isinstance(node, dict):
        node[key] = _value(operation)
    else:
        node[_index_of(node, key)] = _value(operation)


def _move(patched: _Patched, operation: dict[str, Any]) -> None:
    source, path = _from(operation), _path(operation)
    found = _find_object(patched, source)
    if found is None:
        raise JsonPatchError(f"move operation does not apply: doc is missing from path: {source}{_MISSING}")
    node, key = found
    try:
        value = _get(node, key)
        _container_remove(node, key)
    except JsonPatchError as ex:
        raise JsonPatchError(f"error in move for path: '{key}': {ex}") from None
    found = _find_object(patched, path)
    if found is None:
        raise JsonPatchError(f"move operation does not apply: doc is missing destination path: {path}{_MISSING}")
    try:
        _container_add(*found, value)
    except JsonPatchError as ex:
        raise JsonPatchError(f"error in move for path: '{path}': {ex}") from None


def _test(patched: _Patched, operation: dict[str, Any]) -> None:
    path = _path(operation)
    expected = operation.get("value")
    if path == "":
        if not json_equal(patched.root, expected):
            raise JsonPatchTestFailed(path)
        return
    found = _find_object(patched, path)
    if found is None:
        raise JsonPatchError(f"test operation does not apply: is missing path: {path}{_MISSING}")
    try:
        actual = _get(*found)
    except JsonPatchError as ex:
        raise JsonPatchError(f"error in test for path: '{path}': {ex}") from None
    # A missing member and a null are both a nil node, and v4 fails the test for either.
    if actual is None or not json_equal(actual, expected):
        raise JsonPatchTestFailed(path)


def _copy(patched: _Patched, operation: dict[str, Any]) -> None:
    source, path = _from(operation), _path(operation)
    found = _find_object(patched, source)
    if found is None:
        raise JsonPatchError(f"copy operation does not apply: doc is missing from path: {source}{_MISSING}")
    try:
        value = _get(*found)
    except JsonPatchError as ex:
        raise JsonPatchError(f"error in copy for from: '{source}': {ex}") from None
    found = _find_object(patched, path)
    if found is None:
        raise JsonPatchError(f"copy operation does not apply: doc is missing destination path: {path}{_MISSING}")
    try:
        _container_add(*found, json_copy(value))
    except JsonPatchError as ex:
        raise JsonPatchError(f"error while adding value during copy: {ex}") from None


_APPLY = {"add": _add, "remove": _remove, "replace": _replace, "move": _move, "test": _test, "copy": _copy}
