"""What the controller did (or, with ``--dry-run``, would do): JSON, a table, and a progress line.

A ``--dry-run`` report is streamed (:class:`ReportWriter`): each target is written as it finishes
and only counts stay in memory, so a scan of 100,000 pods holds no more than one of 1,000."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import IO, Any

from celmut.controller.reconcile import Outcome


class Report:
    """Outcomes of one run, one per target (the last pass over a target wins) — or, once
    :meth:`stream_to` a writer, written there as they come and only counted (``outcomes()`` then
    holds none).

    ``keep``: a long-running controller keeps only the outcomes of the last ``keep`` targets (without
    the patched object), and counts the rest, so its memory does not grow with the targets it patched;
    None (a ``--dry-run`` pass) keeps every one."""

    def __init__(self, keep: int | None = None) -> None:
        self.keep = keep
        self._outcomes: OrderedDict[Any, Outcome] = OrderedDict()
        self._counts: dict[str, int] = {}
        self._writer: ReportWriter | None = None
        self._lock = threading.Lock()

    def stream_to(self, writer: ReportWriter) -> None:
        """From now on, write each outcome to ``writer`` instead of keeping it."""
        with self._lock:
            self._writer = writer

    def record(self, outcome: Outcome) -> None:
        with self._lock:
            if self._writer is not None:
                self._writer.write(outcome)
                return
            if self.keep is None:
                self._outcomes[outcome.key] = outcome
                return
            self._counts[outcome.action] = self._counts.get(outcome.action, 0) + 1
            self._outcomes.pop(outcome.key, None)
            self._outcomes[outcome.key] = dataclasses.replace(outcome, written=None) if outcome.written else outcome
            while len(self._outcomes) > self.keep:
                self._outcomes.popitem(last=False)

    def outcomes(self) -> list[Outcome]:
        """The outcomes kept (none of those streamed to a writer; the last ``keep`` targets' when bounded)."""
        with self._lock:
            return sorted(self._outcomes.values(), key=lambda o: o.key)

    def summary(self) -> dict[str, int]:
        """Targets by action: those streamed, else every pass counted (bounded), else those kept."""
        with self._lock:
            if self._writer is not None:
                return dict(self._writer.counts)
            if self.keep is not None:
                return dict(self._counts)
            return _counts(self._outcomes.values())

    def to_json(self) -> dict[str, Any]:
        outcomes = self.outcomes()
        return {"summary": _counts(outcomes), "targets": [o.to_dict() for o in outcomes]}

    def write(self, path: str) -> None:
        text = json.dumps(self.to_json(), indent=2) + "\n"
        if path == "-":
            sys.stdout.write(text)
        else:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)


class ReportWriter:
    """A report written as targets finish, keeping only counts by action.

    ``json_out`` gets the JSON document ``{"targets": [...], "summary": {...}}`` with one target per
    line, in the order they were processed (the same fields as :meth:`Report.to_json`; the summary
    comes last because it is known last). ``table_out`` gets the table of :func:`table`, spooled to a
    temporary file and copied out on :meth:`close`, after the progress bar. One pass over a target is
    one entry: a pod that a mutateExisting policy targets and a drift policy re-admits is two."""

    def __init__(self, json_out: IO[str] | None = None, table_out: IO[str] | None = None) -> None:
        self.counts: dict[str, int] = {}
        self._json = json_out
        self._table_out = table_out
        self._table: IO[str] | None = (
            tempfile.TemporaryFile("w+", encoding="utf-8") if table_out is not None else None  # noqa: SIM115
        )
        if json_out is not None:
            json_out.write('{"targets": [')

    def write(self, outcome: Outcome) -> None:
        first = not self.counts
        self.counts[outcome.action] = self.counts.get(outcome.action, 0) + 1
        if self._json is not None:
            self._json.write(("\n  " if first else ",\n  ") + json.dumps(outcome.to_dict()))
            self._json.flush()  # a reader (or a crash) sees every finished target
        if self._table is not None:
            self._table.writelines(line + "\n" for line in _table_lines(outcome))

    def failed(self) -> bool:
        return self.counts.get("failed", 0) > 0

    def close(self) -> None:
        """End the JSON document with the summary; copy the table out, with its summary line."""
        if self._json is not None:
            newline = "\n" if self.counts else ""
            self._json.write(f'{newline}],\n"summary": {json.dumps(dict(sorted(self.counts.items())))}}}\n')
            self._json.flush()
        if self._table is not None and self._table_out is not None:
            self._table.seek(0)
            shutil.copyfileobj(self._table, self._table_out)
            self._table.close()
            self._table_out.write(_summary_line(self.counts) + "\n")
            self._table_out.flush()


def _counts(outcomes: Iterable[Outcome]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.action] = counts.get(outcome.action, 0) + 1
    return counts


def _table_lines(outcome: Outcome) -> list[str]:
    """One target's lines of the table: none when unchanged."""
    if outcome.action == "unchanged":
        return []
    lines = [f"{outcome.action:<12} {outcome.key}"]
    for change in outcome.changes:
        for op in change.patch:
            value = f" {json.dumps(op['value'])}" if "value" in op else ""
            lines.append(f"{'':<12}   {op['op']} {op['path']}{value[:80]}   ← {change.policy} {change.mutation}")
    if outcome.needs_restart:
        lines.append(f"{'':<12}   {len(outcome.needs_restart)} change(s) need the pod replaced")
    if outcome.message:
        lines.append(f"{'':<12}   {outcome.message}")
    return lines


def _summary_line(counts: dict[str, int]) -> str:
    summary = ", ".join(f"{count} {action}" for action, count in sorted(counts.items()))
    return f"{sum(counts.values())} targets: {summary or 'none'}"


def table(outcomes: Iterable[Outcome]) -> str:
    """A readable summary: one line per changed target, with each change's policy and mutation."""
    kept = list(outcomes)
    lines = [line for outcome in kept for line in _table_lines(outcome)]
    return "\n".join([*lines, _summary_line(_counts(kept))])


class Progress:
    """``done/total`` on one terminal line, redrawn at most ten times a second (only on a TTY)."""

    def __init__(self, stream: IO[str] | None = None, label: str = "scan") -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.label = label
        self._drawn = 0.0

    def update(self, done: int, total: int, *, final: bool = False) -> None:
        if not self.enabled or (not final and time.monotonic() - self._drawn < 0.1):
            return
        self._drawn = time.monotonic()
        width = 30
        filled = width * done // total if total else width
        bar = "█" * filled + "·" * (width - filled)
        self.stream.write(f"\r{self.label} {bar} {done}/{total}")
        if final:
            self.stream.write("\n")
        self.stream.flush()
