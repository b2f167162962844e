"""Which expressions cel-cpp may run without the cost charges it cannot make.

cel-cpp holds the GIL while it evaluates and charges nothing for its native operations: equality,
``in``, ``+``, string functions and the values it builds are free and cannot be interrupted. The
work of such an operation grows with its operands, and inside a comprehension it repeats, so an
expression could run for minutes or unfold a value sharing its parts into gigabytes (``[[…]].map(a,
[a, a, a, a]).map(…)…``). celmut's front end therefore sends to cel-python — where every
operation is charged by what it walks (:mod:`celmut.cel.costs`) — an expression where:

1. a comprehension ranges over, or ``cel.bind`` binds, a value built during the evaluation (a
   ``+``, a construction, another comprehension's result): chained, these grow exponentially;
2. inside a comprehension body, an operation whose work grows with its operands (``==``, ``!=``,
   ordering, ``in`` on a list, ``+``, native string functions) has no operand bounded by a literal
   or by the element being visited (repeated for every element, its work would be the product of
   the loop and a value's size);
3. a ``map``/``transformList`` body returns anything else than what is built from the element being
   visited, literals and scalars (the result would repeat a large value once per element, and
   unfold on its way back to Python).

What remains runs at most ``10,000 iterations × the input size`` natively; values crossing from
Python into cel-cpp (policy variables, library results) are charged by their unfolded size.
"""

from __future__ import annotations

from collections.abc import Callable

from celmut.cel import ast
from celmut.cel import types as t

# Values of these types have size one: any operation on them is O(1).
_UNIT_KINDS = frozenset({"int", "uint", "double", "bool", "null_type", "timestamp", "duration", "type"})
_COMPARISONS = frozenset({"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"})
_PREFIX_TESTS = frozenset({"startsWith", "endsWith"})  # work bounded by the shorter operand
_PASS_THROUGH = frozenset({"dyn", "optional.of", "optional.ofNonZeroValue", "value", "orValue", "or"})
_ROOTS = frozenset({"object", "oldObject", "request", "namespaceObject", "params", "exceptions", "variables"})


class Unbounded(Exception):
    """The expression must run on cel-python; the message says why."""


def check(expr: ast.Node, types: dict[int, t.CelType], python_call: Callable[[ast.Node], bool]) -> None:
    """Raise :class:`Unbounded` unless cel-cpp can run ``expr`` within bounded work.

    ``python_call(node)`` tells whether a call runs on a Python implementation (charged, and its
    result charged by size when it crosses back into cel-cpp)."""
    _Bounds(types, python_call).visit(expr, [], None)


class _Bounds:
    def __init__(self, types: dict[int, t.CelType], python_call: Callable[[ast.Node], bool]) -> None:
        self.types = types
        self.python_call = python_call

    def unit(self, node: ast.Node) -> bool:
        return self.types.get(id(node), t.DYN).kind in _UNIT_KINDS

    # --- walk ---------------------------------------------------------------------------------

    def visit(self, node: ast.Node, locals_: list[str], loop: frozenset[str] | None) -> None:
        """``locals_``: every variable in scope; ``loop``: the innermost comprehension's variables
        when ``node`` is evaluated once per iteration, else None."""
        if isinstance(node, ast.Comprehension):
            if not self.bounded(node.range, locals_):
                raise Unbounded(f"{node.macro or node.kind}() over a value built during the evaluation")
            self.visit(node.range, locals_, loop)
            names = [node.var] + ([node.var2] if node.var2 else [])
            inner = frozenset(names)
            for part in (node.predicate, node.body):
                if part is not None:
                    self.visit(part, locals_ + names, inner)
            if node.kind in ("map", "transformList") and not self.local(node.body, inner):
                raise Unbounded(f"{node.macro or node.kind}() returns values that are not built from its element")
            return
        if isinstance(node, ast.Bind):
            if not self.bounded(node.init, locals_):
                raise Unbounded("cel.bind() of a value built during the evaluation")
            self.visit(node.init, locals_, loop)
            self.visit(node.body, [*locals_, node.var], loop)
            return
        if isinstance(node, ast.OptMap):
            if not self.bounded(node.target, locals_):
                raise Unbounded("optMap() of a value built during the evaluation")
            self.visit(node.target, locals_, loop)
            self.visit(node.body, [*locals_, node.var], loop)
            return
        if loop is not None and isinstance(node, ast.Call):
            self.check_call(node, loop)
        for child in node.children():
            self.visit(child, locals_, loop)

    def check_call(self, node: ast.Call, loop: frozenset[str]) -> None:
        """An operation evaluated once per iteration of the innermost comprehension."""
        if self.python_call(node):
            return  # charged in Python
        operands = ([node.target] if node.target is not None else []) + list(node.args)
        sized = [o for o in operands if not self.unit(o)]
        if not sized or node.function in ("_&&_", "_||_", "!_", "_?_:_", "dyn", "size", "has"):
            return
        name = node.function
        if name in _COMPARISONS or name in _PREFIX_TESTS:
            if any(self.local(o, loop) for o in operands):  # the work is bounded by the smaller operand
                return
            raise Unbounded(f"{name} in a comprehension compares values that do not depend on its element")
        if name == "@in":
            container = node.args[1]
            if self.types.get(id(container), t.DYN).kind == "map" or self.local(container, loop):
                return
            raise Unbounded("'in' in a comprehension searches a list that does not depend on its element")
        if all(self.local(o, loop) for o in sized):
            return
        raise Unbounded(f"{name}() in a comprehension works on values that do not depend on its element")

    # --- value classes ------------------------------------------------------------------------

    def bounded(self, node: ast.Node, locals_: list[str], inside: bool = False) -> bool:
        """The value's size is bounded by what the request brought: part of its input, a literal,
        a value charged when it entered cel-cpp, or ``+``/constructions/conditionals of those —
        where a local variable may only be the whole value (``inside`` a construction it could be
        repeated, and a chain of binders would then grow exponentially)."""
        if self.unit(node) or _constant(node):
            return True
        if isinstance(node, ast.Ident):
            return node.name in _ROOTS or (node.name in locals_ and not inside)
        if isinstance(node, ast.Select | ast.Index):
            return self.bounded(node.operand, locals_, inside)
        if isinstance(node, ast.CreateList):
            return all(self.bounded(e.value, locals_, True) for e in node.elements)
        if isinstance(node, ast.CreateMap):
            return all(self.bounded(e.value, locals_, True) for e in node.entries)
        if isinstance(node, ast.CreateStruct):
            return all(self.bounded(f.value, locals_, True) for f in node.fields)
        if isinstance(node, ast.Bind):
            return self.bounded(node.body, [*locals_, node.var], inside)
        if isinstance(node, ast.Comprehension) and node.kind == "filter":
            return self.bounded(node.range, locals_, inside)  # a sublist of its range
        if isinstance(node, ast.Call):
            parts = ([node.target] if node.target is not None else []) + list(node.args)
            if self.python_call(node):
                return True
            if node.function == "_?_:_":
                return self.bounded(node.args[1], locals_, inside) and self.bounded(node.args[2], locals_, inside)
            if node.function in _PASS_THROUGH:
                return all(self.bounded(p, locals_, inside) for p in parts)
            if node.function == "_+_":
                return all(self.bounded(p, locals_, True) for p in parts)
        return False

    def local(self, node: ast.Node, loop: frozenset[str]) -> bool:
        """The value is a literal, a scalar, built only from the innermost comprehension's element
        (its size summed over the loop is bounded by the range's), or charged by its size each time
        it enters cel-cpp (a policy variable, a library result)."""
        if self.unit(node) or _constant(node):
            return True
        if isinstance(node, ast.Ident):
            return node.name in loop
        if isinstance(node, ast.Select) and isinstance(node.operand, ast.Ident) and node.operand.name == "variables":
            return "variables" not in loop  # read through the bridge, charged at every read
        if isinstance(node, ast.Select | ast.Index):
            return self.local(node.operand, loop)
        if isinstance(node, ast.CreateList):
            return all(self.local(e.value, loop) for e in node.elements)
        if isinstance(node, ast.CreateMap):
            return all(self.local(e.key, loop) and self.local(e.value, loop) for e in node.entries)
        if isinstance(node, ast.CreateStruct):
            return all(self.local(f.value, loop) for f in node.fields)
        if isinstance(node, ast.Comprehension):
            inner = frozenset([node.var] + ([node.var2] if node.var2 else []))
            return self.local(node.range, loop) and self.local(node.body, inner)
        if isinstance(node, ast.Call):
            if self.python_call(node):
                return True
            parts = ([node.target] if node.target is not None else []) + list(node.args)
            if node.function == "_?_:_":
                return self.local(node.args[1], loop) and self.local(node.args[2], loop)
            return all(self.local(p, loop) for p in parts)
        return False


def _constant(node: ast.Node) -> bool:
    if isinstance(node, ast.Literal):
        return True
    if isinstance(node, ast.CreateList):
        return all(_constant(e.value) for e in node.elements)
    if isinstance(node, ast.CreateMap):
        return all(_constant(e.key) and _constant(e.value) for e in node.entries)
    return False
