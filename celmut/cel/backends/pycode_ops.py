"""Operators and function calls in generated code.

``&&`` and ``||`` evaluate every operand until one decides, holding the first error back exactly as
cel-go (and the planner's ``_logical``) does: ``false && error`` is ``false``, ``error && false`` is
``false``, ``error && true`` is the error. ``?:`` and ``!`` want a bool. Equality and ordering take
the int and string fast paths inline and call the planner's charged helpers otherwise; a library call
runs the overload the checker's types leave, through the same wrappers as the planner
(:mod:`celmut.cel.calls`), so its cost, its strictness and its error text are the planner's.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext

from celmut.cel import ast, costs
from celmut.cel.backends.pycode_base import EmitterBase
from celmut.cel.calls import shares_one_impl
from celmut.cel.declarations import Overload
from celmut.cel.libs import core
from celmut.cel.planner import CALL, OPTIONAL_OR, call_form, equality_operands

_ORDER_OPERATORS = {"_<_": "<", "_<=_": "<=", "_>_": ">", "_>=_": ">="}


class OperatorEmitter(EmitterBase):
    def _Call(self, node: ast.Call) -> str:
        form = call_form(node)  # the planner's routing, so both treat each call the same way
        if form == CALL:
            return self._call(node)
        if form == OPTIONAL_OR:
            return self._optional_or(node)
        return _SPECIAL[form](self, node)

    def _call(self, node: ast.Call) -> str:
        src = self.src
        overloads = self.planner.overloads(node)
        arg_nodes = ([node.target] if node.target is not None else []) + node.args
        values = [self.emit(a) for a in arg_nodes]
        name = src.const(node.function)
        arguments = "".join(f"{value}, " for value in values)
        if not overloads:
            src.line(f"raise _EvalError({src.const(f'no such overload: {node.function}')})")
            return "None"
        if not shares_one_impl(overloads):
            return self.assign(f"_dispatch(ctx, {name}, {src.const(tuple(overloads))}, ({arguments}))")
        overload = overloads[0]
        if overload.needs_context or overload.cost is not None:
            if overload.impl is core.add and overload.cost is core.concat_cost and len(values) == 2:
                return self._concatenation(name, overload, values)
            return self._costed_call(name, overload, arguments)
        inline = _INLINE.get(overload.impl)
        result = src.name()
        checks = [src.is_str_check(value) for value in values]
        if inline is None or len(values) != inline[0] or None in checks:
            inline = None
        elif not any(checks):  # string constants: the operation alone
            src.line(f"{result} = {inline[1].format(*values)}")
            return result
        guard = " and ".join(check for check in checks if check)
        with src.indented(f"if {guard}:") if inline is not None else nullcontext():
            if inline is not None:  # what the implementation does on strings, without the call
                src.line(f"{result} = {inline[1].format(*values)}")
        with src.indented("else:") if inline is not None else nullcontext(), self.library_call(name):
            src.line(f"{result} = {src.const(overload.impl)}({arguments})")
        return result

    def _costed_call(self, name: str, overload: Overload, arguments: str) -> str:
        """:func:`celmut.cel.calls.call_costed`, inline: charge the cost, call, count what it built."""
        src = self.src
        result = src.name()
        with self.library_call(name):
            cost = overload.cost
            if cost is not None:
                context = "ctx, " if costs.takes_context(cost) else ""
                src.line(f"ctx.cost += {src.const(cost)}({context}{arguments})")
                src.line("if ctx.cost > ctx.limit or ctx.cost >= ctx.next_clock_check: ctx.charge(0)")
            context = "ctx, " if overload.needs_context else ""
            src.line(f"{result} = {src.const(overload.impl)}({context}{arguments})")
        with src.indented(f"if type({result}) is str and len({result}) <= {costs.MAX_STRING_BYTES}:"):
            self.allocate_expression(f"len({result}) + 48")
        with src.indented("else:"):
            src.line(f"{result} = _charge_result(ctx, {name}, {result})")
        return result

    def _concatenation(self, name: str, overload: Overload, values: list[str]) -> str:
        """``a + b`` on two strings, as :func:`celmut.cel.libs.core.concat_cost`, ``add`` and
        :func:`celmut.cel.calls.charge_result` do it (anything else: the costed call)."""
        src = self.src
        left, right = values
        checks = [src.is_str_check(left), src.is_str_check(right)]
        if None in checks:  # a constant that is no string: the costed call
            return self._costed_call(name, overload, f"{left}, {right}, ")
        result = src.name()
        fits = f"len({left}) + len({right}) <= {costs.MAX_STRING_BYTES}"
        with src.indented(f"if {' and '.join([*(check for check in checks if check), fits])}:"):
            src.line(f"{result} = {left} + {right}")
            src.line(f"ctx.cost += (len({result}) + 9) // 10")
            src.line("if ctx.cost > ctx.limit or ctx.cost >= ctx.next_clock_check: ctx.charge(0)")
            self.allocate_expression(f"len({result}) + 48")
        with src.indented("else:"):
            src.line(f"{result} = {self._costed_call(name, overload, f'{left}, {right}, ')}")
        return result

    # --- logic -------------------------------------------------------------------------------------

    def _logical(self, node: ast.Call, stop: bool) -> str:
        """n-ary ``&&`` (stops on false) or ``||`` (stops on true)."""
        src = self.src
        held, decided, result = src.name("_e"), src.name("_d"), src.name()
        stop_word, go_word = repr(stop), repr(not stop)
        name = src.const(node.function)
        src.line(f"{held} = None")
        src.line(f"{decided} = False")
        for position, operand in enumerate(node.args):
            with src.indented(f"if not {decided}:") if position else nullcontext():
                with self.holding_error(held):
                    value = self.emit(operand)
                with src.indented("else:", blocks=1):
                    src.line(f"if {value} is {stop_word}: {decided} = True")
                    src.line(f"elif {value} is not {go_word} and {held} is None: {held} = _nso({name}, {value})")
        with src.indented(f"if {decided}:"):
            src.line(f"{result} = {stop_word}")
            src.line(f"{held} = None")  # an absorbed error: no frame -> error -> traceback -> frame cycle
        with src.indented(f"elif {held} is not None:"):
            self.raise_held(held)
        with src.indented("else:"):
            src.line(f"{result} = {go_word}")
        return result

    def _and(self, node: ast.Call) -> str:
        return self._logical(node, stop=False)

    def _or(self, node: ast.Call) -> str:
        return self._logical(node, stop=True)

    def _not(self, node: ast.Call) -> str:
        src = self.src
        operand, result = self.emit(node.args[0]), src.name()
        src.line(f"if {operand} is True: {result} = False")
        src.line(f"elif {operand} is False: {result} = True")
        src.line(f"else: raise _nso({src.const('!_')}, {operand})")
        return result

    def _conditional(self, node: ast.Call) -> str:
        src = self.src
        condition_node, then_node, otherwise_node = node.args
        condition, result = self.emit(condition_node), src.name()
        with src.indented(f"if {condition} is True:"):
            src.line(f"{result} = {self.emit(then_node)}")
        with src.indented(f"elif {condition} is False:"):
            src.line(f"{result} = {self.emit(otherwise_node)}")
        with src.indented("else:"):
            src.line(f"raise _nso({src.const('_?_:_')}, {condition})")
        return result

    # --- comparisons ---------------------------------------------------------------------------------

    def _equality(self, node: ast.Call) -> str:
        negate = node.function == "_!=_"
        left_node, right_node = equality_operands(node)
        left = self.emit(left_node)
        if isinstance(right_node, ast.Literal):
            literal = right_node.value
            if type(literal) is str:
                return self.assign(f"{left} {'!=' if negate else '=='} {self.src.const(literal)}")
            if literal is None or type(literal) is bool:
                return self.assign(f"{left} {'is not' if negate else 'is'} {self.literal(literal)}")
        right = self.emit(right_node)
        equal = f"_equals(ctx, {left}, {right})"
        return self.assign(f"not {equal}" if negate else equal)

    def _in(self, node: ast.Call) -> str:
        element_node, container_node = node.args
        element = self.emit(element_node)
        if isinstance(container_node, ast.CreateList) and all(
            not e.optional and isinstance(e.value, ast.Literal) and type(e.value.value) is str
            for e in container_node.elements
        ):
            strings = frozenset(e.value.value for e in container_node.elements if isinstance(e.value, ast.Literal))
            return self.assign(f"type({element}) is str and {element} in {self.src.const(strings)}")
        container = self.emit(container_node)
        return self.assign(
            f"({element} in {container}) if type({container}) is dict and type({element}) is str "
            f"else _contains(ctx, {element}, {container})"
        )

    def _ordering(self, node: ast.Call) -> str:
        left, right = (self.emit(a) for a in node.args)
        operator = _ORDER_OPERATORS[node.function]
        name = self.src.const(node.function)
        return self.assign(
            f"({left} {operator} {right}) if type({left}) is int and type({right}) is int "
            f"else _ordered(ctx, {left}, {right}, {name})"
        )

    # --- optionals and dyn ---------------------------------------------------------------------------

    def _optional_or(self, node: ast.Call) -> str:
        """``opt.or(other)`` / ``opt.orValue(default)``: the argument is evaluated only when needed,
        except under Kyverno's strict ``__orValueCompat__`` (see the planner's ``_optional_or``)."""
        assert node.target is not None
        src = self.src
        function = node.function
        target, result = self.emit(node.target), src.name()
        if self.planner.kyverno_or_value and function == "orValue":
            default = self.emit(node.args[0])
            src.line(
                f"{result} = ({target}.value if {target}.present else {default}) "
                f"if isinstance({target}, _Optional) else {target}"
            )
            return result
        name = src.const(function)
        with src.indented(f"if not isinstance({target}, _Optional):"):
            src.line(f"raise _nso({name}, {target})")
        with src.indented(f"if {target}.present:"):
            src.line(f"{result} = {target}.value" if function == "orValue" else f"{result} = {target}")
        with src.indented("else:"):
            other = self.emit(node.args[0])
            if function == "or":
                src.line(f"if not isinstance({other}, _Optional): raise _nso({name}, {target}, {other})")
            src.line(f"{result} = {other}")
        return result

    def _dyn(self, node: ast.Call) -> str:
        if len(node.args) != 1:
            return self._call(node)
        return self.emit(node.args[0])


# Library implementations whose effect on strings is one Python operation: (arity, expression).
# Guarded by type(...) is str, so any other argument still goes through the implementation.
_INLINE: dict[Callable[..., object], tuple[int, str]] = {
    core.starts_with: (2, "{0}.startswith({1})"),
    core.ends_with: (2, "{0}.endswith({1})"),
    core.contains: (2, "{1} in {0}"),
    core.size: (1, "len({0})"),
}

_SPECIAL: dict[str, Callable[[OperatorEmitter, ast.Call], str]] = {
    "_&&_": OperatorEmitter._and,
    "_||_": OperatorEmitter._or,
    "!_": OperatorEmitter._not,
    "_?_:_": OperatorEmitter._conditional,
    "_==_": OperatorEmitter._equality,
    "_!=_": OperatorEmitter._equality,
    "@in": OperatorEmitter._in,
    "_<_": OperatorEmitter._ordering,
    "_<=_": OperatorEmitter._ordering,
    "_>_": OperatorEmitter._ordering,
    "_>=_": OperatorEmitter._ordering,
    "dyn": OperatorEmitter._dyn,
}
