"""Shared helpers for table-driven CEL tests: a case is (expression, expected) where expected is a
value (compared after ``to_plain``) or :class:`Err` (an error kind and a message fragment).

Every case runs on the compiled engine and must give the expected outcome; it also runs on the
planner, the reference of the compiled code, which must agree exactly: value, error text, cost and
allocation, and at the limits (:mod:`tests.cel.pycode_reference`). The tables are differential tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from celmut import cel
from celmut.cel import types
from tests.cel.pycode_reference import COMPILED, REFERENCE, check_same_as_reference

# the compiled engine and the planner, its reference (check_case compares the two exactly)
CEL_ENGINES: tuple[str, ...] = (COMPILED, REFERENCE)


@dataclass(frozen=True)
class Err:
    kind: str  # compile | evaluation | cost
    fragment: str = ""


def evaluate(expression: str, profile: str = "kyverno", engine: str = COMPILED, **bindings: Any) -> Any:
    """Evaluate under the cost limits but no wall-clock deadline (unless the bindings give a budget):
    a row expecting a cost error must get it however slow a shared CI machine is, never the
    deadline's 'evaluation deadline exceeded' instead (tests/cel/test_bounds.py tests the deadline)."""
    variables = bindings.pop("variables", {})
    bindings.setdefault("budget", cel.Budget())
    env = cel.Environment(profile, variables={name: types.DYN for name in variables}, backend=engine)
    program = env.compile(expression)
    activation = cel.Activation(variable_values=variables, **bindings)
    return program.evaluate(activation)


def outcome(expression: str, profile: str, engine: str, bindings: dict[str, Any]) -> Any:
    """The plain result, or the raised :class:`~celmut.cel.CelError`."""
    try:
        return cel.to_plain(evaluate(expression, profile, engine, **dict(bindings)))
    except cel.CelError as ex:
        return ex


def check_outcome(expression: str, expected: Any, result: Any, engine: str) -> None:
    if isinstance(expected, Err):
        assert isinstance(result, cel.CelError), f"[{engine}] {expression} -> {result!r}, want {expected}"
        assert result.kind == expected.kind, f"[{engine}] {expression}: {result}"
        assert expected.fragment in str(result), f"[{engine}] {expression}: {result}"
        return
    if isinstance(result, cel.CelError):
        raise AssertionError(f"[{engine}] {expression} raised {result.kind}: {result}, want {expected!r}")
    assert result == expected and type(result) is type(expected), (
        f"[{engine}] {expression} -> {result!r}, want {expected!r}"
    )


def check_case(expression: str, expected: Any, profile: str = "kyverno", **bindings: Any) -> None:
    """The expected outcome on the compiled engine, and exactly the planner's (which run on copies
    of the bindings: stateful services start from the same state, the caller's objects see one run)."""
    check_outcome(expression, expected, outcome(expression, profile, COMPILED, bindings), COMPILED)
    check_same_as_reference(expression, profile, bindings)


def cases(table: list[tuple[str, Any]]) -> Any:
    """Parametrize over (expression, expected) rows, using the expression as the test id."""
    return pytest.mark.parametrize(("expression", "expected"), table, ids=[row[0][:60] for row in table])
