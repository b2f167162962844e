"""The CEL abstract syntax tree celmut works on.

The parser turns celpy's Lark parse tree into these nodes; macro expansion, the checker, the planner,
the unparser and policy tooling (autogen, type-name checks) all read them. Nodes are small mutable
dataclasses; ``line``/``column`` are 1-based positions in the source text.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Node:
    line: int = field(default=0, kw_only=True)
    column: int = field(default=0, kw_only=True)

    def children(self) -> Iterator[Node]:
        return iter(())

    def walk(self) -> Iterator[Node]:
        """This node and all its descendants, depth first."""
        stack: list[Node] = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(list(node.children())))


@dataclass(eq=False)
class Literal(Node):
    """A constant: null, bool, int, uint, double, string or bytes (as its Python value)."""

    value: Any


@dataclass(eq=False)
class Ident(Node):
    name: str


@dataclass(eq=False)
class Select(Node):
    """``operand.field``; ``optional`` for ``operand.?field``; ``test_only`` for ``has(operand.field)``."""

    operand: Node
    field: str
    optional: bool = False
    test_only: bool = False

    def children(self) -> Iterator[Node]:
        yield self.operand


@dataclass(eq=False)
class Index(Node):
    """``operand[index]``; ``optional`` for ``operand[?index]``."""

    operand: Node
    index: Node
    optional: bool = False

    def children(self) -> Iterator[Node]:
        yield self.operand
        yield self.index


@dataclass(eq=False)
class Call(Node):
    """A function call: global ``f(args)`` when ``target`` is None, else member ``target.f(args)``.

    After name resolution a namespaced call such as ``math.greatest(1, 2)`` becomes a global call
    with ``function="math.greatest"``.
    """

    function: str
    args: list[Node]
    target: Node | None = None

    def children(self) -> Iterator[Node]:
        if self.target is not None:
            yield self.target
        yield from self.args


@dataclass(eq=False)
class ListElement:
    value: Node
    optional: bool = False


@dataclass(eq=False)
class CreateList(Node):
    """``[a, ?b]``: optional elements are included only when their optional value is present."""

    elements: list[ListElement]

    def children(self) -> Iterator[Node]:
        for element in self.elements:
            yield element.value


@dataclass(eq=False)
class MapEntry:
    key: Node
    value: Node
    optional: bool = False


@dataclass(eq=False)
class CreateMap(Node):
    """``{k: v, ?k2: opt}``."""

    entries: list[MapEntry]

    def children(self) -> Iterator[Node]:
        for entry in self.entries:
            yield entry.key
            yield entry.value


@dataclass(eq=False)
class FieldInit:
    name: str
    value: Node
    optional: bool = False
    line: int = 0
    column: int = 0


@dataclass(eq=False)
class CreateStruct(Node):
    """A typed construction ``Type.path{field: value}`` such as ``Object.spec{...}`` or ``JSONPatch{...}``."""

    type_name: str
    fields: list[FieldInit]

    def children(self) -> Iterator[Node]:
        for f in self.fields:
            yield f.value


@dataclass(eq=False)
class Comprehension(Node):
    """An expanded macro over ``range``.

    ``kind`` is one of: all, exists, exists_one, map, filter, transformList, transformMap,
    transformMapEntry, sortBy. ``var2`` is set for two-variable forms (index/key and value);
    ``predicate`` is the filter of 3-argument map and 4-argument transform macros. ``macro`` keeps
    the name the user wrote (``existsOne`` or ``exists_one``) for unparsing.
    """

    kind: str
    range: Node
    var: str
    body: Node
    var2: str | None = None
    predicate: Node | None = None
    macro: str = ""

    def children(self) -> Iterator[Node]:
        yield self.range
        if self.predicate is not None:
            yield self.predicate
        yield self.body


@dataclass(eq=False)
class Bind(Node):
    """``cel.bind(var, init, body)``."""

    var: str
    init: Node
    body: Node

    def children(self) -> Iterator[Node]:
        yield self.init
        yield self.body


@dataclass(eq=False)
class OptMap(Node):
    """``opt.optMap(v, body)`` (``flat=False``) or ``opt.optFlatMap(v, body)`` (``flat=True``)."""

    target: Node
    var: str
    body: Node
    flat: bool = False

    def children(self) -> Iterator[Node]:
        yield self.target
        yield self.body


def qualified_name(node: Node) -> str | None:
    """``a.b.c`` for an identifier followed by plain selections, else None."""
    parts: list[str] = []
    while isinstance(node, Select) and not node.optional and not node.test_only:
        parts.append(node.field)
        node = node.operand
    if isinstance(node, Ident):
        parts.append(node.name)
        return ".".join(reversed(parts))
    return None
