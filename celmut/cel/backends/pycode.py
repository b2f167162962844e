"""CEL compiled to Python code: each checked expression becomes one generated Python function.

The planner (:mod:`celmut.cel.planner`) turns an expression into a tree of closures, one Python call
per node per evaluation. For the same expression this module writes one function
(:mod:`~celmut.cel.backends.pycode_gen`): locals instead of closures, ``object.metadata.labels`` as
one chained subscript, comprehensions as ``for`` loops, the checker's overload choice made once. It
is built from the planner's own plan, with the planner's cost figures and library call wrappers, and
any subtree it does not emit (nested too deeply for one Python function) is the planner's closure,
called from the generated code: the two never differ in value, error text or cost
(``tests/cel/test_pycode_differential.py`` runs every CEL test table and generated expressions on
both).

The source is ``compile()``d once, when the expression is (programs are cached by expression and
environment in :class:`~celmut.cel.environment.Environment`, and code objects by source, which
expressions differing only in their literals share), and executed in a namespace with only
the helpers of :mod:`~celmut.cel.backends.pycode_runtime` and a handful of builtins. No text of the
policy is ever part of the source (:mod:`~celmut.cel.backends.pycode_source`).

Cost. Kubernetes charges each expression its actual cost against the per-expression limit (cel-go's
``CostLimit``, set to ``PerCallLimit`` in ``apiserver/pkg/admission/plugin/cel/compile.go``) and the
request's remaining budget (``plugin/cel/activation.go`` ``Evaluate``); the limits stay exact here
(:class:`~celmut.cel.evalcontext.EvalContext`). Outside loops an expression's cost is known before it
runs — cel-go's estimator (``checker/cost.go``) gives it exactly, and only a comprehension's range
(``range size × (step + condition)``) or a library call's arguments can make the actual cost larger
— so the generated code does no accounting per node: the planner's static cost is charged once,
before anything runs, with the limit and deadline checks. What remains is counted where it arises,
inline: each loop iteration charges the body's static cost (``interpreter/runtimecost.go`` charges a
loop's steps each time they run), each costed library call its declared cost, equality, ordering
and ``in`` what they compare; the values built are counted against the request's allocation.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from types import CodeType

from celmut.cel import ast
from celmut.cel import types as t
from celmut.cel.backends.pycode_gen import generate
from celmut.cel.backends.pycode_runtime import NAMESPACE
from celmut.cel.planner import Fn, Planner, PlanRecord

# Beyond this many nodes an expression is left to the planner whole: generating and compiling its
# source would take longer than the evaluations it could speed up (measured: ~40 µs per node), and
# no policy expression on the hot path is that large.
MAX_NODES = 2_000


_CODE_CACHE_SIZE = 1024
_codes: OrderedDict[str, CodeType] = OrderedDict()
_codes_lock = threading.Lock()


def _code(source: str) -> CodeType:
    """The compiled module for ``source``, shared: expressions that differ only in their literals and
    names (``startsWith("gcr.io/1")``, ``startsWith("gcr.io/2")``) have the same source, because every
    value is a constant cell, and Python's ``compile()`` is most of the cost of generating code."""
    with _codes_lock:
        code = _codes.get(source)
        if code is not None:
            _codes.move_to_end(source)
            return code
    # one file name per source, so profilers (cProfile, py-spy) tell the functions apart
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    code = compile(source, f"<celmut compiled CEL {digest}>", "exec")
    with _codes_lock:
        _codes[source] = code
        if len(_codes) > _CODE_CACHE_SIZE:
            _codes.popitem(last=False)
    return code


@dataclass(frozen=True)
class CompiledFunction:
    """A generated function ``fn(ctx) -> value``, its source, how many subtrees it leaves to planner
    closures, and whether it needs ``ctx.slots`` (for them)."""

    function: Fn
    source: str
    fallbacks: int
    uses_slots: bool


def compile_expression(
    expr: ast.Node, planner: Planner, record: PlanRecord, types: Mapping[int, t.CelType]
) -> CompiledFunction | None:
    """The generated function for ``expr`` (planned by ``planner`` with ``record`` on), or None when
    the expression is too large to be worth compiling."""
    if sum(1 for _ in expr.walk()) > MAX_NODES:
        return None
    generated = generate(expr, planner, record, types)
    code = _code(generated.source)
    namespace = dict(NAMESPACE)
    exec(code, namespace)  # the source is made of generated names only (pycode_source)
    function: Fn = namespace["_make"](generated.constants)
    return CompiledFunction(function, generated.source, generated.fallbacks, generated.uses_slots)
