"""What the controller did (or, with ``--dry-run``, would do): JSON, a table, and a progress line."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterable
from typing import IO, Any

from celmut.controller.reconcile import Outcome


class Report:
    """Outcomes of one run, one per target (the last pass over a target wins)."""

    def __init__(self) -> None:
        self._outcomes: dict[Any, Outcome] = {}
        self._lock = threading.Lock()

    def record(self, outcome: Outcome) -> None:
        with self._lock:
            self._outcomes[outcome.key] = outcome

    def outcomes(self) -> list[Outcome]:
        with self._lock:
            return sorted(self._outcomes.values(), key=lambda o: o.key)

    def to_json(self) -> dict[str, Any]:
        outcomes = self.outcomes()
        summary: dict[str, int] = {}
        for outcome in outcomes:
            summary[outcome.action] = summary.get(outcome.action, 0) + 1
        return {"summary": summary, "targets": [o.to_dict() for o in outcomes]}

    def write(self, path: str) -> None:
        text = json.dumps(self.to_json(), indent=2) + "\n"
        if path == "-":
            sys.stdout.write(text)
        else:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)


def table(outcomes: Iterable[Outcome]) -> str:
    """A readable summary: one line per changed target, with each change's policy and mutation."""
    lines: list[str] = []
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.action] = counts.get(outcome.action, 0) + 1
        if outcome.action == "unchanged":
            continue
        lines.append(f"{outcome.action:<12} {outcome.key}")
        for change in outcome.changes:
            for op in change.patch:
                value = f" {json.dumps(op['value'])}" if "value" in op else ""
                lines.append(f"{'':<12}   {op['op']} {op['path']}{value[:80]}   ← {change.policy} {change.mutation}")
        if outcome.needs_restart:
            lines.append(f"{'':<12}   {len(outcome.needs_restart)} change(s) need the pod replaced")
        if outcome.message:
            lines.append(f"{'':<12}   {outcome.message}")
    summary = ", ".join(f"{count} {action}" for action, count in sorted(counts.items()))
    return "\n".join([*lines, f"{sum(counts.values())} targets: {summary or 'none'}"])


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
