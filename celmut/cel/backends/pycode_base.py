"""State and small emitters every part of the Python code generator shares: the source being written,
the planner it mirrors, the CEL variables in scope, falling back to the planner for a subtree, and
the inline forms of charging cost and counting allocation.

The generator *mirrors* :mod:`celmut.cel.planner`: each node evaluates its operands in the planner's
order, raises the planner's errors (the same helper functions build them) and charges the same
amounts at the same points, so the planner is the reference it is tested against
(``tests/cel/test_pycode_differential.py``). The static cost of everything outside loops is the
planner's, charged once per evaluation before anything runs, as it is there.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from celmut.cel import ast
from celmut.cel import types as t
from celmut.cel.backends.pycode_source import Source, Unsupported
from celmut.cel.planner import Fn, Planner, PlanRecord

_KEYWORDS = frozenset({"None", "True", "False"})  # the literals :meth:`EmitterBase.literal` writes as keywords


@dataclass
class Local:
    """A CEL variable bound by a comprehension, ``cel.bind`` or ``optMap``: a Python local, also
    stored in the planner's slot when a planner closure in its scope may read it."""

    name: str
    slot: int | None
    stored: bool = False


class EmitterBase:
    """What the generator's parts share; :meth:`emit` is the one entry point for a node."""

    def __init__(self, planner: Planner, record: PlanRecord, types: Mapping[int, t.CelType]) -> None:
        self.src = Source()
        self.planner = planner
        self.record = record
        self.types = types
        self.scopes: list[dict[str, Local]] = []
        self.fallbacks = 0  # subtrees left to the planner (tests and the program's description)

    def emit(self, node: ast.Node) -> str:
        """Write the statements computing ``node`` and return an atom holding its value: a local,
        a constant cell or ``None``/``True``/``False``."""
        closure = self.record.closures.get(id(node))
        if closure is not None:
            is_constant, value = self.planner.constant(closure)
            if is_constant:
                return self.literal(value)
        method = getattr(self, f"_{type(node).__name__}")
        if closure is None:  # a part the planner did not plan on its own: its parent emits it whole
            return str(method(node))
        mark = self.src.mark()
        try:
            return str(method(node))
        except Unsupported:
            self.src.rollback(mark)
            return self.fallback(closure)

    def fallback(self, closure: Fn) -> str:
        """Evaluate a subtree with its planner closure, which reads bound variables from slots."""
        self.fallbacks += 1
        for scope in self.scopes:
            for local in scope.values():
                local.stored = True
        result = self.src.name()
        self.src.line(f"{result} = {self.src.const(closure)}(ctx)")
        return result

    def literal(self, value: Any) -> str:
        if value is None or value is True or value is False:
            return repr(value)  # the keyword: None, True or False
        return self.src.const(value)

    def subject(self, node: ast.Node) -> str:
        """``node`` emitted as the subject of a subscript: never a bare ``None``/``True``/``False``
        (:meth:`literal` writes them as keywords), on which Python's compiler warns — ``None[k]``:
        "SyntaxWarning: 'NoneType' object is not subscriptable" — to the user's stderr. A local holds it
        instead; evaluating it raises the same TypeError, which the exact path turns into CEL's error."""
        emitted = self.emit(node)
        return self.assign(emitted) if emitted in _KEYWORDS else emitted

    def lookup(self, name: str) -> Local | None:
        for scope in reversed(self.scopes):
            local = scope.get(name)
            if local is not None:
                return local
        return None

    def store_line(self, local: Local) -> str:
        """The statement that puts a bound variable where planner closures read it."""
        assert local.slot is not None
        return f"{self.src.uses('slots')}[{int(local.slot)}] = {local.name}"

    # --- cost and allocation, inline -----------------------------------------------------------------

    def charge(self, units: int) -> None:
        """``ctx.charge(units)`` without the call: add, and let ``charge(0)`` raise or check the clock
        only when a limit or the next clock check is reached (the same test ``charge`` makes)."""
        self.src.line(f"ctx.cost += {int(units)}")
        self.src.line("if ctx.cost > ctx.limit or ctx.cost >= ctx.next_clock_check: ctx.charge(0)")

    def allocate(self, nbytes: int) -> None:
        """``ctx.allocate(nbytes)`` without the call (``allocate(0)`` raises past the request's limit)."""
        self.allocate_expression(str(int(nbytes)))

    def allocate_expression(self, nbytes: str) -> None:
        """:meth:`allocate` of a Python expression made of generated names and integers."""
        budget = self.src.uses("budget")
        self.src.line(f"{budget}.allocated += {nbytes}")
        self.src.line(f"if {budget}.allocated > {budget}.max_bytes: ctx.allocate(0)")

    # --- recurring statement shapes ------------------------------------------------------------------

    def optional_entry(self, value: str, kind: str, store: str) -> None:
        """``?entry`` of a list, map or typed construction: ``value`` must be an optional
        (no_such_overload(kind) otherwise); a present one is stored with ``store`` (a statement of
        generated names, ``{value}`` its value), an empty one leaves the entry out."""
        src = self.src
        src.line(f"if not isinstance({value}, _Optional): raise _nso({src.const(kind)}, {value})")
        src.line(f"if {value}.present: {store.format(value=f'{value}.value')}")

    @contextmanager
    def guarded(self, *handlers: tuple[str, tuple[str, ...]]) -> Iterator[None]:
        """Statements in a ``try``, each handler an ``except`` clause: (what it catches, its lines)."""
        src = self.src
        with src.indented("try:", blocks=1):
            yield
        for catch, lines in handlers:
            with src.indented(f"except {catch}:", blocks=2):
                for line in lines:
                    src.line(line)

    def attempt(self, statement: str, catch: str, handler: str) -> None:
        """``try: statement`` / ``except catch: handler``: the inline common case, and the exact one."""
        with self.guarded((catch, (handler,))):
            self.src.line(statement)

    def library_call(self, name: str) -> AbstractContextManager[None]:
        """Statements calling a library implementation: a Python error it raises becomes the CEL
        error ``name: message`` (:func:`celmut.cel.calls.impl_error`), a CEL error passes."""
        python_error = (f"raise _impl_error({name}, _x) from _x",)
        return self.guarded(("_CelError", ("raise",)), ("_IMPL_ERRORS as _x", python_error))

    def holding_error(self, held: str, *then: str) -> AbstractContextManager[None]:
        """Statements whose CEL error is held in ``held`` (the first one only) while evaluation goes
        on, as ``&&``, ``||``, ``all`` and ``exists`` do; a cost error is never held."""
        hold = (f"if {held} is None: {held} = _x", *then)
        return self.guarded(("_CostError", ("raise",)), ("_EvalError as _x", hold))

    def raise_held(self, held: str) -> None:
        """Raise a held-back error, forgetting it on the way (as the planner's ``finally``), so no
        frame -> error -> traceback -> frame cycle outlives the evaluation."""
        with self.src.indented("try:", blocks=1):
            self.src.line(f"raise {held}")
        with self.src.indented("finally:", blocks=2):
            self.src.line(f"{held} = None")

    def assign(self, value: str) -> str:
        """A new local holding the Python expression ``value`` (built only from generated names)."""
        result = self.src.name()
        self.src.line(f"{result} = {value}")
        return result
