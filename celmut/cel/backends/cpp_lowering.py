"""Lower a checked expression to CEL text for cel-cpp, or decide that it must run on cel-python.

The checked tree (celmut's front end) is written back as CEL text (:mod:`celmut.cel.unparse`) with:

* typed constructions as map literals: ``Object.spec{replicas: 1, ?x: o}`` → ``{"replicas": 1, ?"x": o}``
  (the merge uses the resource schema, never CEL type names);
* calls to functions cel-cpp does not implement natively renamed to the private functions
  :mod:`celmut.cel.backends.cpp_bridge` registers (``k.indexOf(x)`` on a list →
  ``celmut.method.indexOf(k, x)``), and ``variables.x`` → ``celmut.variable("x")`` (lazy);
* a top-level optional result turned into a list of zero or one element (cel-expr-python cannot
  hand an optional to Python);
* field paths from the activation's variables *hoisted*: ``object.spec.containers`` becomes a
  variable ``__celmut_p3`` whose value Python looks up before the evaluation (with the cel-python
  engine's own selection functions, so a missing key is the same error, raised only if cel-cpp
  reaches the variable), and ``has(object.metadata.labels)`` a boolean variable. cel-cpp converts a
  variable's whole value on first use, so passing only the subtrees an expression reads keeps the
  conversion small; the runtime caches the converted activation per request (see
  :func:`celmut.cel.backends.cpp_backend.hoisted_activation`).

Whether a call is native is decided per call site from the overloads the checker's types leave:
when all of them belong to a library cel-cpp implements (and none is listed in :data:`.cpp_native.NOT_NATIVE`),
cel-cpp runs it; otherwise the Python implementations run, dispatched at run time.

:class:`Fallback` is raised for what cel-cpp cannot run the same way; the reasons are listed in the
module docstring of :mod:`celmut.cel.backends.cpp_backend`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from celmut.cel import ast
from celmut.cel import types as t
from celmut.cel.backends import cpp_bounds
from celmut.cel.backends import cpp_bridge as bridge
from celmut.cel.backends import cpp_projection as projection
from celmut.cel.backends.base import BackendOptions
from celmut.cel.backends.cpp_native import native_overloads
from celmut.cel.checker import CheckResult
from celmut.cel.declarations import Overload, assignable_overloads
from celmut.cel.unparse import Unparser, Unrepresentable, string_literal

# Typed records of the front end (fields checked statically); at run time they are plain maps.
RECORD_TYPES = frozenset({"kubernetes.AdmissionRequest", "variables", "kyverno.Exceptions"})
_EQUALITY = frozenset({"_==_", "_!=_", "@in"})
_LOGIC = frozenset({"_&&_", "_||_", "_?_:_", "!_"})
OPTIONAL_VAR = "__celmut_o"
BOUND_VAR = "__celmut_v"


class Fallback(Exception):
    """This expression runs on cel-python; the message says why."""


ROOTS = frozenset({"object", "oldObject", "request", "namespaceObject", "params", "exceptions"})
HOIST_PREFIX = "__celmut_p"


@dataclass(frozen=True)
class Hoisted:
    """A variable cel-cpp reads: ``root.path…``, or ``has(root.path….test)`` when ``test`` is set."""

    name: str
    root: str
    path: tuple[str, ...]
    test: str | None = None
    shape: projection.Need = projection.WHOLE  # the part of the value the expression reads


_HOISTED: dict[tuple[Any, ...], Hoisted] = {}
_HOISTED_LOCK = threading.Lock()


def hoisted(
    root: str,
    path: tuple[str, ...],
    test: str | None = None,
    shape: projection.Need = projection.WHOLE,
) -> Hoisted:
    """The one variable for a path and shape (the same name in every expression, so activations
    are shared)."""
    key = (root, path, test, shape)
    found = _HOISTED.get(key)
    if found is None:
        with _HOISTED_LOCK:
            found = _HOISTED.get(key)
            if found is None:
                found = _HOISTED[key] = Hoisted(f"{HOIST_PREFIX}{len(_HOISTED)}", root, path, test, shape)
    return found


@dataclass(frozen=True)
class Lowered:
    text: str
    optional_result: bool  # the text yields [] or [value] for optional.none()/optional.of(value)
    calls_python: bool  # the text calls Python functions (the evaluation needs the bridge state)
    static_cost: int
    hoisted: tuple[Hoisted, ...]  # sorted by name
    builds_lists: bool  # map/filter/transformList: quadratic in cel-expr-python 0.1.3


def lower(checked: CheckResult, functions: Mapping[str, list[Overload]], options: BackendOptions) -> Lowered:
    """The cel-cpp text of ``checked``; raises :class:`Fallback`."""
    lowering = _Lowering(checked, functions, options)
    result = checked.type
    if _contains(result, "optional_type") and result.kind != "optional_type":
        raise Fallback(f"the result type {result} holds optionals inside a container")
    if result.kind == "optional_type" and _contains(result.element, "optional_type"):
        raise Fallback("the result is an optional of an optional")
    try:
        text = lowering.unparse(checked.expr)
    except Unrepresentable as ex:
        raise Fallback(str(ex)) from None
    lowering.check_boundary()
    try:  # what cel-cpp could not charge (celmut.cel.backends.cpp_bounds)
        cpp_bounds.check(checked.expr, checked.types, lambda node: id(node) in lowering.python_calls)
    except cpp_bounds.Unbounded as ex:
        raise Fallback(f"cel-cpp cannot charge its work: {ex}") from None
    optional = result.kind == "optional_type"
    if optional:
        text = f"({text}).optMap({OPTIONAL_VAR}, [{OPTIONAL_VAR}]).orValue([])"
    cost = sum(1 for _ in checked.expr.walk())
    variables = tuple(sorted(lowering.hoisted.values(), key=lambda h: h.name))
    builds = any(
        isinstance(node, ast.Comprehension) and node.kind in ("map", "filter", "transformList")
        for node in checked.expr.walk()
    )
    return Lowered(text, optional, lowering.calls_python, cost, variables, builds)


def _contains(ct: t.CelType, kind: str) -> bool:
    return ct.kind == kind or any(_contains(p, kind) for p in ct.params)


def _dynamic(ct: t.CelType) -> bool:
    return ct.kind in ("dyn", "param", "list", "map", "struct")


def root_path(node: ast.Node, is_local: Callable[[str], bool]) -> tuple[str, tuple[str, ...]] | None:
    """``(root, fields)`` for an activation variable followed by plain field selections."""
    fields: list[str] = []
    while isinstance(node, ast.Select) and not node.optional and not node.test_only:
        fields.append(node.field)
        node = node.operand
    if isinstance(node, ast.Ident) and node.name in ROOTS and not is_local(node.name):
        return node.name, tuple(reversed(fields))
    return None


class _Lowering(Unparser):
    def __init__(self, checked: CheckResult, functions: Mapping[str, list[Overload]], options: BackendOptions) -> None:
        self.types = checked.types
        self.functions = functions
        self.native = native_overloads(options.profile)
        self.kyverno_or_value = options.kyverno_or_value
        self.profile = options.profile
        self.bound = 0
        self.calls_python = False
        self.python_args: list[ast.Node] = []  # arguments passed to Python library functions
        self.python_calls: set[int] = set()  # ids of the call nodes running Python implementations
        self.groups = _registered_groups(options.profile)
        self.scopes: list[set[str]] = []
        self.hoisted: dict[str, Hoisted] = {}
        self._scan(checked.expr)
        analysis = projection.Analysis(lambda node, local: root_path(node, local.__contains__) is not None)
        analysis.use(checked.expr, projection.WHOLE)
        self.needs = analysis.needs

    def type_of(self, node: ast.Node) -> t.CelType:
        return self.types.get(id(node), t.DYN)

    # --- whole-expression checks ----------------------------------------------------------------------

    def _scan(self, expr: ast.Node) -> None:
        self.has_uint = self.hides_optional = self.hides_struct = False
        for node in expr.walk():
            node_type = self.type_of(node)
            if node_type.kind == "opaque" and node_type.name not in RECORD_TYPES:
                raise Fallback(f"a value of the library type {node_type.name} cannot be held by cel-cpp")
            if any(p.kind == "opaque" for p in _all_params(node_type)):
                raise Fallback(f"a value of type {node_type} cannot be held by cel-cpp")
            self.has_uint = self.has_uint or _contains(node_type, "uint")
            if isinstance(node, ast.Comprehension):
                if node.kind in ("transformMap", "transformMapEntry"):
                    raise Fallback(f"{node.kind}() fails at run time in cel-expr-python 0.1.3 (no cel.@mapInsert)")
                if node.kind == "sortBy":
                    raise Fallback("sortBy() is celmut's stable sort with cel-go's errors; cel-cpp's differs")
                if "celmut" in (node.var, node.var2):
                    raise Fallback("a variable named celmut would shadow the private function names")
            if isinstance(node, ast.Bind | ast.OptMap) and node.var == "celmut":
                raise Fallback("a variable named celmut would shadow the private function names")
            hiding = (isinstance(node, ast.Call) and node.function in ("dyn", "_?_:_")) or isinstance(
                node, ast.CreateList | ast.CreateMap
            )
            if hiding:
                for child in node.children():
                    child_type = self.type_of(child)
                    for kind in ("optional_type", "struct"):
                        if _contains(child_type, kind) and not _contains(node_type, kind):
                            if kind == "struct":
                                self.hides_struct = True
                            else:
                                self.hides_optional = True

    def check_boundary(self) -> None:
        """Values that would change type (or crash cel-expr-python) on their way into Python."""
        if not self.python_args:
            return
        if self.has_uint:
            raise Fallback("uint values would reach a Python library function as int")
        for arg in self.python_args:
            arg_type = self.type_of(arg)
            if _contains(arg_type, "optional_type") or (self.hides_optional and _dynamic(arg_type)):
                raise Fallback(
                    "an optional value would reach a Python library function (cel-expr-python cannot pass it)"
                )
            if self._typed_object(arg):
                raise Fallback("a typed object would reach a Python library function as a plain map")

    # --- lowering hooks -------------------------------------------------------------------------------

    def create_struct(self, node: ast.CreateStruct) -> str:
        fields = ", ".join(
            f"{'?' if f.optional else ''}{string_literal(f.name)}: {self.unparse(f.value)}" for f in node.fields
        )
        return "{" + fields + "}"

    def _root_path(self, node: ast.Node) -> tuple[str, tuple[str, ...]] | None:
        return root_path(node, self._local)

    def _local(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    def _hoist(self, root: str, path: tuple[str, ...], test: str | None = None, node: ast.Node | None = None) -> str:
        shape = projection.WHOLE if node is None else self.needs.get(id(node), projection.WHOLE)
        variable = hoisted(root, path, test, shape=shape)
        self.hoisted[variable.name] = variable
        return variable.name

    def select(self, node: ast.Select) -> str:
        if isinstance(node.operand, ast.Ident) and node.operand.name == "variables" and not self._local("variables"):
            if node.optional:
                raise Fallback("variables.?x is not lowered")
            self.calls_python = True
            if node.test_only:
                return f"{bridge.HAS_VARIABLE}({string_literal(node.field)})"
            kind = self.type_of(node).kind
            name = {"timestamp": bridge.VARIABLE_TIMESTAMP, "duration": bridge.VARIABLE_DURATION}.get(
                kind, bridge.VARIABLE
            )
            return f"{name}({string_literal(node.field)})"
        if node.test_only:
            found = self._root_path(node.operand)
            if found is not None:
                return self._hoist(found[0], found[1], node.field)
        elif not node.optional:
            found = self._root_path(node)
            if found is not None:
                return self._hoist(*found, node=node)
        return super().select(node)

    def _Ident(self, node: ast.Ident) -> str:
        if self._local(node.name):
            return node.name
        if node.name == "variables":
            raise Fallback("the variables record used as a value")
        if node.name in ROOTS:
            return self._hoist(node.name, (), node=node)
        return node.name

    def enter_scope(self, names: set[str]) -> None:
        self.scopes.append(names)

    def exit_scope(self) -> None:
        self.scopes.pop()

    def call(self, node: ast.Call) -> str:
        function = node.function
        if node.target is None and (function in _LOGIC or function in _EQUALITY or function == "dyn"):
            if function in _EQUALITY and any(self._typed_object(a) for a in node.args):
                raise Fallback("typed objects compare by type name on cel-python but are plain maps on cel-cpp")
            return self.plain_call(node)
        if node.target is not None and function in ("or", "orValue") and len(node.args) == 1:
            if self.kyverno_or_value and function == "orValue":
                return self._kyverno_or_value(node)
            return self.plain_call(node)
        if function in ("type", "string") and any(self._typed_object(a) for a in node.args):
            raise Fallback(f"{function}() of a typed object differs (a plain map on cel-cpp)")
        candidates = self._candidates(node)
        if all(o.id in self.native for o in candidates):
            return self.plain_call(node)  # (no candidate at all: cel-cpp reports the missing overload)
        return self._python_call(node, candidates)

    def _typed_object(self, node: ast.Node) -> bool:
        """Whether a typed object (``Object{…}``, ``JSONPatch{…}``) may be this value or inside it."""
        node_type = self.type_of(node)
        return _contains(node_type, "struct") or (self.hides_struct and _dynamic(node_type))

    def _kyverno_or_value(self, node: ast.Call) -> str:
        """Kyverno's ``x.orValue(y)``: its macro calls the strict ``__orValueCompat__(x, y)``
        (pkg/cel/compiler/env.go ``OrValueCompatEnvOptions``): an error in ``x`` or ``y`` fails, a
        present optional gives its value, an empty one ``y``, any other value ``x`` itself. Both are
        bound with ``cel.bind`` and the ``&&`` test makes either one's error the result."""
        assert node.target is not None
        if self.profile != "kyverno":  # pragma: no cover - the compat orValue is Kyverno's
            raise Fallback("Kyverno's orValue needs cel.bind")
        value_name, default_name = f"{BOUND_VAR}{self.bound}", f"{BOUND_VAR}{self.bound + 1}"
        self.bound += 2
        target, default = self.unparse(node.target), self.unparse(node.args[0])
        if self.type_of(node.target).kind == "optional_type":
            value = f"{value_name}.orValue({default_name})"
        else:
            value = f"(type({value_name}) == optional_type ? {value_name}.orValue({default_name}) : {value_name})"
        both_ok = f"type({value_name}) == type({value_name}) && type({default_name}) == type({default_name})"
        body = f"{both_ok} ? {value} : {default_name}"
        return f"cel.bind({value_name}, {target}, cel.bind({default_name}, {default}, {body}))"

    def _candidates(self, node: ast.Call) -> list[Overload]:
        member = node.target is not None
        arg_nodes = ([node.target] if node.target is not None else []) + node.args
        arg_types = [self.type_of(a) for a in arg_nodes]
        same_kind = (
            overload
            for overload in self.functions.get(node.function, [])
            # no library object exists in this expression (checked by _scan)
            if overload.member == member and not any(p.kind == "opaque" for p in overload.params)
        )
        return assignable_overloads(same_kind, arg_types)

    def _python_call(self, node: ast.Call, candidates: list[Overload]) -> str:
        name, member = node.function, node.target is not None
        arg_nodes = ([node.target] if node.target is not None else []) + node.args
        for overload in candidates:
            if not bridge.overload_registrable(overload):
                raise Fallback(f"{name}() takes or returns a value cel-cpp cannot hold ({overload.id})")
        if (name, member, len(arg_nodes)) not in self.groups:
            raise Fallback(f"{name}() with {len(arg_nodes)} arguments has no registered implementation")
        self.python_args.extend(arg_nodes)
        self.python_calls.add(id(node))
        if all(o.result.kind == "bytes" for o in candidates):
            raise Fallback(f"{name}() returns bytes, which cel-expr-python 0.1.3 cuts at the first NUL byte")
        self.calls_python = True
        args = [self.unparse(a) for a in arg_nodes]
        args.append(str(bridge.candidate_set(candidates)))
        return f"{bridge.private_name(name, member)}({', '.join(args)})"


def _all_params(ct: t.CelType) -> list[t.CelType]:
    out = []
    stack = list(ct.params)
    while stack:
        item = stack.pop()
        out.append(item)
        stack.extend(item.params)
    return out


@cache
def _registered_groups(profile_name: str) -> frozenset[tuple[str, bool, int]]:
    """The (name, member, arity) of every function group the bridge registers."""
    from celmut.cel.profiles import profile

    return frozenset(
        key
        for key, overloads in bridge.function_groups(profile(profile_name).functions()).items()
        if any(bridge.overload_registrable(o) for o in overloads)
    )
