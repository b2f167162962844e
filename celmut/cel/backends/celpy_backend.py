"""The cel-python engine: celpy's Environment/Runner facade with celmut's planner as the runner.

celpy's public extension points are used as designed: :class:`CelpyEnvironment` subclasses
``celpy.Environment`` (its parser is :class:`~celmut.cel.parser.ExtendedCELParser`, a
``CELParser`` subclass) and :class:`PlannedRunner` subclasses ``celpy.Runner``. Instead of
re-walking the Lark tree on every call, the runner plans the checked AST into closures once
(:mod:`celmut.cel.planner`), which is what makes cel-python fast enough for admission.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import celpy

from celmut.cel import types as t
from celmut.cel.activation import Activation
from celmut.cel.backends.base import BackendOptions, Folded
from celmut.cel.checker import CheckResult
from celmut.cel.declarations import Overload
from celmut.cel.errors import CelCostError, CelError, CelEvaluationError
from celmut.cel.evalcontext import EvalContext
from celmut.cel.planner import Planner

_NO_SLOTS: list[Any] = []


class CelpyEnvironment(celpy.Environment):
    """celpy's Environment facade over celmut's function table and planner.

    ``celpy.Environment.__init__`` is not called: it would build celpy's stock Lark grammar, which
    celmut never uses (the extended grammar is built once by the parser module).
    """

    def __init__(self, functions: Mapping[str, list[Overload]], options: BackendOptions) -> None:
        self.package = None
        self.annotations = {}
        self.runner_class = PlannedRunner
        self.functions = functions
        self.options = options

    def program(self, expr: Any, functions: Any = None) -> PlannedRunner:
        return PlannedRunner(self, expr, self.functions)


class PlannedRunner(celpy.Runner):
    """A compiled CEL program: closures planned once, evaluated many times."""

    fallback_reason: str | None = None  # set when the C++ backend handed this expression to cel-python
    folded: Folded | None = None  # a literal tree's one value, built when planned

    def __init__(
        self,
        environment: CelpyEnvironment,
        ast: CheckResult,
        functions: Mapping[str, list[Overload]],
        source: str = "",
    ) -> None:
        # celpy's Runner expects its own Lark tree; this runner is built from celmut's checked AST instead.
        super().__init__(environment, ast, None)  # type: ignore[arg-type]
        planner = Planner(functions, ast.types, kyverno_or_value=environment.options.kyverno_or_value)
        self._fn = planner.plan(ast.expr)
        self._slots = planner.slot_count
        self._static_cost = planner.static_cost
        is_constant, value = planner.constant(self._fn)
        if is_constant:  # a literal tree (``[JSONPatch{op: "add", path: "/x", value: 1}]``), built once
            self.folded = Folded(value)
        self.source = source
        self.checked = ast
        self.result_type: t.CelType = ast.type
        self.references = ast.references

    # celpy's Runner.evaluate takes a celpy Context; celmut's programs take an Activation.
    def evaluate(self, activation: Activation) -> Any:  # type: ignore[override]
        budget = activation.budget
        limit = budget.limit - budget.spent  # what the request has left, at most the per-expression limit
        if limit > budget.per_call_limit:
            limit = budget.per_call_limit
        # positional: (vars, slots, budget, services, cost, limit); an expression without macro
        # variables shares one empty slot list (nothing is ever stored in it)
        ctx = EvalContext(
            activation.vars, [None] * self._slots if self._slots else _NO_SLOTS, budget, activation.services, 0, limit
        )
        try:
            ctx.charge(self._static_cost)
            return self._fn(ctx)
        except CelError:
            raise
        except RecursionError:
            raise CelCostError("expression evaluation is nested too deeply") from None
        except Exception as ex:  # a defect in celmut must not take down the caller
            raise CelEvaluationError(f"internal error evaluating expression: {type(ex).__name__}: {ex}") from ex
        finally:
            budget.spent += ctx.cost


class CelpyBackend:
    name = "celpy"

    def program(
        self,
        checked: CheckResult,
        source: str,
        functions: Mapping[str, list[Overload]],
        options: BackendOptions,
    ) -> PlannedRunner:
        return PlannedRunner(CelpyEnvironment(functions, options), checked, functions, source)
