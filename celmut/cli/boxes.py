"""Boxed tables as the Kyverno CLI prints them (``cmd/cli/kubectl-kyverno/output/table``:
``│`` between columns, ``─`` rules, a header row), for ``celmut test`` and ``celmut apply --table``.
Cells may carry colour: widths count the visible characters only."""

from __future__ import annotations

import re
from collections.abc import Sequence

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _width(text: str) -> int:
    return len(_ANSI.sub("", text))


def box_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table boxed like Kyverno's (``│`` columns, ``─`` rules); the first column is right-aligned."""
    widths = [max([_width(h), *(_width(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(left: str, middle: str, right: str) -> str:
        return left + middle.join("─" * (w + 2) for w in widths) + right

    def cells(values: Sequence[str]) -> str:
        padded = [
            " " * (w - _width(v)) + v if i == 0 else v + " " * (w - _width(v))
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return "│ " + " │ ".join(padded) + " │"

    out = [line("┌", "┬", "┐"), cells(headers), line("├", "┼", "┤")]
    out += [cells(r) for r in rows]
    out.append(line("└", "┴", "┘"))
    return "\n".join(out) + "\n"
