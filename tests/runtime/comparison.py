"""Chainsaw's partial assertion trees (semantics §12); the CLI's tidy-then-equal comparison is
:func:`celmut.cli.kyverno_suites.tidy`."""

from __future__ import annotations

from typing import Any


def partial_match(actual: Any, expected: Any, path: str = "") -> list[str]:
    """Chainsaw semantics: maps are subsets, lists have the same length and match element-wise.

    Returns the mismatches (empty when it matches). Keys written as ``(...)`` are JMESPath
    expressions, which these tests do not evaluate: they are skipped.
    """
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path or '.'}: expected a map, got {type(actual).__name__}"]
        problems: list[str] = []
        for key, value in expected.items():
            if isinstance(key, str) and key.startswith("(") and key.endswith(")"):
                continue
            if key not in actual:
                problems.append(f"{path}.{key}: missing")
                continue
            problems += partial_match(actual[key], value, f"{path}.{key}")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            got = len(actual) if isinstance(actual, list) else type(actual).__name__
            return [f"{path}: expected a list of {len(expected)}, got {got}"]
        problems = []
        for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
            problems += partial_match(a, e, f"{path}[{index}]")
        return problems
    if actual != expected or (
        type(actual) is not type(expected)
        and not (isinstance(actual, int | float) and isinstance(expected, int | float))
    ):
        return [f"{path}: expected {expected!r}, got {actual!r}"]
    return []
