"""Typed errors of the CEL layer.

Every failure the rest of celmut can see from CEL is one of these, with a ``kind``::

    CelError
    ├── CelCompileError      kind="compile"     syntax or type-check failure; has line and column
    └── CelEvaluationError   kind="evaluation"  runtime failure (no such key, no such overload, ...)
        ├── CelCostError     kind="cost"        step budget or wall-time deadline exceeded
        └── CelInputError    kind="evaluation"  an input exceeds the size limit

Messages never embed whole input values: :func:`describe` renders a value as a short, truncated
summary, so an error can be logged or returned to a client without leaking object contents.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from celmut.errors import CelmutError

ErrorKind = Literal["compile", "evaluation", "cost"]

_MAX_SNIPPET = 40


def describe(value: Any) -> str:
    """A short, safe rendering of a value for error messages (type and a truncated preview)."""
    if isinstance(value, str):
        text = value if len(value) <= _MAX_SNIPPET else value[:_MAX_SNIPPET] + "…"
        return repr(text)
    if isinstance(value, dict):
        return f"map of {len(value)} entries"
    if isinstance(value, list | tuple):
        return f"list of {len(value)} elements"
    text = repr(value)
    return text if len(text) <= _MAX_SNIPPET else text[:_MAX_SNIPPET] + "…"


class Reschedule(BaseException):  # not an error: a request to run the work elsewhere
    """The evaluation stopped because it may not go on where it runs — its time slice on the
    webhook's event loop is over, or it would wait for I/O there — and the caller runs the whole
    request again where it may (a worker thread). Nothing was changed outside: a provider raises it
    before it acts. A ``BaseException``, so that no handler on the way turns it into a policy error."""


class CelError(CelmutError):
    """Base class of every error raised by the CEL layer."""

    kind: ErrorKind = "evaluation"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Issue:
    """One problem found while compiling an expression, at a 1-based line and column."""

    message: str
    line: int = 0
    column: int = 0

    def render(self, source: str) -> str:
        """cel-go style: ``ERROR: <input>:1:5: message`` followed by the line and a caret."""
        head = f"ERROR: <input>:{self.line}:{self.column}: {self.message}"
        if not self.line:
            return head
        lines = source.splitlines() or [""]
        text = lines[self.line - 1] if 0 < self.line <= len(lines) else ""
        return f"{head}\n | {text}\n | {'.' * max(self.column - 1, 0)}^"


class CelCompileError(CelError):
    """The expression does not parse or does not type-check in the chosen environment."""

    kind: ErrorKind = "compile"

    def __init__(self, issues: list[Issue], source: str) -> None:
        self.issues = issues
        self.source = source
        first = issues[0]
        self.line = first.line
        self.column = first.column
        super().__init__("\n".join(issue.render(source) for issue in issues))

    @property
    def summary(self) -> str:
        """The first issue on one line: ``1:5: message``."""
        first = self.issues[0]
        return f"{first.line}:{first.column}: {first.message}"


class CelEvaluationError(CelError):
    """Evaluation failed: the CEL error value that reached the top of the expression."""

    kind: ErrorKind = "evaluation"


class CelCostError(CelEvaluationError):
    """The evaluation exceeded its step budget or its wall-clock deadline."""

    kind: ErrorKind = "cost"


class CelInputError(CelEvaluationError):
    """An input value is larger than the configured limit and was refused before evaluation."""
