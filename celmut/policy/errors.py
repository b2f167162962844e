"""Errors of policy loading and compilation.

A :class:`PolicyError` names where the problem is: the file, the policy (kind and name), the field
path (``spec.mutations[1].applyConfiguration.expression``) and, for CEL, the line and column inside
the expression. A policy with any error is rejected as a whole; other policies still load.
"""

from __future__ import annotations

from dataclasses import dataclass

from celmut.errors import CelmutError


@dataclass(frozen=True)
class FieldError:
    """One problem at a field path; ``line``/``column`` point into a CEL expression when set."""

    path: str
    message: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        where = f" (expression line {self.line}, column {self.column})" if self.line else ""
        return f"{self.path}: {self.message}{where}" if self.path else self.message


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

    def render(self) -> str:
        head = self.source if self._source_names_it() else f"{self.source}: {self.kind} {self.name or '<unnamed>'}"
        if len(self.errors) == 1:
            return f"{head}: {self.errors[0]}"
        return head + ":\n" + "\n".join(f"  - {e}" for e in self.errors)

    @property
    def details(self) -> str:
        """The field errors alone, for a status or an Event that is already attached to the object."""
        if len(self.errors) == 1:
            return str(self.errors[0])
        return "\n".join(f"- {e}" for e in self.errors)
