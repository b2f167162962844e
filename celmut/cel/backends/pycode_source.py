"""The Python source of one compiled expression, as it is being generated, and the rule that keeps it
safe: **no text of the policy ever becomes source text**.

Every value that comes from the expression — string and number literals, field and function names,
type names, the library functions and planner closures the code calls — is held in a constant
*cell* (``_k3``) that the generated function closes over; the source itself contains only names the
generator makes (``_t12``, ``_v2``, ``_k3``, the helpers of :mod:`celmut.cel.backends.pycode_runtime`),
Python keywords and integers the generator computed (costs, sizes, slot numbers). So there is no path
from a policy to arbitrary Python, whatever its quotes, backslashes, unicode or field names
(``object.__import__`` is the constant ``'__import__'`` looked up as a map key).
``tests/cel/test_pycode_safety.py`` parses the generated source of hostile expressions and checks it.

Python's compiler refuses more than 20 statically nested blocks (``for``/``try``) and its tokenizer
more than 100 indentation levels: :meth:`Source.indented` raises :class:`Unsupported` well before
either, and the generator lets the planner evaluate that subtree instead.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

MAX_INDENT = 48  # indentation levels inside the generated function (the tokenizer's limit is 100)
MAX_BLOCKS = 12  # nested for/try blocks, an except clause counting twice (the compiler's limit is 20)
_BASE_INDENT = 2  # the generated function sits inside its factory: ``def _make(_K): def _cel(ctx):``
GENERATED_NAME = re.compile(r"_[a-z]{1,2}[0-9]+")


class Unsupported(Exception):
    """A construct the generator does not emit (or not this deep): the planner evaluates it."""


class Source:
    """Lines of the function body, the constants it closes over, and the names its prologue binds."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = 0
        self.blocks = 0
        self.constants: list[Any] = []
        self._constant_names: dict[Any, str] = {}
        self.constant_types: dict[str, type] = {}  # the Python type of each constant cell's value
        self._counter = itertools.count()
        self.prologue: set[str] = set()  # which of ctx.vars / ctx.budget / ctx.slots the body reads

    # --- names -------------------------------------------------------------------------------------

    def name(self, prefix: str = "_t") -> str:
        """A fresh local name: ``_t`` temporaries, ``_v`` CEL variables, ``_e`` held errors, ``_i`` iterators."""
        made = f"{prefix}{next(self._counter)}"
        assert GENERATED_NAME.fullmatch(made), made
        return made

    def const(self, value: Any) -> str:
        """The cell name holding ``value`` (strings and integers shared by value, anything else by identity)."""
        cls = type(value)
        key: Any = (cls, value) if cls is str or cls is int else (cls, id(value))
        found = self._constant_names.get(key)
        if found is None:
            found = f"_k{len(self.constants)}"
            self.constants.append(value)
            self._constant_names[key] = found
            self.constant_types[found] = cls
        return found

    def is_str_check(self, atom: str) -> str | None:
        """``type(atom) is str``, "" when ``atom`` is a string constant, None when it is another one."""
        known = self.constant_types.get(atom)
        if known is None:
            return f"type({atom}) is str"
        return "" if known is str else None

    def uses(self, what: str) -> str:
        """The prologue local for ``ctx.vars`` (``_V``), ``ctx.budget`` (``_B``) or ``ctx.slots`` (``_S``)."""
        self.prologue.add(what)
        return {"vars": "_V", "budget": "_B", "slots": "_S"}[what]

    # --- lines -------------------------------------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append("    " * (_BASE_INDENT + self.indent) + text)

    def insert(self, position: int, text: str, indent: int) -> None:
        """Insert a line written after the lines it must precede (a loop's header after its body)."""
        self.lines.insert(position, "    " * (_BASE_INDENT + indent) + text)

    @contextmanager
    def indented(self, header: str | None = None, blocks: int = 0) -> Iterator[None]:
        """Lines under ``header`` (a nested suite); ``blocks``: how many compiler blocks it opens."""
        if self.indent + 1 > MAX_INDENT or self.blocks + blocks > MAX_BLOCKS:
            raise Unsupported("nested too deeply for one Python function")
        if header is not None:
            self.line(header)
        self.indent += 1
        self.blocks += blocks
        written = len(self.lines)
        try:
            yield
            if len(self.lines) == written:  # an operand that is a constant: nothing to compute
                self.line("pass")
        finally:
            self.indent -= 1
            self.blocks -= blocks

    def mark(self) -> tuple[int, int, int]:
        return len(self.lines), self.indent, self.blocks

    def rollback(self, mark: tuple[int, int, int]) -> None:
        """Forget the lines written since ``mark`` (a subtree the planner evaluates instead)."""
        del self.lines[mark[0] :]
        self.indent, self.blocks = mark[1], mark[2]

    # --- the whole module ----------------------------------------------------------------------------

    def module(self, result: str) -> str:
        """``_make(_K)``: binds the constants as cells and returns the expression's function."""
        head = ["def _make(_K):"]
        if self.constants:
            names = ", ".join(f"_k{i}" for i in range(len(self.constants)))
            head.append(f"    {names}, = _K")
        head.append("    def _cel(ctx):")
        prologue = [
            f"        {local} = ctx.{field}"
            for field, local in (("vars", "_V"), ("budget", "_B"), ("slots", "_S"))
            if field in self.prologue
        ]
        return "\n".join([*head, *prologue, *self.lines, f"        return {result}", "    return _cel", ""])
