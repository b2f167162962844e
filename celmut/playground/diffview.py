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
from celmut.sources.yaml_dumper import ObjectDumper

Row = dict[str, Any]
# libyaml's parser where PyYAML has it (the pure-Python one took ~40 s to read back a 3 MB object on a
# busy machine); only its events are read, each with its line.
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def dump(obj: Any) -> str:
    """The YAML both sides are shown in (keys in the object's order, nothing wrapped), as ``celmut apply
    -o yaml`` prints it."""
    if obj is None:
        return ""
    return yaml.dump(
        obj, Dumper=ObjectDumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1 << 20
    )


def line_pointers(text: str) -> list[str]:
    """For each line of ``text`` (one YAML document as :func:`dump` writes it), the pointer of the
    deepest field that starts on it; a line continuing a multi-line value keeps the one before it.

    Read from the parser's events (no nodes, no tags resolved): a key's line names the key's pointer,
    a sequence item's line its index's, unless a deeper field starts there too."""
    lines = len(text.splitlines())
    starts: dict[int, str] = {}
    # per open collection: [pointer, is_mapping, next index or the pending key (None: a key is next)]
    stack: list[list[Any]] = []
    for event in yaml.parse(text, Loader=_LOADER) if text.strip() else ():
        kind = type(event)
        if kind in (yaml.MappingEndEvent, yaml.SequenceEndEvent):
            stack.pop()
            continue
        if not isinstance(event, yaml.ScalarEvent | yaml.MappingStartEvent | yaml.SequenceStartEvent):
            continue
        line = event.start_mark.line if event.start_mark is not None else 0
        pointer = ""
        if stack:
            top = stack[-1]
            if top[1]:  # in a mapping: a key, then its value
                if top[2] is None and isinstance(event, yaml.ScalarEvent):
                    key = f"{top[0]}/{jsonutil.escape_pointer(str(event.value))}"
                    top[2] = starts[line] = key
                    continue
                pointer, top[2] = top[2] or top[0], None
            else:
                pointer = f"{top[0]}/{top[3]}"
                top[3] += 1
                if line not in starts or len(starts[line]) < len(pointer):
                    starts[line] = pointer
        if kind is yaml.MappingStartEvent:
            stack.append([pointer, True, None, 0])
        elif kind is yaml.SequenceStartEvent:
            stack.append([pointer, False, None, 0])
    out: list[str] = []
    current = ""
    for number in range(lines):
        current = starts.get(number, current)
        out.append(current)
    return out


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
    left_text = dump(before)
    right_text = left_text if after is before or after == before else dump(after)
    left, right = left_text.splitlines(), right_text.splitlines()
    left_pointers = line_pointers(left_text)
    right_pointers = left_pointers if right_text is left_text else line_pointers(right_text)
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
