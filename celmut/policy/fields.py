"""Typed, path-aware reading of policy documents that collects every error instead of stopping.

``Reader(doc, "spec", errors)`` gives typed accessors (``string``, ``boolean``, ``integer``,
``string_list``, ``child``, ``items``) that validate like a CRD schema would — type, enum, range,
required — and record a :class:`~celmut.policy.errors.FieldError` with the full path on mismatch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from celmut.policy.errors import FieldError

_MISSING = object()


class Reader:
    def __init__(self, data: Any, path: str, errors: list[FieldError]) -> None:
        self.path = path
        self.errors = errors
        if data is None:
            data = {}
        if not isinstance(data, dict):
            self.fail(f"must be an object, got {_type_name(data)}")
            data = {}
        self.data: dict[str, Any] = data

    def fail(self, message: str, field: str | None = None) -> None:
        self.errors.append(FieldError(self.at(field) if field else self.path, message))

    def at(self, field: str) -> str:
        return f"{self.path}.{field}" if self.path else field

    def has(self, field: str) -> bool:
        return self.data.get(field) is not None

    def raw(self, field: str, default: Any = None) -> Any:
        value = self.data.get(field)
        return default if value is None else value

    def string(
        self, field: str, *, required: bool = False, default: str = "", enum: Sequence[str] | None = None
    ) -> str:
        value: object = self.data.get(field, _MISSING)
        if value is _MISSING or value is None:
            if required:
                self.fail("Required value", field)
            return default
        if not isinstance(value, str):
            self.fail(f"must be a string, got {_type_name(value)}", field)
            return default
        if required and not value:
            self.fail("Required value: must not be empty", field)
        if enum is not None and value not in enum:
            self.fail(f"Unsupported value: {value!r}: supported values: {', '.join(map(repr, enum))}", field)
            return default
        return value

    def boolean(self, field: str, default: bool) -> bool:
        value = self.data.get(field)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.fail(f"must be a boolean, got {_type_name(value)}", field)
            return default
        return value

    def integer(
        self, field: str, default: int | None = None, *, minimum: int | None = None, maximum: int | None = None
    ) -> int | None:
        value = self.data.get(field)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(f"must be an integer, got {_type_name(value)}", field)
            return default
        if minimum is not None and value < minimum:
            self.fail(f"Invalid value: {value}: must be at least {minimum}", field)
        if maximum is not None and value > maximum:
            self.fail(f"Invalid value: {value}: must be at most {maximum}", field)
        return value

    def string_list(self, field: str, *, required: bool = False) -> list[str] | None:
        value = self.data.get(field)
        if value is None:
            if required:
                self.fail("Required value", field)
            return None
        if not isinstance(value, list):
            self.fail(f"must be a list of strings, got {_type_name(value)}", field)
            return []
        out: list[str] = []
        for index, item in enumerate(value):
            if isinstance(item, str):
                out.append(item)
            else:
                self.fail(f"must be a string, got {_type_name(item)}", f"{field}[{index}]")
        return out

    def string_map(self, field: str) -> dict[str, str]:
        value = self.data.get(field)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(f"must be a map of strings, got {_type_name(value)}", field)
            return {}
        out: dict[str, str] = {}
        for key, item in value.items():
            if isinstance(item, str):
                out[str(key)] = item
            else:
                self.fail(f"must be a string, got {_type_name(item)}", f"{field}.{key}")
        return out

    def child(self, field: str) -> Reader:
        return Reader(self.data.get(field), self.at(field), self.errors)

    def optional_child(self, field: str) -> Reader | None:
        return self.child(field) if self.data.get(field) is not None else None

    def items(self, field: str, *, required: bool = False, max_items: int | None = None) -> Iterator[Reader]:
        value = self.data.get(field)
        if value is None:
            if required:
                self.fail("Required value", field)
            return
        if not isinstance(value, list):
            self.fail(f"must be a list, got {_type_name(value)}", field)
            return
        if max_items is not None and len(value) > max_items:
            self.fail(f"Too many: {len(value)}: must have at most {max_items} items", field)
        for index, item in enumerate(value):
            yield Reader(item, f"{self.at(field)}[{index}]", self.errors)

    def unknown_fields(self, known: Sequence[str]) -> None:
        """Reject fields a strict CRD schema would not accept."""
        for key in self.data:
            if key not in known:
                self.fail(f"unknown field {key!r}", str(key))


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
