"""Timing helpers: median of repeated runs, per-call microseconds, printed side by side."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def per_call_us(fn: Callable[[], object], *, min_time: float = 0.2, repeats: int = 5) -> float:
    """Median over ``repeats`` of the mean time per call, in µs (calls batched to ``min_time``)."""
    fn()  # warm up (caches, lazy imports)
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time / repeats or calls > 1_000_000:
            break
        calls *= 2
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def table(title: str, headers: list[str], rows: list[list[str]]) -> str:
    """A plain-text table: first column left-aligned, the others right-aligned."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=False)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=False))
        )

    out = [title, line(headers), line(["-" * w for w in widths])]
    out += [line(row) for row in rows]
    return "\n".join(out)
