"""The engine seam: what the rest of celmut needs from a CEL engine.

The front end (parser, macros, checker in :mod:`celmut.cel.environment`) is shared; an engine turns
a :class:`~celmut.cel.checker.CheckResult` into a :class:`Program`. Programs return celmut values
(:mod:`celmut.cel.values`) or raise :class:`~celmut.cel.errors.CelError` with a kind of
``compile``, ``evaluation`` or ``cost``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from celmut.cel import types as t
from celmut.cel.activation import Activation
from celmut.cel.checker import CheckResult
from celmut.cel.declarations import Overload


@dataclass(frozen=True)
class BackendOptions:
    """Profile-dependent evaluation rules an engine must honour."""

    # Kyverno rewrites x.orValue(y) to its strict __orValueCompat__(x, y) (pkg/cel/compiler/env.go
    # OrValueCompatEnvOptions): both evaluated, either one's error fails, a non-optional x is returned
    kyverno_or_value: bool
    profile: str = "kyverno"  # the environment's profile (which libraries and extensions exist)


class Folded:
    """The one value of a program that is a literal tree, built once at compile time, and a memo for
    what its consumers work out from it (each under its own key: a mutation's size and patch
    operations), so that is worked out once too. Consumers never modify ``value``."""

    __slots__ = ("derived", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.derived: dict[str, Any] = {}


class Program(Protocol):
    source: str
    checked: CheckResult  # the checked AST the program was built from (compile once, inspect freely)
    result_type: t.CelType
    references: frozenset[str]
    folded: Folded | None  # the program always returns folded.value (a literal tree), or None

    def evaluate(self, activation: Activation) -> Any: ...


class Backend(Protocol):
    name: str

    def program(
        self,
        checked: CheckResult,
        source: str,
        functions: Mapping[str, list[Overload]],
        options: BackendOptions,
    ) -> Program: ...
