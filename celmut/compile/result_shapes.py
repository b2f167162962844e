"""Which lists and maps of an ApplyConfiguration expression's result the expression builds itself.

kube-apiserver does not hand structured-merge-diff the JSON of an ApplyConfiguration: it hands it
the Go values of the CEL result (``staging/src/k8s.io/apiserver/pkg/cel/mutation/dynamic/
objects.go``, ``ObjectVal.ConvertToNative`` and ``convertField``). An ``Object{…}`` becomes a
``map[string]any`` whose fields are converted once more: a list or map the expression built (a
literal, a comprehension's result) becomes ``[]any``/``map[string]any`` of its items' ``Value()``. One
level further, a built list or map is left a ``[]ref.Val``/``map[ref.Val]ref.Val``, which
structured-merge-diff takes for neither a list nor a map (``Object.spec{tolerations: [{"key": "a"}]}``:
``expected map, got &{map[key:a]}``), whereas a list or map read from ``object`` (or any input) is a
plain Go value all the way down. Kyverno's MutatingPolicy converts the same way
(``pkg/cel/policies/mpol/compiler/applyconfig.go`` calls ``ObjectVal.Value()``).

The values alone cannot tell the two apart, so this walk of the checked expression says where the
result holds built containers (:class:`Built`) and typed constructions (:class:`Struct`); everything
else (``None``) is taken for a plain Go value, the answer that never refuses what the API server
might accept. Worked out once per mutation, at compile time; :func:`celmut.runtime.mutations.
plain_configuration` follows it on each result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

from celmut.cel import ast

LIST = "list"  # a list literal or a comprehension's result: its Value() is []ref.Val
MAP = "map"  # a map literal: its Value() is map[ref.Val]ref.Val
CONCAT = "concat"  # ``a + b`` of lists: cel-go's concatList, whose Value() is []any of its items' Value()
STRINGS = "strings"  # ``s.split(sep)``: cel-go's string list, whose Value() is a Go []string (no []any)


@dataclass(frozen=True)
class Struct:
    """An ``Object.x{…}`` construction and the shapes of its fields (``by_name``: the same, looked up)."""

    fields: tuple[tuple[str, Shape], ...]
    by_name: dict[str, Shape] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", dict(self.fields))


@dataclass(frozen=True)
class Built:
    """A list or map the expression builds. ``segments`` (lists): the items in order, each segment
    either a tuple of per-item shapes (items written out) or one shape for a run of items whose number
    is known only at run time; ``entries`` (maps): per-key shapes; ``every``: any other item's."""

    kind: str
    segments: tuple[tuple[Shape, ...] | Shape, ...] = ()
    entries: tuple[tuple[Any, Shape], ...] = ()
    every: Shape = None
    _counts: tuple[int, int] = field(init=False, compare=False, repr=False)  # items written out, runs

    def __post_init__(self) -> None:
        written = sum(len(s) for s in self.segments if isinstance(s, tuple))
        object.__setattr__(self, "_counts", (written, sum(1 for s in self.segments if not isinstance(s, tuple))))

    def item(self, index: int, length: int) -> Shape:
        """The shape of item ``index`` of a list of ``length`` items."""
        if len(self.segments) == 1 and not isinstance(self.segments[0], tuple):
            return self.segments[0]  # one run: every item alike (a comprehension's result)
        written, runs = self._counts
        start = 0
        for segment in self.segments:
            if isinstance(segment, tuple):
                size = len(segment)
                if start <= index < start + size:
                    return segment[index - start]
            else:
                size = length - written if runs == 1 else -1
                if size < 0:
                    return self.every  # more than one run: items cannot be placed
                if start <= index < start + size:
                    return segment
            start += size
        return self.every

    def entry(self, key: Any) -> Shape:
        for name, shape in self.entries:
            if name == key:
                return shape
        return self.every


Shape = Union[Struct, Built, None]  # noqa: UP007 - a recursive alias


def result_shape(expr: ast.Node, variables: Mapping[str, Shape] | None = None) -> Shape:
    """The shape of ``expr``'s result; ``variables``: the shapes of the policy's variables."""
    return _Walk(variables or {}).shape(expr, {})


def _join(shapes: list[Shape]) -> Shape:
    """One shape for values that may come from any of ``shapes``: theirs when they agree, else None."""
    first = shapes[0] if shapes else None
    return first if all(shape == first for shape in shapes) else None


def _items(shape: Shape) -> Shape:
    """The shape every item of a list (or value of a map) of ``shape`` has, if they agree."""
    if not isinstance(shape, Built):
        return None
    found: list[Shape] = [shape.every] if shape.kind == MAP else []
    if shape.kind == MAP:
        found += [entry for _, entry in shape.entries]
    else:
        for segment in shape.segments:
            found += list(segment) if isinstance(segment, tuple) else [segment]
    return _join(found) if found else shape.every


class _Walk:
    def __init__(self, variables: Mapping[str, Shape]) -> None:
        self.variables = variables

    def shape(self, node: ast.Node, scope: dict[str, Shape]) -> Shape:
        if isinstance(node, ast.CreateStruct):
            return Struct(tuple((init.name, self.entry(init.value, init.optional, scope)) for init in node.fields))
        if isinstance(node, ast.CreateList):
            items = [self.entry(element.value, element.optional, scope) for element in node.elements]
            if any(element.optional for element in node.elements):  # absent items shift the rest
                return Built(LIST, (_join(items),)) if items else Built(LIST)
            return Built(LIST, (tuple(items),))
        if isinstance(node, ast.CreateMap):
            values = [self.entry(e.value, e.optional, scope) for e in node.entries]
            keys = [e.key.value for e in node.entries if isinstance(e.key, ast.Literal)]
            if len(keys) == len(values):
                return Built(MAP, entries=tuple(zip(keys, values, strict=True)))
            return Built(MAP, every=_join(values))
        if isinstance(node, ast.Comprehension):
            return self._comprehension(node, scope)
        if isinstance(node, ast.Ident):
            return scope.get(node.name)
        if isinstance(node, ast.Select) and isinstance(node.operand, ast.Ident) and node.operand.name == "variables":
            if not node.optional and not node.test_only and "variables" not in scope:
                return self.variables.get(node.field)
            return None
        if isinstance(node, ast.Bind):
            return self.shape(node.body, {**scope, node.var: self.shape(node.init, scope)})
        if isinstance(node, ast.Call) and node.target is not None and node.function == "split":
            return Built(STRINGS)  # cel-go ext/strings.go: types.NewStringList
        if isinstance(node, ast.Call) and node.target is None:
            if node.function == "_?_:_":
                return _join([self.shape(node.args[1], scope), self.shape(node.args[2], scope)])
            if node.function == "_+_":
                return self._concat(node.args[0], node.args[1], scope)
        return None  # read from the input, returned by a function, …: a plain Go value

    def entry(self, node: ast.Node, optional: bool, scope: dict[str, Shape]) -> Shape:
        """The shape of a field, item or map value; an optional one (``?f: optional.of(x)``) is x's."""
        if not optional:
            return self.shape(node, scope)
        if (
            isinstance(node, ast.Call)
            and node.target is None
            and node.function in ("optional.of", "optional.ofNonZeroValue")
        ):
            return self.shape(node.args[0], scope)
        return None

    def _comprehension(self, node: ast.Comprehension, scope: dict[str, Shape]) -> Shape:
        items = _items(self.shape(node.range, scope))
        inner = {**scope, node.var: None if node.var2 is not None else items}
        if node.var2 is not None:
            inner[node.var2] = items
        if node.kind in ("map", "transformList"):
            return Built(LIST, (self.shape(node.body, inner),))
        if node.kind in ("filter", "sortBy"):
            return Built(LIST, (items,))
        if node.kind == "transformMap":
            return Built(MAP, every=self.shape(node.body, inner))
        return None

    def _concat(self, left: ast.Node, right: ast.Node, scope: dict[str, Shape]) -> Shape:
        """``a + b``: cel-go returns the other list itself when one is empty (``baseList.Add``),
        otherwise a concatList; on strings and numbers the shape is None anyway."""
        if isinstance(left, ast.CreateList) and not left.elements:
            return self.shape(right, scope)
        if isinstance(right, ast.CreateList) and not right.elements:
            return self.shape(left, scope)
        sides = [self.shape(left, scope), self.shape(right, scope)]
        if all(side is None for side in sides):
            return None  # plain lists (or no lists): their concatenation is plain too
        if all(side is None or (isinstance(side, Built) and side.kind == STRINGS) for side in sides):
            return None  # strings and plain lists: a concatList of plain Go values
        segments: list[tuple[Shape, ...] | Shape] = []
        for side in sides:
            if isinstance(side, Built) and side.kind in (LIST, CONCAT):
                segments += side.segments
            else:
                segments.append(None)  # a plain list of unknown length
        return Built(CONCAT, tuple(segments))
