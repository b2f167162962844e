"""Field selection, presence tests and indexing on CEL values, including the optional forms.

Selection on an optional value is optional-aware, as in cel-go: once a path has gone through an
optional (``a.?b.c``), each later step yields ``optional.none()`` instead of failing when a field
or key is missing.
"""

from __future__ import annotations

from typing import Any

from celmut.cel import values as v
from celmut.cel.errors import CelEvaluationError, describe
from celmut.cel.values import no_such_overload


def select_field(value: Any, field: str) -> Any:
    """``value.field`` for maps, typed objects, records and optionals."""
    if isinstance(value, dict):
        try:
            return value[field]
        except KeyError:
            raise CelEvaluationError(f"no such key: {field}") from None
    if isinstance(value, v.OptionalValue):
        return select_optional(value, field)
    select = getattr(value, "cel_select", None)
    if select is not None:
        return select(field)
    # cel-go interpreter/attributes.go refQualify: a qualifier on a value that is no container is a
    # missing key (cel-spec optionals.textproto "map_present_key_invalid_field")
    raise CelEvaluationError(f"no such key: {field}")


def select_path(value: Any, path: tuple[str, ...]) -> Any:
    """``value.a.b.c`` for a chain of plain selections; plain maps take the fast path (hot: every
    ``object.metadata.labels`` of every evaluation)."""
    for name in path:
        if type(value) is dict:
            try:
                value = value[name]
            except KeyError:
                raise CelEvaluationError(f"no such key: {name}") from None
        else:
            value = select_field(value, name)
    return value


def _has(value: Any, field: str) -> bool:
    if isinstance(value, dict):
        return field in value
    has = getattr(value, "cel_has", None)
    if has is not None:
        return bool(has(field))
    raise CelEvaluationError(f"invalid type for field selection: '{v.type_name(value)}'")


def test_field(value: Any, field: str) -> bool:
    """``has(value.field)``."""
    if isinstance(value, v.OptionalValue):
        return value.present and _has(value.value, field)
    return _has(value, field)


def select_optional(value: Any, field: str) -> v.OptionalValue:
    """``value.?field``: optional.of(value.field) when present, else optional.none()."""
    if isinstance(value, v.OptionalValue):
        if not value.present:
            return value
        value = value.value
    if not isinstance(value, dict) and getattr(value, "cel_has", None) is None:
        raise CelEvaluationError(f"no such key: {field}")  # cel-go refQualify, as select_field
    if _has(value, field):
        return v.OptionalValue(select_field(value, field))
    return v.NONE


def select_if_present(value: Any, field: str) -> v.OptionalValue:
    """``value.?field``: cel-go qualifies an optional step with its presence test on
    (interpreter/attributes.go ``applyQualifiers`` → ``QualifyIfPresent`` → ``refQualify``), so on a
    value that is no container (``null.?metadata``, a cluster-scoped object's ``namespaceObject``) the
    field is absent: ``optional.none()``. A plain step after it (``x.?a.b``) stays strict."""
    if isinstance(value, v.OptionalValue):
        if not value.present:
            return value
        value = value.value
    if not isinstance(value, dict) and getattr(value, "cel_has", None) is None:
        return v.NONE
    return select_optional(value, field)


def _list_position(container: list[Any] | tuple[Any, ...], index: Any) -> int:
    kind = type(index)
    if kind is int or kind is v.UintType or (kind is float and index.is_integer()):
        position = int(index)
    else:
        raise no_such_overload("_[_]", container, index)
    if 0 <= position < len(container):
        return position
    raise CelEvaluationError(f"index out of bounds: {position}")


def _map_key(index: Any) -> Any:
    """A double key looks up the int of the same value (cel-go ``common/types/double.go``
    ``Double.Equal`` by heterogeneous equality; cel-spec fields.textproto
    ``map_key_mixed_numbers_double_key``): ``{1u: 'a'}[1.0]`` is ``'a'``, ``{1u: 'a'}[1.5]`` no key."""
    if type(index) is float and index.is_integer():
        return int(index)
    return index


def index_value(container: Any, index: Any) -> Any:
    """``container[index]`` for lists and maps (numeric keys compare by value)."""
    if isinstance(container, list | tuple):
        return container[_list_position(container, index)]
    if isinstance(container, dict):
        if isinstance(index, dict | list):
            raise no_such_overload("_[_]", container, index)
        try:
            return container[_map_key(index)]
        except KeyError:
            raise CelEvaluationError(f"no such key: {describe(index)}") from None
        except TypeError:
            raise no_such_overload("_[_]", container, index) from None
    if isinstance(container, v.OptionalValue):
        return index_optional(container, index)
    index_fn = getattr(container, "cel_index", None)
    if index_fn is not None:
        return index_fn(index)
    raise no_such_overload("_[_]", container, index)


def index_optional(container: Any, index: Any) -> v.OptionalValue:
    """``container[?index]``."""
    if isinstance(container, v.OptionalValue):
        if not container.present:
            return container
        container = container.value
    if isinstance(container, list | tuple):
        kind = type(index)
        if not (kind is int or kind is v.UintType or (kind is float and index.is_integer())):
            raise no_such_overload("_[?_]", container, index)
        position = int(index)
        return v.OptionalValue(container[position]) if 0 <= position < len(container) else v.NONE
    if not isinstance(container, dict):
        return v.NONE  # cel-go refQualify with its presence test on, as select_if_present
    try:
        key = _map_key(index)
        return v.OptionalValue(container[key]) if key in container else v.NONE
    except TypeError:
        raise no_such_overload("_[?_]", container, index) from None
