"""Plan a checked AST into a tree of Python closures, once per expression.

This is celmut's evaluator for cel-python, in the spirit of cel-go's interpreter planner: instead of
walking the parse tree on every evaluation (celpy's ``Evaluator``), each node becomes a closure
``fn(ctx) -> value`` built at compile time, with the work that does not depend on the input done
here: name resolution, overload narrowing, comprehension-variable slots, literal fast paths for
equality and membership, and the static cost of every region of the expression.

Errors are Python exceptions (:class:`CelEvaluationError`); ``&&``, ``||`` and the ``all``/``exists``
macros absorb them exactly as cel-go does (``false && error`` is ``false``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from celmut.cel import ast, costs
from celmut.cel import types as t
from celmut.cel import values as v
from celmut.cel.calls import (
    IMPL_ERRORS,
    ORDER_TESTS,
    call_costed,
    dispatch,
    impl_error,
    ordered,
    shares_one_impl,
)
from celmut.cel.declarations import Overload, assignable_overloads
from celmut.cel.errors import CelCostError, CelError, CelEvaluationError, describe
from celmut.cel.evalcontext import PER_CALL_COST_LIMIT, Budget, EvalContext
from celmut.cel.selection import (
    index_optional,
    index_value,
    select_field,
    select_if_present,
    select_path,
    test_field,
)
from celmut.cel.values import no_such_overload

Fn = Callable[[EvalContext], Any]


@dataclass
class PlanRecord:
    """What planning worked out, by node id, for a code generator that uses the planner as its
    reference: each planned node's closure (to evaluate a subtree the generator does not emit), each
    comprehension's variable slots and per-iteration cost, each bound variable's slot."""

    closures: dict[int, Fn] = field(default_factory=dict)
    loops: dict[int, tuple[int, int | None, int]] = field(default_factory=dict)  # first, second slot, cost
    bound: dict[int, int] = field(default_factory=dict)  # cel.bind / optMap variable slot


class Planner:
    def __init__(
        self,
        functions: Mapping[str, list[Overload]],
        types: Mapping[int, t.CelType],
        kyverno_or_value: bool = False,
        record: PlanRecord | None = None,
    ) -> None:
        self.functions = functions
        self.types = types
        self.kyverno_or_value = kyverno_or_value
        self.record = record
        self.scopes: list[dict[str, int]] = []
        self.slot_count = 0
        self.costs: list[int] = [0]  # static cost of the region being planned (top level, loop bodies)
        # the closures that return one value whatever the input (literals, aggregates of them), by id,
        # with that value (and the closure itself, so no other closure can reuse its id)
        self._constants: dict[int, tuple[Fn, Any]] = {}

    def plan(self, node: ast.Node) -> Fn:
        self.costs[-1] += 1
        method: Callable[[ast.Node], Fn] = getattr(self, f"_{type(node).__name__}")
        fn = method(node)
        if self.record is not None:
            self.record.closures[id(node)] = fn
        return fn

    @property
    def static_cost(self) -> int:
        return self.costs[0]

    def constant(self, fn: Fn) -> tuple[bool, Any]:
        """Whether ``fn`` (planned here) returns one value built at plan time, and that value."""
        known = self._constants.get(id(fn))
        return (False, None) if known is None else (True, known[1])

    def _constant(self, value: Any) -> Fn:
        def constant(ctx: EvalContext) -> Any:
            return value

        self._constants[id(constant)] = (constant, value)
        return constant

    def _folded(self, aggregate: Fn, parts: list[Fn]) -> Fn:
        """An aggregate of constants (``Object.spec.containers.securityContext{allowPrivilegeEscalation:
        false}`` in a ``map``) built once, here. Every evaluation shares the value (CEL values are
        immutable, and no consumer changes a result in place: ``to_plain`` and the patchers copy),
        and is still charged its static cost; nothing is built per evaluation, so nothing is counted
        as allocated. One that fails (a repeated map key) is left to fail at each evaluation."""
        if not all(id(part) in self._constants for part in parts):
            return aggregate
        scratch = EvalContext({}, [], Budget(), None, 0, PER_CALL_COST_LIMIT)
        try:
            value = aggregate(scratch)
        except CelError:
            return aggregate
        return self._constant(value)

    def _region(self, *nodes: ast.Node | None) -> tuple[list[Fn | None], int]:
        """Plan nodes as a separately costed region (a loop body); return their closures and cost."""
        self.costs.append(0)
        try:
            planned = [None if n is None else self.plan(n) for n in nodes]
        finally:
            cost = self.costs.pop()
        return planned, cost

    def _slot(self, name: str) -> int:
        slot = self.slot_count
        self.slot_count += 1
        self.scopes[-1][name] = slot
        return slot

    # --- leaves ---------------------------------------------------------------------------------

    def _Literal(self, node: ast.Literal) -> Fn:
        return self._constant(node.value)

    def _Ident(self, node: ast.Ident) -> Fn:
        name = node.name
        for scope in reversed(self.scopes):
            if name in scope:
                slot = scope[name]
                return lambda ctx: ctx.slots[slot]

        def variable(ctx: EvalContext) -> Any:
            try:
                return ctx.vars[name]
            except KeyError:
                raise CelEvaluationError(f"no such attribute: {name}") from None

        return variable

    # --- selection ------------------------------------------------------------------------------

    def _Select(self, node: ast.Select) -> Fn:
        field = node.field
        if node.test_only:
            operand = self.plan(node.operand)
            return lambda ctx: test_field(operand(ctx), field)
        if node.optional:
            operand = self.plan(node.operand)
            return lambda ctx: select_if_present(operand(ctx), field)
        # A chain of plain selections (object.metadata.labels) becomes one closure.
        fields: list[str] = []
        current: ast.Node = node
        while isinstance(current, ast.Select) and not current.optional and not current.test_only:
            fields.append(current.field)
            current = current.operand
            if len(fields) > 1:
                self.costs[-1] += 1
        fields.reverse()
        root = self.plan(current)
        if len(fields) == 1:

            def select_one(ctx: EvalContext) -> Any:
                value = root(ctx)
                if type(value) is dict:
                    try:
                        return value[field]
                    except KeyError:
                        raise CelEvaluationError(f"no such key: {field}") from None
                return select_field(value, field)

            return select_one
        path = tuple(fields)

        def select_chain(ctx: EvalContext) -> Any:
            return select_path(root(ctx), path)

        return select_chain

    def _Index(self, node: ast.Index) -> Fn:
        operand, index = self.plan(node.operand), self.plan(node.index)
        if node.optional:
            return lambda ctx: index_optional(operand(ctx), index(ctx))
        if isinstance(node.index, ast.Literal) and type(node.index.value) is str:
            key = node.index.value

            def index_key(ctx: EvalContext) -> Any:
                value = operand(ctx)
                if type(value) is dict:
                    try:
                        return value[key]
                    except KeyError:
                        raise CelEvaluationError(f"no such key: {key}") from None
                return index_value(value, key)

            return index_key
        return lambda ctx: index_value(operand(ctx), index(ctx))

    # --- calls ----------------------------------------------------------------------------------

    def _Call(self, node: ast.Call) -> Fn:
        form = call_form(node)
        if form == CALL:
            return self._call(node)
        if form == OPTIONAL_OR:
            return self._optional_or(node)
        return _SPECIAL[form](self, node)

    def _call(self, node: ast.Call) -> Fn:
        arg_nodes = ([node.target] if node.target is not None else []) + node.args
        overloads = self.overloads(node)
        args = [self.plan(a) for a in arg_nodes]
        name = node.function
        if not overloads:
            return _fails(CelEvaluationError(f"no such overload: {name}"), args)
        if shares_one_impl(overloads):
            return _direct_call(name, overloads[0], args)
        return _dispatch_call(name, overloads, args)

    def overloads(self, node: ast.Call) -> list[Overload]:
        """The overloads a call may run, narrowed by the checker's argument types."""
        member = node.target is not None
        arg_nodes = ([node.target] if node.target is not None else []) + node.args
        return self._narrow([o for o in self.functions.get(node.function, []) if o.member == member], arg_nodes)

    def _narrow(self, overloads: list[Overload], arg_nodes: list[ast.Node]) -> list[Overload]:
        """Drop overloads the checker's argument types rule out (dyn keeps every candidate)."""
        arg_types = [self.types.get(id(a), t.DYN) for a in arg_nodes]
        return assignable_overloads(overloads, arg_types) or overloads

    def _and(self, node: ast.Call) -> Fn:
        return _logical([self.plan(a) for a in node.args], stop=False, name="_&&_")

    def _or(self, node: ast.Call) -> Fn:
        return _logical([self.plan(a) for a in node.args], stop=True, name="_||_")

    def _not(self, node: ast.Call) -> Fn:
        operand = self.plan(node.args[0])

        def negate(ctx: EvalContext) -> bool:
            value = operand(ctx)
            if value is True:
                return False
            if value is False:
                return True
            raise no_such_overload("!_", value)

        return negate

    def _conditional(self, node: ast.Call) -> Fn:
        cond, then, otherwise = (self.plan(a) for a in node.args)

        def conditional(ctx: EvalContext) -> Any:
            c = cond(ctx)
            if c is True:
                return then(ctx)
            if c is False:
                return otherwise(ctx)
            raise no_such_overload("_?_:_", c)

        return conditional

    def _equality(self, node: ast.Call) -> Fn:
        negate = node.function == "_!=_"
        left_node, right_node = equality_operands(node)
        left = self.plan(left_node)
        if isinstance(right_node, ast.Literal):
            self.costs[-1] += 1
            literal = right_node.value
            if type(literal) is str:
                return (lambda ctx: left(ctx) != literal) if negate else (lambda ctx: left(ctx) == literal)
            if literal is None or type(literal) is bool:
                return (lambda ctx: left(ctx) is not literal) if negate else (lambda ctx: left(ctx) is literal)
        right = self.plan(right_node)
        equals = costs.equals  # charged by what it compares (cel-go runtimecost.go: equals, not_equals)
        if negate:
            return lambda ctx: not equals(ctx, left(ctx), right(ctx))
        return lambda ctx: equals(ctx, left(ctx), right(ctx))

    def _in(self, node: ast.Call) -> Fn:
        element_node, container_node = node.args
        element = self.plan(element_node)
        if isinstance(container_node, ast.CreateList) and all(
            not e.optional and isinstance(e.value, ast.Literal) and type(e.value.value) is str
            for e in container_node.elements
        ):
            self.costs[-1] += 1
            strings = frozenset(cast(ast.Literal, e.value).value for e in container_node.elements)

            def in_strings(ctx: EvalContext) -> bool:
                value = element(ctx)
                return type(value) is str and value in strings

            return in_strings
        container = self.plan(container_node)
        contains = costs.contains  # a list costs its length (cel-go runtimecost.go: in_list)
        return lambda ctx: contains(ctx, element(ctx), container(ctx))

    def _ordering(self, node: ast.Call) -> Fn:
        left, right = (self.plan(a) for a in node.args)
        name = node.function
        test = ORDER_TESTS[name]

        def order(ctx: EvalContext) -> bool:
            a, b = left(ctx), right(ctx)
            if type(a) is int and type(b) is int:
                return test(-1 if a < b else (1 if a > b else 0))
            return ordered(ctx, a, b, name)

        return order

    def _optional_or(self, node: ast.Call) -> Fn:
        """``opt.or(other)`` / ``opt.orValue(default)``: the argument is evaluated only when needed.

        Kyverno rewrites ``x.orValue(y)`` to ``__orValueCompat__(x, y)`` (pkg/cel/compiler/env.go
        ``OrValueCompatEnvOptions``), a strict function: both are evaluated, an error in either fails
        (``object.missing.orValue(2)`` is ``no such key``), and a value that is no optional is returned."""
        assert node.target is not None
        target, alternative = self.plan(node.target), self.plan(node.args[0])
        name = node.function
        kyverno_compat = self.kyverno_or_value and name == "orValue"

        def optional_or(ctx: EvalContext) -> Any:
            value = target(ctx)
            if kyverno_compat:
                default = alternative(ctx)
                if isinstance(value, v.OptionalValue):
                    return value.value if value.present else default
                return value
            if isinstance(value, v.OptionalValue):
                if value.present:
                    return value.value if name == "orValue" else value
                other = alternative(ctx)
                if name == "or" and not isinstance(other, v.OptionalValue):
                    raise no_such_overload(name, value, other)
                return other
            raise no_such_overload(name, value)

        return optional_or

    def _dyn(self, node: ast.Call) -> Fn:
        if len(node.args) != 1:
            return self._call(node)
        return self.plan(node.args[0])

    # --- aggregates -----------------------------------------------------------------------------

    def _CreateList(self, node: ast.CreateList) -> Fn:
        elements = [(self.plan(e.value), e.optional) for e in node.elements]
        size = costs.allocation_bytes([None] * len(elements))
        if not any(optional for _, optional in elements):
            fns = [fn for fn, _ in elements]

            def create_plain_list(ctx: EvalContext) -> list[Any]:
                ctx.allocate(size)
                return [fn(ctx) for fn in fns]

            return self._folded(create_plain_list, fns)

        def create_list(ctx: EvalContext) -> list[Any]:
            ctx.allocate(size)
            out = []
            for fn, optional in elements:
                value = fn(ctx)
                if optional:
                    if not isinstance(value, v.OptionalValue):
                        raise no_such_overload("optional list element", value)
                    if value.present:
                        out.append(value.value)
                else:
                    out.append(value)
            return out

        return create_list

    def _CreateMap(self, node: ast.CreateMap) -> Fn:
        entries = [(self.plan(e.key), self.plan(e.value), e.optional) for e in node.entries]
        size = costs.allocation_bytes(dict.fromkeys(range(len(entries))))

        def create_map(ctx: EvalContext) -> dict[Any, Any]:
            ctx.allocate(size)
            out: dict[Any, Any] = {}
            for key_fn, value_fn, optional in entries:
                key = v.require_map_key(key_fn(ctx))
                value = value_fn(ctx)
                if optional:
                    if not isinstance(value, v.OptionalValue):
                        raise no_such_overload("optional map entry", value)
                    if not value.present:
                        continue
                    value = value.value
                if key in out:
                    raise CelEvaluationError(f"Failed with repeated key: {describe(key)}")
                out[key] = value
            return out

        if any(optional for _, _, optional in entries):
            return create_map
        return self._folded(create_map, [fn for key_fn, value_fn, _ in entries for fn in (key_fn, value_fn)])

    def _CreateStruct(self, node: ast.CreateStruct) -> Fn:
        type_name = node.type_name
        fields = [(f.name, self.plan(f.value), f.optional) for f in node.fields]
        size = costs.allocation_bytes(dict.fromkeys(range(len(fields))))

        def create_struct(ctx: EvalContext) -> v.StructValue:
            ctx.allocate(size)
            out: dict[str, Any] = {}
            for name, fn, optional in fields:
                value = fn(ctx)
                if optional:
                    if not isinstance(value, v.OptionalValue):
                        raise no_such_overload("optional field", value)
                    if not value.present:
                        continue
                    value = value.value
                out[name] = value
            return v.StructValue(type_name, out)

        if any(optional for _, _, optional in fields):
            return create_struct
        return self._folded(create_struct, [fn for _, fn, _ in fields])

    # --- macros ---------------------------------------------------------------------------------

    def _Comprehension(self, node: ast.Comprehension) -> Fn:
        from celmut.cel.comprehensions import plan_comprehension

        range_fn = self.plan(node.range)
        self.scopes.append({})
        try:
            first = self._slot(node.var)
            second = self._slot(node.var2) if node.var2 else None
            (body, predicate), cost = self._region(node.body, node.predicate)
        finally:
            self.scopes.pop()
        assert body is not None
        if self.record is not None:
            self.record.loops[id(node)] = (first, second, max(cost, 1))
        return plan_comprehension(node, range_fn, body, predicate, first, second, max(cost, 1))

    def _Bind(self, node: ast.Bind) -> Fn:
        init = self.plan(node.init)
        self.scopes.append({})
        try:
            slot = self._slot(node.var)
            body = self.plan(node.body)
        finally:
            self.scopes.pop()
        if self.record is not None:
            self.record.bound[id(node)] = slot

        def bind(ctx: EvalContext) -> Any:
            ctx.slots[slot] = init(ctx)
            return body(ctx)

        return bind

    def _OptMap(self, node: ast.OptMap) -> Fn:
        target = self.plan(node.target)
        self.scopes.append({})
        try:
            slot = self._slot(node.var)
            body = self.plan(node.body)
        finally:
            self.scopes.pop()
        if self.record is not None:
            self.record.bound[id(node)] = slot
        flat = node.flat

        def opt_map(ctx: EvalContext) -> Any:
            value = target(ctx)
            if not isinstance(value, v.OptionalValue):
                raise no_such_overload("optMap" if not flat else "optFlatMap", value)
            if not value.present:
                return value
            ctx.slots[slot] = value.value
            result = body(ctx)
            if flat:
                if not isinstance(result, v.OptionalValue):
                    raise no_such_overload("optFlatMap", result)
                return result
            return v.OptionalValue(result)

        return opt_map


_SPECIAL: dict[str, Callable[[Planner, ast.Call], Fn]] = {
    "_&&_": Planner._and,
    "_||_": Planner._or,
    "!_": Planner._not,
    "_?_:_": Planner._conditional,
    "_==_": Planner._equality,
    "_!=_": Planner._equality,
    "@in": Planner._in,
    "_<_": Planner._ordering,
    "_<=_": Planner._ordering,
    "_>_": Planner._ordering,
    "_>=_": Planner._ordering,
    "dyn": Planner._dyn,
}


CALL, OPTIONAL_OR = "call", "optional or"


def call_form(node: ast.Call) -> str:
    """How a call is evaluated: an operator or macro-like function of its own (its name: ``_&&_``,
    ``_==_``, ``dyn`` …), :data:`OPTIONAL_OR` (``opt.or(x)``, ``opt.orValue(x)``: lazy), or a
    library :data:`CALL`."""
    if node.target is None:
        return node.function if node.function in _SPECIAL else CALL
    return OPTIONAL_OR if len(node.args) == 1 and node.function in ("or", "orValue") else CALL


def equality_operands(node: ast.Call) -> tuple[ast.Node, ast.Node]:
    """``==``/``!=``'s operands with a literal on the right when there is one (its fast paths)."""
    left, right = node.args
    if isinstance(left, ast.Literal) and not isinstance(right, ast.Literal):
        return right, left
    return left, right


def _logical(operands: list[Fn], stop: bool, name: str) -> Fn:
    """n-ary ``&&`` (stop on False) / ``||`` (stop on True), commutative over errors as in cel-go."""

    def logical(ctx: EvalContext) -> bool:
        error: CelEvaluationError | None = None
        for operand in operands:
            try:
                value: object = operand(ctx)
            except CelCostError:
                raise
            except CelEvaluationError as ex:
                error = error or ex
                continue
            if value is stop:
                return stop
            if value is not (not stop):
                error = error or no_such_overload(name, value)
        if error is not None:
            try:
                raise error
            finally:
                error = None  # no cycle frame -> error -> traceback -> frame (its garbage holds the request)
        return not stop

    return logical


def _fails(error: CelEvaluationError, args: list[Fn]) -> Fn:
    def failing(ctx: EvalContext) -> Any:
        for arg in args:
            arg(ctx)
        raise error

    return failing


def _direct_call(name: str, overload: Overload, args: list[Fn]) -> Fn:
    """All candidate overloads share one implementation that dispatches on its own."""
    impl = overload.impl
    if overload.needs_context or overload.cost is not None:

        def call_with_context(ctx: EvalContext) -> Any:
            return call_costed(ctx, name, overload, [a(ctx) for a in args])

        return call_with_context
    if len(args) == 1:
        (a0,) = args

        def call1(ctx: EvalContext) -> Any:
            x = a0(ctx)
            try:
                return impl(x)
            except CelError:
                raise
            except IMPL_ERRORS as ex:
                raise impl_error(name, ex) from ex

        return call1
    if len(args) == 2:
        a0, a1 = args

        def call2(ctx: EvalContext) -> Any:
            x, y = a0(ctx), a1(ctx)
            try:
                return impl(x, y)
            except CelError:
                raise
            except IMPL_ERRORS as ex:
                raise impl_error(name, ex) from ex

        return call2

    def call_n(ctx: EvalContext) -> Any:
        values = [a(ctx) for a in args]
        try:
            return impl(*values)
        except CelError:
            raise
        except IMPL_ERRORS as ex:
            raise impl_error(name, ex) from ex

    return call_n


def _dispatch_call(name: str, overloads: list[Overload], args: list[Fn]) -> Fn:
    """Pick the first overload whose parameter guards accept the runtime arguments."""

    def dispatching(ctx: EvalContext) -> Any:
        return dispatch(ctx, name, overloads, tuple(a(ctx) for a in args))

    return dispatching
