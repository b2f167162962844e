"""How an expression reads an input: which fields, how deep, whether only their presence.

``object.spec.containers.exists(c, c.image.startsWith("nginx"))`` reads ``image`` of each container
and nothing else of the object. A *need* describes how a value is read:

* :data:`WHOLE` — any way at all (compared, passed to a function, returned): the value itself;
* :data:`EMPTY` — only its presence (``has(x.f)``): a placeholder of the same kind;
* :class:`Fields` — only these fields or constant keys, each with its own need;
* :class:`Iter` — iterated (a comprehension range, ``size``, ``in``): every element of a list with
  ``elem``'s need, every key of a map with ``value``'s need for its value.

The analysis is conservative: whatever it does not recognise reads the value whole. The runtime
shares the value of an expression several policies repeat while the parts it reads are unchanged
(:mod:`celmut.runtime.shared`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Union

from celmut.cel import ast

WHOLE = "whole"
EMPTY = "empty"


@dataclass(frozen=True)
class Fields:
    items: tuple[tuple[Any, Need], ...]  # sorted by key


@dataclass(frozen=True)
class Iter:
    elem: Need  # each element of a list
    value: Need  # each value of a map (its keys are kept)


Need = Union[str, Fields, Iter]  # noqa: UP007 - a recursive alias


def merge(a: Need, b: Need) -> Need:
    if a in (EMPTY, b):
        return b
    if b == EMPTY:
        return a
    if isinstance(a, Fields) and isinstance(b, Fields):
        keys: dict[Any, Need] = dict(a.items)
        for key, need in b.items:
            keys[key] = merge(keys[key], need) if key in keys else need
        return Fields(tuple(sorted(keys.items(), key=lambda kv: repr(kv[0]))))
    if isinstance(a, Iter) and isinstance(b, Iter):
        return Iter(merge(a.elem, b.elem), merge(a.value, b.value))
    return WHOLE


def field(key: Any, need: Need) -> Fields:
    return Fields(((key, need),))


def _element(need: Need) -> Need:
    if isinstance(need, Iter):
        return need.elem
    return EMPTY if need == EMPTY else WHOLE


class Analysis:
    """Collects the need of every root node (by ``id``) of one expression: the nodes ``chain``
    accepts, such as the input variable read (``object`` outside any comprehension that rebinds it)."""

    def __init__(self, chain: Callable[[ast.Node, set[str]], bool]) -> None:
        self.is_chain = chain  # whether a node is a root whose need is collected, given the local names
        self.needs: dict[int, Need] = {}
        self.scopes: list[dict[str, Need]] = []

    def locals(self) -> set[str]:
        return {name for scope in self.scopes for name in scope}

    def use(self, node: ast.Node, need: Need) -> None:
        if self.is_chain(node, self.locals()):
            self.needs[id(node)] = merge(self.needs.get(id(node), EMPTY), need)
            return
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            for child in node.children():
                self.use(child, WHOLE)
            return
        method(node, need)

    def _Ident(self, node: ast.Ident, need: Need) -> None:
        for scope in reversed(self.scopes):
            if node.name in scope:
                scope[node.name] = merge(scope[node.name], need)
                return

    def _Literal(self, node: ast.Literal, need: Need) -> None:
        return

    def _Select(self, node: ast.Select, need: Need) -> None:
        self.use(node.operand, field(node.field, EMPTY if node.test_only else need))

    def _Index(self, node: ast.Index, need: Need) -> None:
        if isinstance(node.index, ast.Literal) and type(node.index.value) is str:
            self.use(node.operand, field(node.index.value, need))
            return
        self.use(node.operand, WHOLE)
        self.use(node.index, WHOLE)

    def _Call(self, node: ast.Call, need: Need) -> None:
        function, target, args = node.function, node.target, node.args
        if target is None and function == "size" and len(args) == 1:
            self.use(args[0], Iter(EMPTY, EMPTY))
        elif target is not None and function == "size" and not args:
            self.use(target, Iter(EMPTY, EMPTY))
        elif target is None and function == "@in":
            self.use(args[0], WHOLE)
            self.use(args[1], Iter(WHOLE, EMPTY))
        elif target is None and function == "_?_:_":
            self.use(args[0], WHOLE)
            self.use(args[1], need)
            self.use(args[2], need)
        elif target is not None and not args and function == "hasValue":
            self.use(target, EMPTY)
        elif target is not None and not args and function == "value":
            self.use(target, need)
        elif target is not None and function in ("orValue", "or") and len(args) == 1:
            self.use(target, need)
            self.use(args[0], need)
        else:
            for child in node.children():
                self.use(child, WHOLE)

    def _Comprehension(self, node: ast.Comprehension, need: Need) -> None:
        self.scopes.append({node.var: EMPTY, **({node.var2: EMPTY} if node.var2 else {})})
        try:
            if node.predicate is not None:
                self.use(node.predicate, WHOLE)
            self.use(node.body, _element(need) if node.kind in ("map", "transformList") else WHOLE)
        finally:
            scope = self.scopes.pop()
        first = scope[node.var]
        if node.var2 is not None:
            second = scope[node.var2]
            element = merge(second, _element(need)) if node.kind == "filter" else second
            self.use(node.range, Iter(element, element))
            return
        element = merge(first, _element(need)) if node.kind == "filter" else first
        self.use(node.range, Iter(element, EMPTY))

    def _Bind(self, node: ast.Bind, need: Need) -> None:
        self.use(node.init, WHOLE)
        self.scopes.append({node.var: WHOLE})
        try:
            self.use(node.body, need)
        finally:
            self.scopes.pop()

    def _OptMap(self, node: ast.OptMap, need: Need) -> None:
        self.use(node.target, WHOLE)
        self.scopes.append({node.var: WHOLE})
        try:
            self.use(node.body, WHOLE)
        finally:
            self.scopes.pop()

