"""Comprehensions as Python ``for`` loops, and ``cel.bind``/``optMap`` as locals.

Each iteration charges the planner's per-iteration cost of the loop body (cel-go charges a loop's
steps each time they run, ``interpreter/runtimecost.go``; ``checker/cost.go`` estimates the same
``range size × (step + condition)``), inline, before the body runs; what a macro builds is counted as
the request's allocation when it is done. ``all``/``exists`` hold an element's error back while
another element may still decide (the planner's ``_build_quantifier``); every other macro lets it
through. The loop's variables are Python locals, also written to the planner's slots when a planner
closure in the body may read them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from celmut.cel import ast
from celmut.cel.backends.pycode_base import EmitterBase, Local
from celmut.cel.backends.pycode_source import Unsupported


@dataclass(frozen=True)
class _Loop:
    """One comprehension's loop: its macro name (a constant cell), per-iteration cost, the iterable
    and the locals it binds."""

    macro: str
    cost: int
    items: str
    first: Local
    second: Local | None


class LoopEmitter(EmitterBase):
    def _Comprehension(self, node: ast.Comprehension) -> str:
        src = self.src
        first_slot, second_slot, cost = self.record.loops[id(node)]
        two_vars = node.var2 is not None
        if node.kind == "transformMap" and not two_vars:
            raise Unsupported("transformMap without its value variable")
        kind = _KINDS.get(node.kind)
        if kind is None:  # pragma: no cover - the parser makes no other kind
            raise Unsupported(f"comprehension {node.kind}")
        range_value = self.emit(node.range)
        macro = src.const(node.macro or node.kind)
        items = src.name("_i")
        pairs, keys = (range_value, range_value)
        if two_vars:
            pairs, keys = f"enumerate({range_value})", f"{range_value}.items()"
        src.line(f"if isinstance({range_value}, (list, tuple)): {items} = {pairs}")
        src.line(f"elif isinstance({range_value}, dict): {items} = {keys}")
        src.line(f"else: raise _bad_range({macro}, {range_value})")
        first = Local(src.name("_v"), first_slot)
        second = Local(src.name("_v"), second_slot) if node.var2 is not None else None
        scope = {node.var: first}
        if node.var2 is not None and second is not None:
            scope[node.var2] = second
        self.scopes.append(scope)
        try:
            return kind(self, node, _Loop(macro, cost, items, first, second))
        finally:
            self.scopes.pop()

    @contextmanager
    def _body(self, loop: _Loop) -> Iterator[None]:
        """The loop's body: the ``for`` header (and the slot stores a planner closure in the body
        needs) is written when the body is done; each iteration first charges the body's cost."""
        src = self.src
        header_at, indent = len(src.lines), src.indent
        with src.indented(blocks=1):
            self.charge(loop.cost)
            yield
        locals_ = [loop.first] if loop.second is None else [loop.first, loop.second]
        for local in reversed(locals_):
            if local.stored:
                src.insert(header_at, self.store_line(local), indent + 1)
        targets = ", ".join(local.name for local in locals_)
        src.insert(header_at, f"for {targets} in {loop.items}:", indent)

    def _selected(self, node: ast.Comprehension, macro: str) -> None:
        """The optional filter of map/transformList/transformMap(Entry): ``continue`` when false."""
        if node.predicate is None:
            return
        keep = self.emit(node.predicate)
        self.src.line(f"if {keep} is False: continue")
        self.src.line(f"if {keep} is not True: raise _nso({macro}, {keep})")

    def _quantifier(self, node: ast.Comprehension, loop: _Loop) -> str:
        src = self.src
        stop = node.kind == "exists"
        stop_word, go_word = repr(stop), repr(not stop)
        held, result = src.name("_e"), src.name()
        src.line(f"{held} = None")
        src.line(f"{result} = {go_word}")
        with self._body(loop):
            with self.holding_error(held, "continue"):
                value = self.emit(node.body)
            src.line(f"if {value} is {stop_word}: {result} = {stop_word}; break")
            src.line(f"if {value} is not {go_word} and {held} is None: {held} = _nso({loop.macro}, {value})")
        with src.indented("else:"), src.indented(f"if {held} is not None:"):
            self.raise_held(held)
        src.line(f"{held} = None")
        return result

    def _exists_one(self, node: ast.Comprehension, loop: _Loop) -> str:
        src = self.src
        count = src.name("_n")
        src.line(f"{count} = 0")
        with self._body(loop):
            value = self.emit(node.body)
            src.line(f"if {value} is True: {count} += 1")
            src.line(f"elif {value} is not False: raise _nso({loop.macro}, {value})")
        return self.assign(f"{count} == 1")

    def _filter(self, node: ast.Comprehension, loop: _Loop) -> str:
        src = self.src
        result = self.assign("[]")
        with self._body(loop):
            keep = self.emit(node.body)
            kept = loop.first.name if loop.second is None else loop.second.name
            src.line(f"if {keep} is True: {result}.append({kept})")
            src.line(f"elif {keep} is not False: raise _nso({loop.macro}, {keep})")
        src.line(f"ctx.allocate(_alloc_bytes({result}))")
        return result

    def _map(self, node: ast.Comprehension, loop: _Loop) -> str:
        return self._collected(node, loop, "[]", "{result}.append({value})")

    def _transform_map(self, node: ast.Comprehension, loop: _Loop) -> str:
        return self._collected(node, loop, "{}", "{result}[{key}] = {value}")

    def _collected(self, node: ast.Comprehension, loop: _Loop, empty: str, store: str) -> str:
        """map, transformList, transformMap: the body of each element the filter keeps, stored with
        ``store`` (a statement of generated names), the whole counted as allocation when done."""
        src = self.src
        result = self.assign(empty)
        with self._body(loop):
            self._selected(node, loop.macro)
            src.line(store.format(result=result, key=loop.first.name, value=self.emit(node.body)))
        src.line(f"ctx.allocate(_alloc_bytes({result}))")
        return result

    def _transform_map_entry(self, node: ast.Comprehension, loop: _Loop) -> str:
        src = self.src
        result, key, value = self.assign("{}"), src.name(), src.name()
        with self._body(loop):
            self._selected(node, loop.macro)
            entry = self.emit(node.body)
            src.line(f"if not isinstance({entry}, dict): raise _nso({src.const('transformMapEntry')}, {entry})")
            with src.indented(f"for {key}, {value} in {entry}.items():", blocks=1):
                src.line(f"if {key} in {result}: raise _existing_key({key})")
                src.line(f"{result}[_require_key({key})] = {value}")
        src.line(f"ctx.allocate(_alloc_bytes({result}))")
        return result

    def _sort_by(self, node: ast.Comprehension, loop: _Loop) -> str:
        src = self.src
        keyed = self.assign("[]")
        with self._body(loop):
            element = loop.first.name if loop.second is None else f"({loop.first.name}, {loop.second.name})"
            src.line(f"{keyed}.append(({self.emit(node.body)}, {element}))")
        return self.assign(f"_sorted_by(ctx, {keyed})")

    # --- bindings ------------------------------------------------------------------------------------

    def _Bind(self, node: ast.Bind) -> str:
        src = self.src
        local = Local(src.name("_v"), self.record.bound[id(node)])
        src.line(f"{local.name} = {self.emit(node.init)}")
        bound_at, indent = len(src.lines), src.indent
        self.scopes.append({node.var: local})
        try:
            result = self.emit(node.body)
        finally:
            self.scopes.pop()
        if local.stored:
            src.insert(bound_at, self.store_line(local), indent)
        return result

    def _OptMap(self, node: ast.OptMap) -> str:
        src = self.src
        target, result = self.emit(node.target), src.name()
        function = src.const("optFlatMap" if node.flat else "optMap")
        src.line(f"if not isinstance({target}, _Optional): raise _nso({function}, {target})")
        with src.indented(f"if not {target}.present:"):
            src.line(f"{result} = {target}")
        with src.indented("else:"):
            local = Local(src.name("_v"), self.record.bound[id(node)])
            src.line(f"{local.name} = {target}.value")
            bound_at = len(src.lines)
            self.scopes.append({node.var: local})
            try:
                value = self.emit(node.body)
            finally:
                self.scopes.pop()
            if local.stored:
                src.insert(bound_at, self.store_line(local), src.indent)
            if node.flat:
                src.line(f"if not isinstance({value}, _Optional): raise _nso({function}, {value})")
                src.line(f"{result} = {value}")
            else:
                src.line(f"{result} = _Optional({value})")
        return result


_KINDS: dict[str, Callable[[LoopEmitter, ast.Comprehension, _Loop], str]] = {
    "all": LoopEmitter._quantifier,
    "exists": LoopEmitter._quantifier,
    "exists_one": LoopEmitter._exists_one,
    "filter": LoopEmitter._filter,
    "map": LoopEmitter._map,
    "transformList": LoopEmitter._map,
    "transformMap": LoopEmitter._transform_map,
    "transformMapEntry": LoopEmitter._transform_map_entry,
    "sortBy": LoopEmitter._sort_by,
}
