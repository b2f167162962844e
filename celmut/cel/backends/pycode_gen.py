"""Generate one Python function from a checked, planned CEL expression: leaves, field selection,
indexing and aggregate literals here; operators and calls in :mod:`~celmut.cel.backends.pycode_ops`,
comprehensions and bindings in :mod:`~celmut.cel.backends.pycode_loops`.

The common case is inline Python — ``object.spec.containers`` is one chained subscript of plain
dicts inside a ``try`` — and any other case (a missing key, an optional, a library object, a
``variables.x`` that evaluates lazily) goes to the same selection function the planner calls, so it
raises the same error or returns the same value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from celmut.cel import ast, costs
from celmut.cel import types as t
from celmut.cel.backends.pycode_base import EmitterBase
from celmut.cel.backends.pycode_loops import LoopEmitter
from celmut.cel.backends.pycode_ops import OperatorEmitter
from celmut.cel.planner import Planner, PlanRecord


@dataclass(frozen=True)
class Generated:
    """The module source (defining ``_make(_K)``), the constants ``_K`` it closes over, how many
    subtrees it leaves to the planner, and whether those read bound variables from ``ctx.slots``."""

    source: str
    constants: tuple[Any, ...]
    fallbacks: int
    uses_slots: bool


def generate(expr: ast.Node, planner: Planner, record: PlanRecord, types: Mapping[int, t.CelType]) -> Generated:
    """Python source for ``expr``, which ``planner`` has planned with ``record`` on."""
    generator = Generator(planner, record, types)
    result = generator.emit(expr)
    src = generator.src
    return Generated(src.module(result), tuple(src.constants), generator.fallbacks, "slots" in src.prologue)


class Generator(OperatorEmitter, LoopEmitter, EmitterBase):
    """Emits each node kind; the planner method of the same name is its reference."""

    # --- leaves ---------------------------------------------------------------------------------------

    def _Literal(self, node: ast.Literal) -> str:
        return self.literal(node.value)

    def _Ident(self, node: ast.Ident) -> str:
        local = self.lookup(node.name)
        if local is not None:
            return local.name
        src = self.src
        result, name = src.name(), src.const(node.name)
        self.attempt(f"{result} = {src.uses('vars')}[{name}]", "KeyError", f"raise _no_attribute({name}) from None")
        return result

    # --- selection ----------------------------------------------------------------------------------

    def _Select(self, node: ast.Select) -> str:
        src = self.src
        if node.test_only:
            operand, field = self.subject(node.operand), src.const(node.field)
            return self.assign(
                f"({field} in {operand}) if type({operand}) is dict else _test_field({operand}, {field})"
            )
        if node.optional:  # ``x.?f`` on a map: present or not, without a call (select_if_present's answer)
            operand, field = self.subject(node.operand), src.const(node.field)
            return self.assign(
                f"((_Optional({operand}[{field}]) if {field} in {operand} else _NONE) if type({operand}) is dict"
                f" else _select_if_present({operand}, {field}))"
            )
        fields: list[str] = []  # a chain of plain selections, as the planner collects it
        current: ast.Node = node
        while isinstance(current, ast.Select) and not current.optional and not current.test_only:
            fields.append(current.field)
            current = current.operand
        fields.reverse()
        if isinstance(current, ast.Ident) and self.lookup(current.name) is None:
            if current.name == "variables":  # lazy: the first step is a method call, not a subscript
                operand = self.emit(current)
                first = src.const(fields[0])
                value = self.assign(
                    f"{operand}.cel_select({first}) if type({operand}) is _Lazy else _select_field({operand}, {first})"
                )
                return self._subscripts(value, fields[1:]) if len(fields) > 1 else value
            return self._variable_path(current.name, fields)
        return self._subscripts(self.subject(current), fields)

    def _variable_path(self, variable: str, fields: list[str]) -> str:
        """``object.metadata.labels``: one chained subscript; on any failure the exact evaluation."""
        src = self.src
        result, name = src.name(), src.const(variable)
        variables = src.uses("vars")
        chain = "".join(f"[{src.const(f)}]" for f in fields)
        exact = f"{result} = _select_var_path({variables}, {name}, {src.const(tuple(fields))})"
        self.attempt(f"{result} = {variables}[{name}]{chain}", "(KeyError, TypeError)", exact)
        return result

    def _subscripts(self, operand: str, fields: list[str]) -> str:
        """``operand.a.b`` on a value already computed (plain dicts subscript; anything else, or a
        missing key, goes through :func:`celmut.cel.selection.select_path`)."""
        src = self.src
        result = src.name()
        chain = "".join(f"[{src.const(f)}]" for f in fields)
        if len(fields) == 1:
            exact = f"{result} = _select_field({operand}, {src.const(fields[0])})"
        else:
            exact = f"{result} = _select_path({operand}, {src.const(tuple(fields))})"
        self.attempt(f"{result} = {operand}{chain}", "(KeyError, TypeError)", exact)
        return result

    def _Index(self, node: ast.Index) -> str:
        src = self.src
        literal = node.index.value if isinstance(node.index, ast.Literal) else None
        if node.optional:
            operand, index = self.subject(node.operand), self.emit(node.index)
            if type(literal) is str:
                return self._optional_key(operand, index)
            return self.assign(f"_index_optional({operand}, {index})")
        if type(literal) is str:
            operand, key = self.subject(node.operand), src.const(literal)
            if _always_optional(node.operand):  # ``x.?labels["app"]``: the subscript would always raise
                return self._optional_key(operand, key)  # index_value's own answer for one: index_optional
            result = src.name()
            exact = f"{result} = _index_key({operand}, {key})"
            self.attempt(f"{result} = {operand}[{key}]", "(KeyError, TypeError)", exact)
            return result
        operand, index = self.emit(node.operand), self.emit(node.index)
        return self.assign(f"_index_value({operand}, {index})")

    def _optional_key(self, operand: str, key: str) -> str:
        """``index_optional(operand, key)`` for a string constant ``key``, without a call when ``operand``
        is a map or a present optional holding one (``object.metadata.?labels["app"]``, hot in
        matchConditions): optional.of(the value) when the key is there, else optional.none()."""
        inner = f"{operand}.value"
        return self.assign(
            f"((_Optional({inner}[{key}]) if {key} in {inner} else _NONE)"
            f" if type({operand}) is _Optional and {operand}.present and type({inner}) is dict"
            f" else (_Optional({operand}[{key}]) if {key} in {operand} else _NONE) if type({operand}) is dict"
            f" else _index_optional({operand}, {key}))"
        )

    # --- aggregates ----------------------------------------------------------------------------------

    def _CreateList(self, node: ast.CreateList) -> str:
        self.allocate(costs.allocation_bytes([None] * len(node.elements)))
        if not any(e.optional for e in node.elements):
            values = [self.emit(e.value) for e in node.elements]
            return self.assign(f"[{', '.join(values)}]")
        src = self.src
        result = self.assign("[]")
        for element in node.elements:
            value = self.emit(element.value)
            if element.optional:
                self.optional_entry(value, "optional list element", f"{result}.append({{value}})")
            else:
                src.line(f"{result}.append({value})")
        return result

    def _CreateMap(self, node: ast.CreateMap) -> str:
        src = self.src
        self.allocate(costs.allocation_bytes(dict.fromkeys(range(len(node.entries)))))
        keys = [e.key.value for e in node.entries if isinstance(e.key, ast.Literal)]
        if (
            not any(e.optional for e in node.entries)
            and len(keys) == len(node.entries)
            and all(type(k) is str for k in keys)
            and len(set(keys)) == len(keys)
        ):  # distinct string keys: nothing to check, the values in order
            values = [self.emit(e.value) for e in node.entries]
            items = ", ".join(f"{src.const(k)}: {value}" for k, value in zip(keys, values, strict=True))
            return self.assign(f"{{{items}}}")
        result = self.assign("{}")
        for entry in node.entries:
            key = self.emit(entry.key)
            src.line(f"_require_key({key})")
            value = self.emit(entry.value)
            if entry.optional:
                kind = src.const("optional map entry")
                src.line(f"if not isinstance({value}, _Optional): raise _nso({kind}, {value})")
                with src.indented(f"if {value}.present:"):
                    src.line(f"if {key} in {result}: raise _repeated_key({key})")
                    src.line(f"{result}[{key}] = {value}.value")
            else:
                src.line(f"if {key} in {result}: raise _repeated_key({key})")
                src.line(f"{result}[{key}] = {value}")
        return result

    def _CreateStruct(self, node: ast.CreateStruct) -> str:
        src = self.src
        self.allocate(costs.allocation_bytes(dict.fromkeys(range(len(node.fields)))))
        # StructValue(type_name, fields), without its Python __init__ (the same object, in a third of the time)
        result = self.assign("_new_dict(_Struct)")
        for field in node.fields:
            value = self.emit(field.value)  # evaluated and checked in order, as the planner does
            name = src.const(field.name)
            if field.optional:
                self.optional_entry(value, "optional field", f"{result}[{name}] = {{value}}")
            else:
                src.line(f"{result}[{name}] = {value}")
        src.line(f"{result}.type_name = {src.const(node.type_name)}")
        return result


def _always_optional(node: ast.Node) -> bool:
    """Whether ``node`` evaluates to an optional whatever the data (``x.?f``, ``x[?k]``: selection's
    select_if_present and index_optional return one or raise), so indexing it is index_optional's."""
    return (isinstance(node, ast.Select) and node.optional) or (isinstance(node, ast.Index) and node.optional)
