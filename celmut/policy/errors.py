"""Errors of policy loading and compilation.

A :class:`PolicyError` names where the problem is: the file, the policy (kind and name), the field
path (``spec.mutations[1].applyConfiguration.expression``) and, for CEL, the line and column inside
the expression. A policy with any error is rejected as a whole; other policies still load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from celmut.errors import CelmutError


@dataclass(frozen=True)
class FieldError:
    """One problem at a field path; ``line``/``column`` point into a CEL expression when set, and
    ``expression`` (the expression's text, when known) lets :meth:`snippet` show where."""

    path: str
    message: str
    line: int = 0
    column: int = 0
    expression: str = field(default="", compare=False, repr=False)
    #: A CEL compile issue's own message (cel-go's words), when the error is one.
    issue: str = field(default="", compare=False, repr=False)
    #: Kyverno's detail for the same refusal of ``expression`` (``output is expected to be of type bool``),
    #: when Kyverno words it otherwise: its webhook answers ``<path>: Invalid value: "<expression>": <detail>``.
    kyverno_detail: str = field(default="", compare=False, repr=False)

    def __str__(self) -> str:
        where = f" (expression line {self.line}, column {self.column})" if self.line else ""
        return f"{self.path}: {self.message}{where}" if self.path else self.message

    def cel_go(self) -> str:
        """A CEL compile issue as cel-go prints it (``issues.Err().Error()``): ``ERROR: <input>:L:C: …``,
        the expression's line and a caret."""
        head = f"ERROR: <input>:{self.line}:{self.column}: {self.issue}"
        snippet = self.snippet()
        return f"{head}\n{snippet}" if snippet else head

    def snippet(self) -> str:
        """The expression's line with a caret under the column, or '' without a position."""
        return caret_snippet(self.expression, self.line, self.column)


def caret_snippet(source: str, line: int, column: int) -> str:
    """cel-go's way of pointing into an expression: its line, and a caret under the 1-based column."""
    lines = source.splitlines()
    if not line or not 0 < line <= len(lines):
        return ""
    return f" | {lines[line - 1]}\n | {'.' * max(column - 1, 0)}^"


def kyverno_errors(errors: Sequence[FieldError]) -> list[str]:
    """The errors as Kubernetes' ``field.Error`` prints them in Kyverno's admission answers: the CEL
    issues of one expression are one ``<path>: Invalid value: "<expression>": <cel-go errors>`` (Kyverno's
    ``compiler.CompileMutation`` and friends: ``field.Invalid(path, expression, issues.Err().Error())``);
    every other error reads as celmut writes it, in the same ``<path>: <Type>: <detail>`` form."""
    from celmut.cel.libs.golang import quote  # Go's strconv.Quote, the %q of ErrorBody

    out: list[str] = []
    index = 0
    while index < len(errors):
        error = errors[index]
        if not error.issue:
            detail = f"Invalid value: {quote(error.expression)}: {error.kyverno_detail}" if error.kyverno_detail else ""
            out.append(f"{error.path}: {detail}" if detail else str(error))
            index += 1
            continue
        issues = [error]
        while (
            index + len(issues) < len(errors)
            and errors[index + len(issues)].issue
            and errors[index + len(issues)].path == error.path
        ):
            issues.append(errors[index + len(issues)])
        detail = "\n".join(i.cel_go() for i in issues)
        out.append(f"{error.path}: Invalid value: {quote(error.expression)}: {detail}")
        index += len(issues)
    return out


def aggregate(messages: Sequence[str]) -> str:
    """``utilerrors.Aggregate.Error()`` (k8s.io/apimachinery/pkg/util/errors): one message alone, else
    the distinct ones in order, comma-separated in brackets."""
    distinct = list(dict.fromkeys(messages))
    if len(distinct) == 1:
        return distinct[0]
    return "[" + ", ".join(distinct) + "]"


class PolicyError(CelmutError):
    """A document was rejected; carries every field error found in it."""

    def __init__(self, source: str, kind: str, name: str, errors: list[FieldError]) -> None:
        self.source = source
        self.kind = kind
        self.name = name
        self.errors = errors
        super().__init__(self.render())

    def _source_names_it(self) -> bool:
        """Whether the source already names the object (``cluster:MutatingPolicy/x`` for MutatingPolicy x)."""
        where = self.source.partition(":")[2] if self.source.startswith("cluster:") else ""
        return where.split("/", 1)[0] == self.kind and where.rsplit("/", 1)[-1] == (self.name or "").rsplit("/", 1)[-1]

    def render(self, *, snippets: bool = False) -> str:
        """Every field error; with ``snippets``, each CEL error followed by its caret snippet (for a
        terminal; logs, Events and status conditions keep one line per error)."""
        head = self.source if self._source_names_it() else f"{self.source}: {self.kind} {self.name or '<unnamed>'}"

        def shown(error: FieldError, indent: str) -> str:
            snippet = error.snippet() if snippets else ""
            return f"{error}\n{indent}{snippet.replace(chr(10), chr(10) + indent)}" if snippet else str(error)

        if len(self.errors) == 1:
            return f"{head}: {shown(self.errors[0], '')}"
        return head + ":\n" + "\n".join(f"  - {shown(e, '    ')}" for e in self.errors)

    @property
    def details(self) -> str:
        """The field errors alone, for a status or an Event that is already attached to the object."""
        if len(self.errors) == 1:
            return str(self.errors[0])
        return "\n".join(f"- {e}" for e in self.errors)


class PolicySetError(PolicyError):
    """Some policy sources were rejected: every problem found in all of them, one per line
    (``celmut.load`` raises it, so a caller sees the whole list at once, as ``celmut apply`` prints it)."""

    def __init__(self, problems: list[Exception]) -> None:
        self.problems = problems
        self.source, self.kind, self.name = "", "", ""
        self.errors = [e for p in problems if isinstance(p, PolicyError) for e in p.errors]
        CelmutError.__init__(self, self.render())

    def render(self, *, snippets: bool = False) -> str:
        return "\n".join(p.render(snippets=snippets) if isinstance(p, PolicyError) else str(p) for p in self.problems)
