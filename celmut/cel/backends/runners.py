"""celmut's two CEL engines, as runners behind cel-python's Environment/Runner facade.

celpy's public extension points are used as designed: :class:`CelpyEnvironment` subclasses
``celpy.Environment`` (its parser is :class:`~celmut.cel.parser.ExtendedCELParser`, a
``CELParser`` subclass) and the runners subclass ``celpy.Runner``. Instead of re-walking the Lark
tree on every call (celpy's own evaluator, which celmut does not use), :class:`PlannedRunner` plans
the checked AST into closures once (:mod:`celmut.cel.planner`), and :class:`CompiledRunner` goes
one step further: the plan becomes one generated Python function (:mod:`celmut.cel.backends.pycode`).

Two engines: ``compiled`` (:class:`CompiledBackend`, the default) and ``interpreted``
(:class:`InterpretedBackend`, the closures: the reference the compiled code is tested against).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import celpy

from celmut.cel import types as t
from celmut.cel.activation import Activation
from celmut.cel.backends.base import BackendOptions, Folded
from celmut.cel.backends.pycode import compile_expression
from celmut.cel.backends.pycode_gen import generate
from celmut.cel.checker import CheckResult
from celmut.cel.declarations import Overload
from celmut.cel.errors import CelCostError, CelError, CelEvaluationError
from celmut.cel.evalcontext import EvalContext
from celmut.cel.planner import Fn, Planner, PlanRecord

_NO_SLOTS: list[Any] = []


class CelpyEnvironment(celpy.Environment):
    """celpy's Environment facade over celmut's function table and planner.

    ``celpy.Environment.__init__`` is not called: it would build celpy's stock Lark grammar, which
    celmut never uses (the extended grammar is built once by the parser module).
    """

    def __init__(
        self,
        functions: Mapping[str, list[Overload]],
        options: BackendOptions,
        runner_class: type[PlannedRunner] | None = None,
    ) -> None:
        self.package = None
        self.annotations = {}
        self.runner_class = runner_class or PlannedRunner
        self.planned_runner: type[PlannedRunner] = self.runner_class
        self.functions = functions
        self.options = options

    def program(self, expr: Any, functions: Any = None) -> PlannedRunner:
        return self.planned_runner(self, expr, self.functions)


class PlannedRunner(celpy.Runner):
    """A compiled CEL program: closures planned once, evaluated many times."""

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
        record = self._plan_record()
        planner = Planner(functions, ast.types, kyverno_or_value=environment.options.kyverno_or_value, record=record)
        planned = planner.plan(ast.expr)
        self._slots = planner.slot_count
        self._static_cost = planner.static_cost
        is_constant, value = planner.constant(planned)
        if is_constant:  # a literal tree (``[JSONPatch{op: "add", path: "/x", value: 1}]``), built once
            self.folded = Folded(value)
            self._fn = planned
        else:
            self._fn = self._evaluator(ast, planner, record, planned)
        self.source = source
        self.checked = ast
        self.result_type: t.CelType = ast.type
        self.references = ast.references

    def _plan_record(self) -> PlanRecord | None:
        return None

    def _evaluator(self, ast: CheckResult, planner: Planner, record: PlanRecord | None, planned: Fn) -> Fn:
        """What :meth:`evaluate` calls: here the planned closures."""
        return planned

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


class CompiledRunner(PlannedRunner):
    """A program whose plan became one generated Python function (the planner's closures stay for
    what the function leaves to them, and for an expression too large to be worth compiling)."""

    generated = False  # whether a generated function runs (an expression too large runs the closures)
    fallbacks = 0  # subtrees the generated code leaves to planner closures

    def _plan_record(self) -> PlanRecord | None:
        return PlanRecord()

    def _evaluator(self, ast: CheckResult, planner: Planner, record: PlanRecord | None, planned: Fn) -> Fn:
        assert record is not None
        compiled = compile_expression(ast.expr, planner, record, ast.types)
        if compiled is None:
            return planned
        self.generated = True
        self.fallbacks = compiled.fallbacks
        if not compiled.uses_slots:  # no planner closure reads a bound variable: no slot list to make
            self._slots = 0
        return compiled.function

    @property
    def python_source(self) -> str | None:
        """The generated module, written again from the checked tree (for tests and debugging; a
        program does not keep it: thousands are cached), or None when the closures run."""
        if not self.generated:
            return None
        environment = cast(CelpyEnvironment, self.environment)
        record = PlanRecord()
        kyverno_or_value = environment.options.kyverno_or_value
        planner = Planner(environment.functions, self.checked.types, kyverno_or_value=kyverno_or_value, record=record)
        planner.plan(self.checked.expr)
        return generate(self.checked.expr, planner, record, self.checked.types).source


class InterpretedBackend:
    """The checked tree planned into closures (``--cel-engine interpreted``)."""

    name = "interpreted"
    runner_class: type[PlannedRunner] = PlannedRunner

    def program(
        self,
        checked: CheckResult,
        source: str,
        functions: Mapping[str, list[Overload]],
        options: BackendOptions,
    ) -> PlannedRunner:
        return self.runner_class(CelpyEnvironment(functions, options, self.runner_class), checked, functions, source)


class CompiledBackend(InterpretedBackend):
    """Each checked expression compiled to one Python function (``--cel-engine compiled``)."""

    name = "compiled"
    runner_class = CompiledRunner
    evaluates_once = InterpretedBackend()  # for an expression evaluated once, generating code does not pay
