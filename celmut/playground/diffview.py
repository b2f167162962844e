"""The object before and after the policies, side by side, each line annotated with who wrote it.

Both objects are dumped as YAML the same way, the lines aligned with :mod:`difflib` (equal, insert,
delete, replace), and each line knows the JSON pointer of the field on it (the YAML composed back,
with marks). A line of the mutated object belongs to every mutation that added or replaced its field
or a field around it; a removed line to the mutations that removed it; an unchanged line to the
mutations that wrote the value it already had (``kept``). So hovering ``team: checkout`` names
``add-team-label`` ``spec.mutations[0]``, as ``celmut explain`` does for the field
``/metadata/labels/team``.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

import yaml

from celmut import jsonutil
from celmut.runtime.provenance import AppliedMutation

Row = dict[str, Any]


def dump(obj: Any) -> str:
    """The YAML both sides are shown in (keys in the object's order, nothing wrapped)."""
    if obj is None:
        return ""
    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1 << 20)


def line_pointers(text: str) -> list[str]:
    """For each line of ``text`` (one YAML document as :func:`dump` writes it), the pointer of the
    deepest field that starts on it; a line continuing a multi-line value keeps the one before it."""
    lines = text.splitlines()
    starts: dict[int, str] = {}
    root = yaml.compose(text, Loader=yaml.SafeLoader) if text.strip() else None
    if root is not None:
        _walk(root, "", starts)
    out: list[str] = []
    current = ""
    for number in range(len(lines)):
        current = starts.get(number, current)
        out.append(current)
    return out


def _walk(node: yaml.Node, pointer: str, starts: dict[int, str]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = f"{pointer}/{jsonutil.escape_pointer(str(key.value))}"
            starts[key.start_mark.line] = child
            _walk(value, child, starts)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = f"{pointer}/{index}"
            line = item.start_mark.line
            if line not in starts or len(starts[line]) < len(child):
                starts[line] = child
            _walk(item, child, starts)


def _ancestors(pointer: str) -> list[str]:
    """``pointer`` and every pointer containing it (``/a/b`` → ``/a/b``, ``/a``, ``""``)."""
    out = [pointer]
    while pointer:
        pointer = pointer.rpartition("/")[0]
        out.append(pointer)
    return out


class _Index:
    """The applied mutations' pointers, looked up by a line's pointer and its ancestors."""

    def __init__(self, applied: Sequence[AppliedMutation]) -> None:
        self.written: dict[str, list[int]] = {}
        self.removed: dict[str, list[int]] = {}
        self.kept: dict[str, list[int]] = {}
        for number, mutation in enumerate(applied):
            for change in mutation.changes:
                table = self.removed if change.op == "remove" else self.written
                table.setdefault(change.path.removesuffix("/-"), []).append(number)
            for pointer in mutation.kept:
                self.kept.setdefault(pointer.removesuffix("/-"), []).append(number)

    @staticmethod
    def find(table: dict[str, list[int]], pointer: str) -> list[int]:
        found: list[int] = []
        for candidate in _ancestors(pointer):
            for number in table.get(candidate, ()):
                if number not in found:
                    found.append(number)
        return sorted(found)


def rows(before: Any, after: Any, applied: Sequence[AppliedMutation]) -> list[Row]:
    """The side-by-side rows: ``tag`` (equal, insert, delete, replace), ``left``/``right`` (line
    number, text, pointer; absent on the side without a line) and ``by`` (indices into ``applied``:
    the mutations that wrote the line's field; ``kept`` when they wrote the value it already had)."""
    left_text, right_text = dump(before), dump(after)
    left, right = left_text.splitlines(), right_text.splitlines()
    left_pointers, right_pointers = line_pointers(left_text), line_pointers(right_text)
    index = _Index(applied)
    out: list[Row] = []

    def side(lines: list[str], pointers: list[str], number: int) -> dict[str, Any]:
        return {"no": number + 1, "text": lines[number], "pointer": pointers[number]}

    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for offset in range(max(i2 - i1, j2 - j1)):
            row: Row = {"tag": tag}
            i, j = i1 + offset, j1 + offset
            if i < i2:
                row["left"] = side(left, left_pointers, i)
            if j < j2:
                row["right"] = side(right, right_pointers, j)
            if tag == "equal":
                kept = index.find(index.kept, right_pointers[j])
                if kept:
                    row["kept"] = kept
            else:
                by = index.find(index.written, right_pointers[j]) if j < j2 else []
                if i < i2:
                    by += [n for n in index.find(index.removed, left_pointers[i]) if n not in by]
                if by:
                    row["by"] = sorted(by)
            out.append(row)
    return out
