"""The CEL environments celmut evaluates policies in: one of the two profiles of
:mod:`celmut.cel.profiles` (which own every CEL extension) plus a policy's variable declarations.

In the **kubernetes** profile ``cel.bind``, ``math.*``, ``base64.*``, cel-go regex and every Kyverno
function are compile errors, as the API server refuses such policies; variables are ``object``,
``oldObject``, ``request``, ``params``, ``namespaceObject`` and ``variables``. The **kyverno** profile
has ``exceptions`` instead of ``params``.

:class:`Environment` parses and checks once (the shared front end) and hands the checked AST to a
backend — chosen by :mod:`celmut.cel.backends.select` — and compiled
programs are cached by profile, backend, declarations and source text.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from celmut.cel import ast, parser
from celmut.cel import types as t
from celmut.cel.activation import Activation
from celmut.cel.backends import select
from celmut.cel.backends.base import Backend, BackendOptions, Program
from celmut.cel.checker import Checker, CheckResult, Declarations
from celmut.cel.declarations import Overload
from celmut.cel.errors import CelCompileError, Issue
from celmut.cel.profiles import (
    ADMISSION_REQUEST_FIELDS,
    EXCEPTIONS_FIELDS,
    EXCEPTIONS_TYPE,
    PROFILES,
    REQUEST_TYPE,
    VARIABLES_TYPE,
    Profile,
    profile,
)
from celmut.cel.program_checks import program_issues
from celmut.cel.unparse import Unparser, Unrepresentable

_CACHE_SIZE = 8192
# Python frames an expression nested to cel-go's limit (250 levels, parser.MAX_NESTING) needs to be
# parsed, checked, planned and evaluated: about six per level at most, measured.
_RECURSION_HEADROOM = 5000
# cel-go's parser refuses longer expressions before parsing (parser/parser.go, expressionSizeCodePointLimit
# default 100_000); the API server runs with that default. Compiling one costs seconds and hundreds of MB.
MAX_EXPRESSION_CODE_POINTS = 100_000
_cache: OrderedDict[tuple[Any, str], Program] = OrderedDict()
_cache_lock = threading.Lock()
_function_tables: dict[str, dict[str, list[Overload]]] = {}


def _function_table(prof: Profile) -> dict[str, list[Overload]]:
    table = _function_tables.get(prof.name)
    if table is None:
        table = _function_tables[prof.name] = prof.functions()
    return table


def _unavailable_hints(prof: Profile) -> dict[str, str]:
    hints: dict[str, str] = {}
    for other in PROFILES.values():
        if other is prof:
            continue
        mine = _function_table(prof)
        for name in _function_table(other):
            if name not in mine:
                hints[name] = f"available only in the {other.description} environment"
        for macro in other.macros - prof.macros:
            hints[macro] = f"available only in the {other.description} environment"
    return hints


class Environment:
    """A CEL environment: a profile plus the policy's variable declarations and a backend."""

    def __init__(
        self,
        profile_name: str = "kyverno",
        *,
        variables: Mapping[str, t.CelType] | None = None,
        backend: Backend | str | None = None,
    ) -> None:
        _ensure_recursion_headroom()
        self.profile = profile(profile_name)
        self.variable_types: dict[str, t.CelType] = dict(variables or {})
        self.backend: Backend = select.backend(backend) if backend is None or isinstance(backend, str) else backend
        self.functions = _function_table(self.profile)
        self.options = BackendOptions(kyverno_or_value=self.profile.kyverno_or_value, profile=self.profile.name)
        self.declarations = Declarations(
            variables=self.profile.variables,
            functions=self.functions,
            records={
                REQUEST_TYPE.name: ADMISSION_REQUEST_FIELDS,
                VARIABLES_TYPE.name: self.variable_types,
                EXCEPTIONS_TYPE.name: EXCEPTIONS_FIELDS,
            },
            constants=self.profile.constants(),
            unavailable_hint=_unavailable_hints(self.profile),
        )
        self._key = (
            self.profile.name,
            self.backend.name,
            tuple(sorted((k, str(v)) for k, v in self.variable_types.items())),
        )

    def with_variables(self, variables: Mapping[str, t.CelType]) -> Environment:
        """The same environment with ``variables.<name>`` declared for the given names."""
        return Environment(self.profile.name, variables=variables, backend=self.backend)

    def check(self, source: str) -> CheckResult:
        """Parse, expand macros and type-check; raises :class:`CelCompileError`."""
        if len(source) > MAX_EXPRESSION_CODE_POINTS:
            size, limit = len(source), MAX_EXPRESSION_CODE_POINTS
            message = f"expression code point size exceeds limit: size: {size}, limit {limit}"
            raise CelCompileError([Issue(message)], source)
        try:
            expr = parser.parse(source, self.profile.macros)
            return Checker(self.declarations, source).check(expr)
        except RecursionError:  # pragma: no cover - the parser's nesting limit comes first
            raise CelCompileError([Issue("expression is nested too deeply", 1, 1)], source) from None

    def compile(self, source: str) -> Program:
        """A ready-to-evaluate program for ``source`` (cached)."""
        key = (self._key, source)
        with _cache_lock:
            program = _cache.get(key)
            if program is not None:
                _cache.move_to_end(key)
                return program
        checked = self.check(source)
        program = self.backend.program(checked, source, self.functions, self.options)
        # Both systems build programs with k8s.io/apiserver's plugin/cel compiler on its base
        # environment: kube-apiserver for a MAP, Kyverno's MutatingPolicy compiler through
        # environment.MustBaseEnvSet and plugincel.NewCompositedCompiler
        # (kyverno pkg/cel/policies/mpol/compiler/compiler.go).
        self._refuse_constant_errors(checked, program, source)
        with _cache_lock:
            _cache[key] = program
            if len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
        return program

    def _refuse_constant_errors(self, checked: CheckResult, program: Program, source: str) -> None:
        """What the API server refuses when it builds the program: its literal validators and the
        constant folding of OptOptimize (:mod:`celmut.cel.program_checks`); nothing else. Each part
        is evaluated once, by the backend's ``evaluates_once`` when it has one (the compiled engine's
        planner: the same values, no code generated for one evaluation)."""
        del program  # the checks evaluate sub-expressions, not the whole program

        def evaluate(node: ast.Node) -> None:
            try:
                text = Unparser().unparse(node)
            except Unrepresentable:  # a constant with no CEL text (a library type: type(net.IP)) cannot fail
                return
            try:
                checked_part = self.check(text)
            except CelCompileError:  # pragma: no cover - a checked tree's part re-checks; never refuse on doubt
                return
            once = getattr(self.backend, "evaluates_once", self.backend)
            once.program(checked_part, text, self.functions, self.options).evaluate(Activation())

        issues = program_issues(checked.expr, evaluate)
        if issues:
            raise CelCompileError(issues, source)


def _ensure_recursion_headroom() -> None:
    """Raise (never lower) Python's recursion limit to what cel-go's nesting limit needs; since
    Python 3.11 pure-Python calls do not grow the C stack, so this is safe in every thread."""
    if sys.getrecursionlimit() < _RECURSION_HEADROOM:
        sys.setrecursionlimit(_RECURSION_HEADROOM)
