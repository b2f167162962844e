"""The CEL environments celmut evaluates policies in. This module owns every CEL extension.

Two profiles exist, as in the real systems:

* **kubernetes** — what kube-apiserver offers MutatingAdmissionPolicy: the standard definitions,
  optionals, cel-go strings (v2), sets and lists (v3), two-variable comprehensions, and the
  Kubernetes libraries (lists, regex, url, ip/cidr, quantity, semver, format, jsonpatch).
  ``cel.bind``, ``math.*``, ``base64.*``, cel-go regex and every Kyverno function are compile errors
  here, as the API server refuses such policies. Variables: ``object``, ``oldObject``, ``request``, ``params``,
  ``namespaceObject``, ``variables``.
* **kyverno** — what Kyverno offers MutatingPolicy: all of the above plus ``cel.bind``, cel-go
  encoders, math and regex, and Kyverno's libraries. Variables: ``object``,
  ``oldObject``, ``request``, ``namespaceObject``, ``variables``, ``exceptions`` (no ``params``).

:class:`Environment` parses and checks once (the shared front end) and hands the checked AST to an
backend — cel-python or the C++ runtime, chosen by :mod:`celmut.cel.backends.select` — and compiled
programs are cached by profile, backend, declarations and source text.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from celmut.cel import ast, parser
from celmut.cel import types as t
from celmut.cel.activation import Activation
from celmut.cel.backends import select
from celmut.cel.backends.base import Backend, BackendOptions, Program
from celmut.cel.checker import Checker, CheckResult, Declarations
from celmut.cel.declarations import Library, Overload
from celmut.cel.errors import CelCompileError, CelEvaluationError, Issue
from celmut.cel.libs import core, ext, k8s, kyverno, optional, timestamps

KUBERNETES_MACROS = frozenset(
    {
        "has",
        "all",
        "exists",
        "exists_one",
        "existsOne",
        "map",
        "filter",
        "transformList",
        "transformMap",
        "transformMapEntry",
        "optMap",
        "optFlatMap",
        "sortBy",
    }
)
KYVERNO_MACROS = KUBERNETES_MACROS | {"cel.bind"}

# Libraries in both profiles, then Kyverno's additions. Each library lives in its own module under
# celmut/cel/libs/; adding one to CEL means adding it here.
KUBERNETES_LIBRARIES: tuple[Library, ...] = (
    core.LIBRARY,
    timestamps.LIBRARY,
    optional.LIBRARY,
    *ext.KUBERNETES_LIBRARIES,
    *k8s.LIBRARIES,
)
KYVERNO_LIBRARIES: tuple[Library, ...] = (
    *KUBERNETES_LIBRARIES,
    optional.KYVERNO_COMPAT,
    *ext.KYVERNO_ONLY_LIBRARIES,
    *kyverno.LIBRARIES,
)

ADMISSION_REQUEST_FIELDS: dict[str, t.CelType] = {
    "uid": t.STRING,
    "kind": t.map_of(t.STRING, t.STRING),
    "resource": t.map_of(t.STRING, t.STRING),
    "subResource": t.STRING,
    "requestKind": t.map_of(t.STRING, t.STRING),
    "requestResource": t.map_of(t.STRING, t.STRING),
    "requestSubResource": t.STRING,
    "name": t.STRING,
    "namespace": t.STRING,
    "operation": t.STRING,
    "userInfo": t.DYN,
    "object": t.DYN,
    "oldObject": t.DYN,
    "dryRun": t.BOOL,
    "options": t.DYN,
}
EXCEPTIONS_FIELDS: dict[str, t.CelType] = {
    "allowedImages": t.list_of(t.STRING),
    "allowedValues": t.list_of(t.STRING),
}
REQUEST_TYPE = t.opaque("kubernetes.AdmissionRequest")
VARIABLES_TYPE = t.opaque("variables")
EXCEPTIONS_TYPE = t.opaque("kyverno.Exceptions")


@dataclass(frozen=True)
class Profile:
    name: str
    libraries: tuple[Library, ...]
    macros: frozenset[str]
    variables: Mapping[str, t.CelType]
    lenient_or_value: bool
    description: str

    def functions(self) -> dict[str, list[Overload]]:
        table: dict[str, list[Overload]] = {}
        for library in self.libraries:
            for overload in library.overloads:
                table.setdefault(overload.function, []).append(overload)
        return table

    def constants(self) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for library in self.libraries:
            merged.update(library.constants)
        return merged


KUBERNETES = Profile(
    name="kubernetes",
    libraries=KUBERNETES_LIBRARIES,
    macros=KUBERNETES_MACROS,
    variables={
        "object": t.DYN,
        "oldObject": t.DYN,
        "request": REQUEST_TYPE,
        "params": t.DYN,
        "namespaceObject": t.DYN,
        "variables": VARIABLES_TYPE,
    },
    lenient_or_value=False,
    description="Kubernetes (MutatingAdmissionPolicy)",
)
KYVERNO = Profile(
    name="kyverno",
    libraries=KYVERNO_LIBRARIES,
    macros=KYVERNO_MACROS,
    variables={
        "object": t.DYN,
        "oldObject": t.DYN,
        "request": REQUEST_TYPE,
        "namespaceObject": t.DYN,
        "variables": VARIABLES_TYPE,
        "exceptions": EXCEPTIONS_TYPE,
    },
    lenient_or_value=True,
    description="Kyverno (MutatingPolicy)",
)
PROFILES = {p.name: p for p in (KUBERNETES, KYVERNO)}


def profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown CEL profile {name!r}; choose one of {', '.join(PROFILES)}") from None


_CACHE_SIZE = 8192
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
        self.profile = profile(profile_name)
        self.variable_types: dict[str, t.CelType] = dict(variables or {})
        self.backend: Backend = select.backend(backend) if backend is None or isinstance(backend, str) else backend
        self.functions = _function_table(self.profile)
        self.options = BackendOptions(lenient_or_value=self.profile.lenient_or_value, profile=self.profile.name)
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
        expr = parser.parse(source, self.profile.macros)
        return Checker(self.declarations, source).check(expr)

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
        if self.profile.name == "kubernetes":
            self._refuse_constant_errors(checked, program, source)
        with _cache_lock:
            _cache[key] = program
            if len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
        return program

    def _refuse_constant_errors(self, checked: CheckResult, program: Program, source: str) -> None:
        """The API server refuses an expression that fails whatever its input (``int("twelve")``)."""
        if checked.references or not _all_pure(checked.functions, self.functions) or _has_comprehension(checked.expr):
            return
        try:
            program.evaluate(Activation())
        except CelEvaluationError as ex:
            raise CelCompileError([Issue(f"expression always fails: {ex.message}", 1, 1)], source) from ex


def _all_pure(overload_ids: Iterable[str], functions: Mapping[str, list[Overload]]) -> bool:
    impure = {o.id for overloads in functions.values() for o in overloads if not o.pure}
    return not (set(overload_ids) & impure)


def _has_comprehension(expr: ast.Node) -> bool:
    return any(isinstance(node, ast.Comprehension | ast.Bind) for node in expr.walk())
