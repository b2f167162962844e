"""The RFC 6902 diff between an original and a mutated object.

The admission response carries the difference between the original and the final object, computed
here (as Kyverno does) rather than the policies' own operations. The diff descends into maps and
lists (index by index, then ``add`` for appended items or ``remove`` for dropped ones); a subtree
that is the same object on both sides is skipped without comparing, which copy-on-write merges make
the common case.
"""

from __future__ import annotations

from typing import Any

from celmut.jsonutil import escape_pointer, json_copy

__all__ = ["diff", "escape", "json_copy"]


escape = escape_pointer


def diff(old: Any, new: Any, path: str = "") -> list[dict[str, Any]]:
    """RFC 6902 operations that turn ``old`` into ``new``."""
    ops: list[dict[str, Any]] = []
    _diff(old, new, path, ops)
    return ops


def _same(a: Any, b: Any) -> bool:
    return a is b or (type(a) is type(b) and a == b)


def _diff(old: Any, new: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if old is new:
        return
    if type(old) is dict and type(new) is dict:
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": f"{path}/{escape(str(key))}"})
        for key, value in new.items():
            if key not in old:
                ops.append({"op": "add", "path": f"{path}/{escape(str(key))}", "value": value})
            elif not _same(old[key], value):
                _diff(old[key], value, f"{path}/{escape(str(key))}", ops)
        return
    if type(old) is list and type(new) is list:
        for index, (a, b) in enumerate(zip(old, new, strict=False)):
            if not _same(a, b):
                _diff(a, b, f"{path}/{index}", ops)
        for index in range(len(old), len(new)):
            ops.append({"op": "add", "path": f"{path}/{index}", "value": new[index]})
        for index in range(len(old) - 1, len(new) - 1, -1):
            ops.append({"op": "remove", "path": f"{path}/{index}"})
        return
    if not _same(old, new) or type(old) is not type(new):
        ops.append({"op": "replace", "path": path, "value": new})
