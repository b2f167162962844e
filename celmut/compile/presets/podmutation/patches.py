"""PodMutation patches as CEL: JSON values as literals, RFC 6902 operations as ``JSONPatch`` lists.

Patch values become CEL literals: strings (escaped), ints, doubles, bools, ``null``, lists and maps.
CEL list and map literals must be homogeneous, so when the elements (or map values) of one literal
have different types, each element is wrapped in ``dyn()`` — ``{"weight": 1, "key": "a"}`` becomes
``{"weight": dyn(1), "key": dyn("a")}``. JSON Pointer paths stay CEL strings.

Operations keep RFC 6902 semantics (``remove``/``replace``/``move``/``copy``/``test`` on a missing
path fail), except that ``add`` **creates missing intermediate objects**, as the CAST AI reference
documents ("creates intermediate objects/arrays as needed"): before an ``add`` to ``/a/b/c/d``, each
missing parent below the top level (``/a/b``, ``/a/b/c``) is added as ``{}`` — or ``[]`` when the
next token is ``-`` or an index — by a conditional operation checking the incoming pod. Parents are
only created up to the first list index, and not at all once an earlier operation of the same
PodMutation wrote that parent or one of its ancestors (its state is then the earlier operation's).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from celmut.compile.cel_literals import cel_string
from celmut.compile.presets.podmutation.model import Operation


def _cel_type(value: Any) -> str:
    """The CEL type a literal of ``value`` has (``dyn`` for elements of a mixed literal)."""
    if value is None:
        return "null_type"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return f"list({_element_type(value)})"
    return f"map({_element_type(list(value.values()))})"


def _element_type(items: Sequence[Any]) -> str:
    kinds = {_cel_type(item) for item in items}
    return kinds.pop() if len(kinds) == 1 else ("" if not kinds else "dyn")


def cel_literal(value: Any) -> str:
    """CEL source evaluating to the JSON ``value`` (validated by the model: JSON types only)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        return text if any(c in text for c in ".eE") else text + ".0"
    if isinstance(value, str):
        return cel_string(value)
    items = list(value.values()) if isinstance(value, dict) else list(value)
    wrap = _element_type(items) == "dyn"
    rendered = [f"dyn({cel_literal(v)})" if wrap else cel_literal(v) for v in items]
    if isinstance(value, dict):
        return "{" + ", ".join(f"{cel_string(str(k))}: {v}" for k, v in zip(value, rendered, strict=True)) + "}"
    return "[" + ", ".join(rendered) + "]"


def cel_operation(operation: Operation) -> str:
    """One ``JSONPatch{…}`` literal."""
    fields = [f"op: {cel_string(operation.op)}"]
    if operation.op in ("move", "copy"):
        fields.append(f"from: {cel_string(operation.source)}")
    fields.append(f"path: {cel_string(operation.path)}")
    if operation.op in ("add", "replace", "test"):
        fields.append(f"value: {cel_literal(operation.value)}")
    return "JSONPatch{" + ", ".join(fields) + "}"


def _list(items: Sequence[str]) -> str:
    return "[\n" + ",\n".join("  " + item for item in items) + "\n]"


def within(path: str, written: str) -> bool:
    """Whether writing ``written`` may change what is at ``path`` (it is ``path`` or an ancestor)."""
    return path == written or path.startswith(written + "/")


def writes(operation: Operation) -> list[str]:
    """The paths ``operation`` changes."""
    if operation.op == "test":
        return []
    return [operation.path, operation.source] if operation.op == "move" else [operation.path]


@dataclass
class PatchState:
    """What the operations emitted so far did: paths they wrote, parents created for ``add``."""

    written: list[str] = field(default_factory=list)
    ensured: set[str] = field(default_factory=set)

    def copy(self) -> PatchState:
        return PatchState(list(self.written), set(self.ensured))


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED = {
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
}


def _optional_step(token: str) -> str:
    """One JSON Pointer token as an optional CEL selection (``.?spec`` or ``[?"a/b"]``)."""
    key = _unescape(token)
    return f".?{key}" if _IDENTIFIER.match(key) and key not in _RESERVED else f"[?{cel_string(key)}]"


def _index_like(token: str) -> bool:
    return token == "-" or token.isdigit()


def _parents(operation: Operation, state: PatchState) -> list[str]:
    """Conditional operations creating the missing parents of an ``add``."""
    tokens = operation.path.split("/")[1:]
    created: list[str] = []
    for depth in range(2, len(tokens)):
        head = tokens[:depth]
        parent = "/" + "/".join(head)
        if any(_index_like(t) for t in head) or any(within(parent, w) for w in state.written):
            break
        if parent in state.ensured:
            continue
        exists = "object" + "".join(map(_optional_step, head)) + ".hasValue()"
        empty = "[]" if _index_like(tokens[depth]) else "{}"
        add = f"JSONPatch{{op: {cel_string('add')}, path: {cel_string(parent)}, value: {empty}}}"
        created.append(f"({exists} ? [] : [{add}])")
        state.ensured.add(parent)
    return created


def cel_operations(operations: Sequence[Operation], state: PatchState | None = None) -> str:
    """The operations as one CEL list expression (plain ``JSONPatch`` lists joined by ``+`` with
    the conditional parent creations ``add`` needs); ``state`` is updated."""
    state = state if state is not None else PatchState()
    parts: list[str] = []
    pending: list[str] = []
    for operation in operations:
        if operation.op == "add" and (parents := _parents(operation, state)):
            if pending:
                parts.append(_list(pending))
                pending = []
            parts += parents
        pending.append(cel_operation(operation))
        state.written += writes(operation)
    if pending or not parts:
        parts.append(_list(pending) if pending else "[]")
    return " +\n".join(parts)
