"""Chainsaw's assertion trees (kyverno/kyverno-json, which chainsaw's ``assert`` and ``error`` use): the
expected document is a pattern the actual object must satisfy.

* a map matches when each of its keys does: a plain key must be present in the actual map and its
  value match; a ``(expression)`` key is a JMESPath projection of the actual node whose result must
  match the value (``(length(results)): 1``, ``(contains(keys(@), 'x')): false``);
* a list matches a list of the same length, element by element, in order;
* a scalar matches an equal scalar; a string ``($name)`` is first replaced by the binding ``name``
  (step templates: ``metadata.name: ($name)``);
* in an expression, ``$name`` reads a variable: chainsaw binds ``$error`` in an operation's ``expect``
  (``($error != null): true``: the operation must have failed).

Only what the stored Kyverno tests use is implemented; anything else is an error naming it, never a
silent pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import jmespath

_EXPRESSION = re.compile(r"^\((.*)\)$", re.DOTALL)
_BINDING = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")
_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def expression_of(key: object) -> str | None:
    """The JMESPath expression of a ``(expression)`` key, else None."""
    if isinstance(key, str):
        found = _EXPRESSION.match(key.strip())
        if found:
            return found.group(1)
    return None


def bound(value: Any, bindings: Mapping[str, Any]) -> Any:
    """``value`` with each ``($name)`` string replaced by its binding (recursively)."""
    if isinstance(value, dict):
        return {k: bound(v, bindings) for k, v in value.items()}
    if isinstance(value, list):
        return [bound(v, bindings) for v in value]
    expression = expression_of(value)
    if expression is not None:
        name = _BINDING.match(expression.strip())
        if name is None:
            raise ValueError(f"unsupported value expression {value!r}: only ($binding) is implemented")
        if name.group(1) not in bindings:
            raise KeyError(f"no binding {name.group(1)!r} for {value!r}")
        return bindings[name.group(1)]
    return value


def with_bindings(expression: str, bindings: Mapping[str, Any]) -> str:
    """``expression`` with each ``$name`` replaced by its binding as a JMESPath literal (kyverno-json binds
    ``$error``, ``$values``… as variables; python's jmespath has none, a literal means the same)."""

    def literal(found: re.Match[str]) -> str:
        name = found.group(1)
        if name not in bindings:
            raise KeyError(f"no binding {name!r} in {expression!r}")
        return "`" + json.dumps(bindings[name]).replace("`", "\\`") + "`"

    return _VARIABLE.sub(literal, expression)


def mismatches(expected: Any, actual: Any, path: str = "", bindings: Mapping[str, Any] | None = None) -> list[str]:
    """Why ``actual`` does not satisfy ``expected`` (empty: it does); ``bindings``: the ``$name`` variables
    the expressions may read (chainsaw's ``$error`` in an operation's ``expect``)."""
    where = path or "."
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected a map, got {type(actual).__name__}"]
        out: list[str] = []
        for key, value in expected.items():
            expression = expression_of(key)
            if expression is not None:
                try:
                    projected = jmespath.search(with_bindings(expression, bindings or {}), actual)
                except jmespath.exceptions.JMESPathError as ex:
                    out.append(f"{path}.{key}: {ex}")
                    continue
                out += mismatches(value, projected, f"{path}.{key}", bindings)
            elif key not in actual:
                out.append(f"{path}.{key}: field not found")
            else:
                out += mismatches(value, actual[key], f"{path}.{key}", bindings)
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{where}: expected a list, got {type(actual).__name__}"]
        if len(expected) != len(actual):
            return [f"{where}: lengths of slices don't match ({len(expected)} expected, {len(actual)} found)"]
        return [
            m
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for m in mismatches(e, a, f"{path}[{i}]", bindings)
        ]
    if _equal(expected, actual):
        return []
    return [f"{where}: expected {expected!r}, found {actual!r}"]


def _equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return float(expected) == float(actual)
    return bool(expected == actual)
