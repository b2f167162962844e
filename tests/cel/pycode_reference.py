"""The compiled engine against its reference: the same expression on ``compiled`` (each expression
compiled to one Python function, :mod:`celmut.cel.backends.pycode`) and on ``interpreted`` (the
planner's closures it was generated from) must give

* the same value, compared with its exact Python types all the way down (a ``StructValue`` is not a
  ``dict``, a uint not an int, map order included), or the same error: class, kind and full text;
* the same cost spent, bytes allocated and exhaustion flag;
* the same outcome with each limit set just under, and at, what the planner spent: the
  per-expression limit, the request's budget and the request's allocation — so a cost error comes
  (or does not) at the same point on both, with the same text.

``tests/cel/helpers.py`` runs this for every row of every CEL table; ``test_pycode_differential.py``
for generated expressions.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from celmut import cel
from celmut.cel import types
from celmut.cel import values as v

COMPILED, REFERENCE = "compiled", "interpreted"


@dataclass(frozen=True)
class Run:
    result: Any  # fingerprint of the value, or ("error", class, kind, message)
    spent: int
    allocated: int
    exhausted: bool


def fingerprint(value: Any) -> Any:
    """A comparable picture of a CEL value that keeps every Python type (and NaN, and map order)."""
    cls = type(value)
    if isinstance(value, dict):
        items = tuple((fingerprint(key), fingerprint(item)) for key, item in value.items())
        return (cls.__name__, getattr(value, "type_name", None), items)
    if isinstance(value, list | tuple):
        return (cls.__name__, tuple(fingerprint(item) for item in value))
    if cls is float and math.isnan(value):
        return ("float", "nan")
    if isinstance(value, v.OptionalValue):
        return ("optional", value.present, fingerprint(value.value))
    return (cls.__name__, repr(value))


def run(expression: str, profile: str, engine: str, bindings: dict[str, Any], **budget: int) -> Run:
    """Evaluate on ``engine`` with fresh copies of the bindings and a budget without a deadline."""
    bindings = _copy(bindings)
    variables = bindings.pop("variables", {})
    given = bindings.pop("budget", None)
    limits = cel.Budget() if given is None else copy.copy(given)
    limits.deadline = None
    for name, value in budget.items():
        setattr(limits, name, value)
    env = cel.Environment(profile, variables={name: types.DYN for name in variables}, backend=engine)
    try:
        program = env.compile(expression)
        result = fingerprint(program.evaluate(cel.Activation(variable_values=variables, budget=limits, **bindings)))
    except cel.CelError as ex:
        result = ("error", type(ex).__name__, ex.kind, str(ex))
    return Run(result, limits.spent, limits.allocated, limits.exhausted)


def check_same_as_reference(expression: str, profile: str, bindings: dict[str, Any]) -> None:
    reference = run(expression, profile, REFERENCE, bindings)
    compiled = run(expression, profile, COMPILED, bindings)
    assert compiled == reference, f"{expression}: compiled {compiled} != planner {reference}"
    if reference.result[0] == "error" and reference.result[2] == "compile":
        return
    limits: list[dict[str, int]] = []
    for spent in {reference.spent - 1, reference.spent, reference.spent // 2}:
        if spent >= 0:
            limits += [{"per_call_limit": spent}, {"limit": spent}]
    if reference.allocated:
        limits += [{"max_bytes": reference.allocated - 1}, {"max_bytes": reference.allocated}]
    for limit in limits:
        reference = run(expression, profile, REFERENCE, bindings, **limit)
        compiled = run(expression, profile, COMPILED, bindings, **limit)
        assert compiled == reference, f"{expression} with {limit}: compiled {compiled} != planner {reference}"


def _copy(bindings: dict[str, Any]) -> dict[str, Any]:
    """Each run starts from the same state (stateful services, seeded random sources are copied)."""
    try:
        return copy.deepcopy(bindings)
    except Exception:  # an uncopyable binding: share it
        return dict(bindings)
