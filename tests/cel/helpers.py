"""Shared helpers for table-driven CEL tests: a case is (expression, expected) where expected is a
value (compared after ``to_plain``) or :class:`Err` (an error kind and a message fragment)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from celmut import cel
from celmut.cel import types


@dataclass(frozen=True)
class Err:
    kind: str  # compile | evaluation | cost
    fragment: str = ""


def evaluate(expression: str, profile: str = "kyverno", **bindings: Any) -> Any:
    variables = bindings.pop("variables", {})
    env = cel.Environment(profile, variables={name: types.DYN for name in variables})
    program = env.compile(expression)
    activation = cel.Activation(variable_values=variables, **bindings)
    return program.evaluate(activation)


def check_case(expression: str, expected: Any, profile: str = "kyverno", **bindings: Any) -> None:
    if isinstance(expected, Err):
        with pytest.raises(cel.CelError) as info:
            evaluate(expression, profile, **bindings)
        assert info.value.kind == expected.kind, f"{expression}: {info.value}"
        assert expected.fragment in str(info.value), f"{expression}: {info.value}"
        return
    result = cel.to_plain(evaluate(expression, profile, **bindings))
    assert result == expected and type(result) is type(expected), f"{expression} -> {result!r}, want {expected!r}"


def cases(table: list[tuple[str, Any]]) -> Any:
    """Parametrize over (expression, expected) rows, using the expression as the test id."""
    return pytest.mark.parametrize(("expression", "expected"), table, ids=[row[0][:60] for row in table])
