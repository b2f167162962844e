"""structured-merge-diff's checks of an ApplyConfiguration, before it is merged.

kube-apiserver's ``ApplyStructuredMergeDiff`` (``staging/src/k8s.io/apiserver/pkg/admission/plugin/
policy/mutating/patch/smd.go``), and Kyverno's MutatingPolicy through the same function, first type the
patch (``typeConverter.ObjectToTyped``: structured-merge-diff ``typed/validate.go``), then refuse
atomic fields (``validatePatch``/``findAtomics``), then merge (:mod:`celmut.runtime.merge`). Both
checks are here, walking the patch once each against the compiled :class:`~celmut.runtime.typed.
TypedNode` tree:

* :func:`type_errors` — every ``validateScalar``, ``doList``/``doMap`` and ``visitListItems`` error
  (a string where the schema says numeric, a number or bool where it says string, a non-string in a
  ``map[string]string``, a duplicated list-map key, a field the struct does not declare …), with
  structured-merge-diff's paths (``.spec.containers[name="web"].image``) and its joined text;
* :func:`atomic_paths` — the atomic lists, maps and structs the patch names (``findAtomics``: index
  paths, ``.spec.containers[0].args``).

Go walks maps in random order; here the patch's own order is used, so when several fields are wrong
the message lists them in that order (the API server may list them in another).
"""

from __future__ import annotations

from typing import Any

from celmut.cel.values import format_double
from celmut.runtime.go_containers import PathElement
from celmut.runtime.go_values import go_quote, go_type, value_sharp_v, value_v
from celmut.runtime.typed import BOOLEAN, NUMERIC, STRING, UNTYPED, TypedNode

_Errors = list[tuple[str, str]]  # (path, message), as ValidationErrors
# Where the walk is: ``()`` at the root, ``(parent, segment)`` below, a segment being a field name, a
# list index or a list item's :class:`PathElement`; rendered only for an error (structured-merge-diff
# builds its prefixes lazily too: ``WithLazyPrefix``).
_Path = tuple[Any, ...]


def _render_element(element: PathElement) -> str:
    """``PathElement.String``: ``[name="web"]``, or ``[="a"]`` for a set's item."""
    if len(element) == 1 and element[0][0] == "":
        return f"[={_to_string(element[0][1])}]"
    return "[" + ",".join(f"{name}={_to_string(value)}" for name, value in element) + "]"


def _render(path: _Path) -> str:
    segments: list[str] = []
    while path:
        path, segment = path
        cls = type(segment)
        segments.append("." + segment if cls is str else f"[{segment}]" if cls is int else _render_element(segment))
    return "".join(reversed(segments))


def type_errors(value: dict[str, Any], node: TypedNode) -> str | None:
    """``ObjectToTyped``'s error for the patch ``value``, or None when it fits the schema
    (``ValidationErrors.Error``: one ``path: message``, or ``errors:`` and one indented line each)."""
    errors: _Errors = []
    _validate(value, node, (), errors)
    if not errors:
        return None
    lines = [f"{path}: {message}" if path else message for path, message in errors]
    return lines[0] if len(lines) == 1 else "\n  ".join(["errors:", *lines])


def _is_scalar(value: Any) -> bool:
    # what IsFloat/IsInt/IsString/IsBool accept: not a CEL uint (uint64), bytes, structpb.NullValue, a
    # []ref.Val or map[ref.Val]ref.Val (go_values), nor a Go nil
    cls = type(value)
    return cls is str or cls is int or cls is float or cls is bool


def _validate(value: Any, node: TypedNode, path: _Path, errors: _Errors) -> None:
    """``resolveSchema``: ``deduceAtom`` picks the atom's part matching the value, ``handleAtom`` runs
    the map, else the scalar, else the list check (for a null, or a value no part takes)."""
    cls = type(value)
    if cls is dict:
        if node.has_map:
            _map(value, node, path, errors)
            return
    elif cls is list:
        if node.has_list:
            _list(value, node, path, errors)
            return
    elif _is_scalar(value) and node.scalar is not None:
        _scalar(value, node.scalar, path, errors)
        return
    if node.has_map:
        _map(value, node, path, errors)
    elif node.scalar is not None:
        _scalar(value, node.scalar, path, errors)
    elif node.has_list:
        _list(value, node, path, errors)


_SCALAR_OF: dict[str, type] = {NUMERIC: int, STRING: str, BOOLEAN: bool}


def _numeric(scalar: str, cls: type) -> bool:
    return scalar == NUMERIC and cls is float


def _scalar(value: Any, scalar: str, path: _Path, errors: _Errors) -> None:
    """``validateScalar`` (a Go nil is any scalar)."""
    if value is None:
        return
    cls = type(value)
    if scalar == NUMERIC:
        if cls is not int and cls is not float:
            errors.append((_render(path), f"expected numeric (int or float), got {go_type(value)}"))
    elif scalar == STRING:
        if cls is not str:
            errors.append((_render(path), f"expected string, got {value_sharp_v(value)}"))
    elif scalar == BOOLEAN:
        if cls is not bool:
            errors.append((_render(path), f"expected boolean, got {value_v(value)}"))
    elif scalar == UNTYPED and not _is_scalar(value):
        errors.append((_render(path), f"expected any scalar, got {value_v(value)}"))


def _map(value: Any, node: TypedNode, path: _Path, errors: _Errors) -> None:
    """``doMap`` (``mapValue``: a Go nil is a map) and ``visitMapItems``: an undeclared field stops
    the walk of its map."""
    if value is None:
        return
    if type(value) is not dict:
        errors.append((_render(path), f"expected map, got {value_v(value)}"))
        return
    field = node.field
    for key, item in value.items():
        child = field(key)
        if child is None:
            errors.append((_render((path, key)), "field not declared in schema"))
            return
        cls = type(item)
        if (cls is str or cls is int or cls is float or cls is bool) and child.scalar is not None:
            if child.scalar != UNTYPED and _SCALAR_OF[child.scalar] is not cls and not _numeric(child.scalar, cls):
                _scalar(item, child.scalar, (path, key), errors)
            continue  # a scalar that fits: nothing to walk
        _validate(item, child, (path, key), errors)


def _list(value: Any, node: TypedNode, path: _Path, errors: _Errors) -> None:
    """``doList`` (``listValue``: a Go nil is a list) and ``visitListItems``: an item without a usable
    key ends the list's walk; a key seen twice is an error on the list."""
    if value is None:
        return
    if type(value) is not list:
        errors.append((_render(path), f"expected list, got {value_v(value)}"))
        return
    item_node = node.item
    if not node.associative:
        for index, item in enumerate(value):
            _validate(item, item_node, (path, index), errors)
        return
    seen: set[Any] = set()
    for index, item in enumerate(value):
        element, problem = _path_element(item, node)
        if element is None:
            errors.append((_render(path), f"element {index}: {problem}"))
            return
        identity: Any = tuple((name, type(value) is bool, value) for name, value in element)  # true is not 1
        try:
            hash(identity)
        except TypeError:  # a key value that is a map or list: compared by its rendering
            identity = _render_element(element)
        if identity in seen:
            errors.append((_render(path), f"duplicate entries for key {_render_element(element)}"))
        seen.add(identity)
        _validate(item, item_node, (path, element), errors)


def _path_element(item: Any, node: TypedNode) -> tuple[PathElement | None, str]:
    """``listItemToPathElement``: the item's key fields (sorted, ``keyMap.Sort()``) or a set's value;
    or None and the reason there is none."""
    keys = node.keys
    cls = type(item)
    if keys:
        if item is None:
            return None, "associative list with keys may not have a null element"
        if cls is not dict:
            return None, "associative list with keys may not have non-map elements"
        defaults = node.key_defaults
        parts = [
            (key, item[key] if key in item else defaults[key])
            for key in node.sorted_keys
            if key in item or key in defaults
        ]
        if not parts:
            quoted = " ".join(go_quote(k) for k in keys)
            return None, (
                f"associative list with keys has an element that omits all key fields [{quoted}] "
                "(and doesn't have default values for any key fields)"
            )
        return PathElement(parts), ""
    if cls is dict:
        return None, "associative list without keys has an element that's a map type"
    if cls is list:
        return None, "not supported: associative list with lists as elements"
    if item is None:
        return None, "associative list without keys has an element that's an explicit null"
    return PathElement((("", item),)), ""


def _to_string(value: Any) -> str:
    """structured-merge-diff ``value.ToString``."""
    cls = type(value)
    if value is None:
        return "null"
    if cls is bool:
        return "true" if value else "false"
    if cls is int:
        return str(value)
    if cls is float:
        return format_double(value)
    if cls is str:
        return go_quote(value)
    if cls is list:
        return "[" + ",".join(_to_string(item) for item in value) + "]"
    if cls is dict:
        return "".join(f"{k}={_to_string(v)}" for k, v in value.items())
    return "{{undefined}}"


def atomic_paths(value: dict[str, Any], node: TypedNode) -> list[str]:
    """``findAtomics``: the atomic lists, maps and structs the patch sets, list items by index, in
    the patch's order (below the fields a struct declares and the items of every list)."""
    found: list[str] = []
    _atomics(value, node, (), found)
    return found


def _atomics(value: Any, node: TypedNode, path: _Path, found: list[str]) -> None:
    cls = type(value)
    if cls is dict and node.has_map:
        if node.map_atomic:
            found.append(_render(path))
        for key, item in value.items():
            kind = type(item)
            if (kind is dict or kind is list) and node.is_field(key):
                child = node.field(key)
                if child is not None:
                    _atomics(item, child, (path, key), found)
    if cls is list and node.has_list:
        if node.list_atomic:
            found.append(_render(path))
        item_node = node.item
        for index, item in enumerate(value):
            _atomics(item, item_node, (path, index), found)
