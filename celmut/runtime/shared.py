"""Expressions several policies share, evaluated once per request and object state (issue 36).

The policies of a set often repeat a matchCondition — ``!(object.metadata.namespace in [...])``,
``"team" in object.metadata.labels`` — or a variable, and each would evaluate it again on the same
request. When such an expression is *pure* its value depends only on what it reads of the request, so
the engine evaluates it once and hands the value to every later policy that asks while those parts are
unchanged. Pure means: it reads nothing but ``object``, ``oldObject``, ``request`` and
``namespaceObject`` (no params, no exceptions, no other variable, no ``authorizer``), and calls no
function that reads the cluster, the clock, the network or a random source (the libraries declare
each such function ``pure=False``: :attr:`celmut.cel.declarations.Overload.pure`).

Only ``object`` changes during a request (each policy sees the object as the previous ones left it);
the other inputs are the request's. *Unchanged* is decided without comparing values: mutations copy
what they change and share everything else (copy-on-write), so a part of the object that is still the
same Python object holds the same value. Which parts an expression reads comes from its checked tree,
by the CEL layer's analysis of how an expression reads its inputs (:mod:`celmut.cel.access`):
``object.metadata.?labels["app"].orValue("") == "web" && object.spec.containers.exists(c,
c.image.startsWith("nginx"))`` reads the ``app`` label and the containers list, so after a policy that
added another label and annotations (new ``labels`` and ``annotations`` maps, the same label value
and the same list), the next policy with that condition gets its value without evaluating it.

A reused value costs what its evaluation cost: the same cost units and allocated bytes are charged to
the request's budget, and when they would not fit the expression is evaluated again, so a request runs
out of budget where it would have. Errors are never reused: the expression is evaluated again and fails
the same way. Only expressions that two or more policies share are looked up here; the others cost
nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from celmut import cel
from celmut.cel import access, ast
from celmut.cel.profiles import KUBERNETES_LIBRARIES, KYVERNO_LIBRARIES
from celmut.compile.compiled import CompiledPolicy

# The request's inputs an expression may read and still be shared (all but ``object`` are the same for
# every policy of a request).
_INPUTS = frozenset({"object", "oldObject", "request", "namespaceObject"})
_IMPURE = frozenset(
    overload.id
    for library in (*KUBERNETES_LIBRARIES, *KYVERNO_LIBRARIES)
    for overload in library.overloads
    if not overload.pure
)
_MISSING: Any = object()

Path = tuple[str, ...]


def reads(expression: ast.Node) -> tuple[Path, ...] | None:
    """The parts of ``object`` an expression reads, as key paths from the object (``()``: the whole
    object); None when it reads ``object`` in a way the analysis does not follow."""

    def is_object(node: ast.Node, local_names: set[str]) -> bool:
        return isinstance(node, ast.Ident) and node.name == "object" and "object" not in local_names

    analysis = access.Analysis(is_object)
    analysis.use(expression, access.WHOLE)
    need: access.Need = access.EMPTY
    for found in analysis.needs.values():
        need = access.merge(need, found)
    if not analysis.needs:
        return ()
    paths: list[Path] = []
    _paths(need, (), paths)
    return tuple(paths)


def _paths(need: access.Need, prefix: Path, out: list[Path]) -> None:
    """The key paths a need reaches: a field read field by field is followed into; anything else (the
    value whole, iterated, or only tested for presence) stops there, at the value itself."""
    if isinstance(need, access.Fields) and all(isinstance(key, str) for key, _ in need.items):
        for key, sub in need.items:
            _paths(sub, (*prefix, key), out)
        return
    out.append(prefix)


def shareable(program: Any) -> tuple[Path, ...] | None:
    """The paths of ``object`` a program's value depends on, when it is pure (see the module
    docstring); None when it is not, or when its checked tree is not known."""
    checked = getattr(program, "checked", None)
    if checked is None or not checked.references <= _INPUTS or checked.functions & _IMPURE:
        return None
    return reads(checked.expr)


class SharedExpressions:
    """The pure expressions two or more of an engine's policies carry (by family and source text),
    and the object paths each depends on."""

    def __init__(self, policies: Iterable[CompiledPolicy]) -> None:
        found: dict[tuple[str, str], list[Any]] = {}
        chosen = list(policies)
        for policy in chosen:
            expressions = [*policy.match_conditions, *policy.target_match_conditions]
            programs = [e.program for e in expressions] + list(policy.variables.values())
            for program in programs:
                found.setdefault((policy.semantics, program.source), []).append(program)
        self._by_program: dict[int, tuple[tuple[str, str], tuple[Path, ...]]] = {}
        self._programs: list[Any] = []  # held: the ids above stay theirs
        for key, programs in found.items():
            if len(programs) < 2:
                continue
            paths = shareable(programs[0])
            if paths is None:
                continue
            for program in programs:
                self._by_program[id(program)] = (key, paths)
                self._programs.append(program)
        # id(a policy's variables) -> the names of those it shares (policies without any are not here)
        self._variables: dict[int, frozenset[str]] = {}
        for policy in chosen:
            names = frozenset(name for name, program in policy.variables.items() if id(program) in self._by_program)
            if names:
                self._variables[id(policy.variables)] = names
                self._programs.append(policy.variables)
        # id(a policy) whose matchConditions or targetMatchConditions include a shared one (held above)
        self._sharing_conditions = frozenset(
            id(policy)
            for policy in chosen
            if any(
                id(condition.program) in self._by_program
                for condition in (*policy.match_conditions, *policy.target_match_conditions)
            )
        )
        self._programs.extend(p for p in chosen if id(p) in self._sharing_conditions)

    def __bool__(self) -> bool:
        return bool(self._by_program)

    def shares_conditions(self, policy: CompiledPolicy) -> bool:
        """Whether one of ``policy``'s conditions is shared: the others are evaluated without asking a
        request's memo (one lookup less per condition, on the path every skipped policy takes)."""
        return id(policy) in self._sharing_conditions

    def memo(self) -> SharedValues | None:
        """A request's memo (None when nothing is shared: the evaluator then never asks)."""
        return SharedValues(self._by_program, self._variables) if self._by_program else None


class SharedValues:
    """One request's values of the shared expressions, each with the parts of the object it read and
    what evaluating it cost."""

    __slots__ = ("_bound", "_by_program", "_values", "_variables")

    def __init__(
        self, by_program: dict[int, tuple[tuple[str, str], tuple[Path, ...]]], variables: dict[int, frozenset[str]]
    ) -> None:
        self._by_program = by_program
        self._variables = variables
        # (family, source) -> (the parts read, the value, cost units, bytes allocated)
        self._values: dict[tuple[str, str], tuple[tuple[Any, ...], Any, int, int]] = {}
        self._bound: dict[int, Mapping[str, Any]] = {}  # id(a policy's variables) -> as evaluated here

    def variables(self, programs: Mapping[str, Any]) -> Mapping[str, Any]:
        """A policy's variables for this request: those it shares with other policies evaluated
        through :meth:`evaluate` (``programs`` itself when it shares none)."""
        names = self._variables.get(id(programs))
        if names is None:
            return programs
        bound = self._bound.get(id(programs))
        if bound is None:
            bound = self._bound[id(programs)] = {
                name: _SharedVariable(program, self) if name in names else program for name, program in programs.items()
            }
        return bound

    def evaluate(self, program: Any, activation: cel.Activation) -> Any:
        """``program.evaluate(activation)``, or the value it had when the parts it reads were these."""
        shared = self._by_program.get(id(program))
        if shared is None:
            return program.evaluate(activation)
        key, paths = shared
        parts = _parts(activation.vars["object"], paths)
        budget = activation.budget
        known = self._values.get(key)
        if known is not None:
            seen, value, cost, allocated = known
            if (
                all(a is b for a, b in zip(seen, parts, strict=True))
                and budget.spent + cost <= budget.limit
                and budget.allocated + allocated <= budget.max_bytes
            ):
                budget.spent += cost
                budget.allocated += allocated
                return value
        spent, allocated_before = budget.spent, budget.allocated
        value = program.evaluate(activation)  # an error propagates and is not kept
        self._values[key] = (parts, value, budget.spent - spent, budget.allocated - allocated_before)
        return value


class _SharedVariable:
    """A shared variable's program, evaluated through a request's :class:`SharedValues`."""

    __slots__ = ("_program", "_values")

    def __init__(self, program: Any, values: SharedValues) -> None:
        self._program = program
        self._values = values

    def evaluate(self, activation: cel.Activation) -> Any:
        return self._values.evaluate(self._program, activation)


def _parts(obj: Any, paths: tuple[Path, ...]) -> tuple[Any, ...]:
    """The values at ``paths`` (a path stops at the first value that is not a map, or missing)."""
    out = []
    for path in paths:
        node = obj
        for key in path:
            if type(node) is not dict:
                break
            node = node.get(key, _MISSING)
        out.append(node)
    return tuple(out)
