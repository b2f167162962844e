"""Shared helpers for table-driven CEL tests: a case is (expression, expected) where expected is a
value (compared after ``to_plain``) or :class:`Err` (an error kind and a message fragment).

Every case runs on every available engine (cel-python, and the C++ engine when cel-expr-python is
installed) and must give the expected outcome on each: the tables are differential tests. On
cel-python each case also runs on the planner, the reference of the compiled code, which must agree
exactly: value, error text, cost and allocation, and at the limits (:mod:`tests.cel.pycode_reference`). Known,
documented divergences are listed in :data:`DIVERGENCES` with the outcome each engine gives and the
reason; ``tests/cel/test_engine_differential.py`` proves each of them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from celmut import cel
from celmut.cel import types
from celmut.cel.backends.select import cpp_available
from tests.cel.pycode_reference import check_same_as_reference

ENGINES: tuple[str, ...] = ("celpy", "cpp") if cpp_available() else ("celpy",)
# and the planner, the compiled code's reference (check_case compares the two exactly)
CEL_ENGINES: tuple[str, ...] = (*ENGINES, "planner")


@dataclass(frozen=True)
class Err:
    kind: str  # compile | evaluation | cost
    fragment: str = ""


@dataclass(frozen=True)
class Unordered:
    """A list result whose order is not defined: the same elements, in any order."""

    items: list[Any]


@dataclass(frozen=True)
class Divergence:
    """An expression the engines evaluate differently on purpose: what each gives, and why."""

    celpy: Any
    cpp: Any
    reason: str


MAP_ORDER = (
    "iterating over a map: cel-python follows insertion order, cel-cpp a per-process hash order (like "
    "cel-go, whose map iteration order is random); CEL does not define it"
)
# expression → divergence. Keep this list small; each entry is proven by test_engine_differential.py.
DIVERGENCES: dict[str, Divergence] = {
    "{'a': 1, 'b': 2}.map(k, k)": Divergence(["a", "b"], Unordered(["a", "b"]), MAP_ORDER),
    "dyn({1: 2})[true]": Divergence(
        2,
        Err("evaluation", "no such key: true"),
        "cel-python's maps are Python dicts, where true == 1 (a known difference from cel-go, in docs/cel-divergences.md); "
        "cel-cpp keeps the keys apart as cel-go does",
    ),
}


def evaluate(expression: str, profile: str = "kyverno", engine: str = "celpy", **bindings: Any) -> Any:
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
    if isinstance(expected, Unordered):
        assert isinstance(result, list), f"[{engine}] {expression} -> {result!r}, want a list"
        assert sorted(map(repr, result)) == sorted(map(repr, expected.items)), f"[{engine}] {expression} -> {result!r}"
        return
    assert result == expected and type(result) is type(expected), (
        f"[{engine}] {expression} -> {result!r}, want {expected!r}"
    )


def _copy(bindings: dict[str, Any]) -> dict[str, Any]:
    """Bindings for an extra run: stateful services (fake clusters, transports, random sources) are
    copied so each engine starts from the same state and the caller's objects see one run."""
    try:
        return copy.deepcopy(bindings)
    except Exception:  # an uncopyable binding: share it
        return dict(bindings)


def check_case(expression: str, expected: Any, profile: str = "kyverno", **bindings: Any) -> None:
    divergence = DIVERGENCES.get(expression)
    for engine in ENGINES:
        want = expected if divergence is None else getattr(divergence, engine)
        run_with = bindings if engine == ENGINES[-1] else _copy(bindings)
        check_outcome(expression, want, outcome(expression, profile, engine, run_with), engine)
    check_same_as_reference(expression, profile, bindings)


def cases(table: list[tuple[str, Any]]) -> Any:
    """Parametrize over (expression, expected) rows, using the expression as the test id."""
    return pytest.mark.parametrize(("expression", "expected"), table, ids=[row[0][:60] for row in table])
