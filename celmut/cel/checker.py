"""Name resolution and type checking of a parsed expression against an environment's declarations.

The checker follows cel-go's rules where they show up in policies: undeclared identifiers and
functions are errors (which is how the narrower Kubernetes profile refuses ``cel.bind`` or
``math.*``), overloads must match their argument types, aggregate literals must be homogeneous
unless elements are wrapped in ``dyn()``, and typed constructions must name a known type and field.
Objects from the cluster are ``dyn``, so most policy expressions type-check as ``dyn`` and are
checked again at run time.

It also *resolves* the AST in place: ``math.greatest(…)`` written as a member call on ``math``
becomes the global call ``math.greatest``, and type names such as ``int`` become literals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from celmut.cel import ast
from celmut.cel import types as t
from celmut.cel import values as v
from celmut.cel.declarations import Overload
from celmut.cel.errors import CelCompileError, Issue

# Fields of JSONPatch{...}; Object.* constructions accept any field (checked against the schema later).
JSONPATCH_FIELDS: dict[str, t.CelType] = {"op": t.STRING, "path": t.STRING, "from": t.STRING, "value": t.DYN}

# cel-go's HomogeneousAggregateLiteralExemptFunctions, as Kubernetes configures it for format().
HOMOGENEITY_EXEMPT_FUNCTIONS = frozenset({"format", "strings.format"})

TYPE_IDENTIFIERS: dict[str, str] = {
    "int": "int",
    "uint": "uint",
    "double": "double",
    "bool": "bool",
    "string": "string",
    "bytes": "bytes",
    "list": "list",
    "map": "map",
    "null_type": "null_type",
    "type": "type",
    "optional_type": "optional_type",
    "google.protobuf.Timestamp": "google.protobuf.Timestamp",
    "google.protobuf.Duration": "google.protobuf.Duration",
}


@dataclass
class Declarations:
    """What an environment offers to the checker."""

    variables: Mapping[str, t.CelType]
    functions: Mapping[str, list[Overload]]  # by function name, member and global overloads together
    records: Mapping[str, Mapping[str, t.CelType]] = field(default_factory=dict)  # typed variables' fields
    open_records: frozenset[str] = frozenset()  # records whose unknown fields are dyn, not errors
    constants: Mapping[str, Any] = field(default_factory=dict)
    struct_types: frozenset[str] = frozenset({"Object", "JSONPatch"})
    homogeneous_literals: bool = True
    unavailable_hint: Mapping[str, str] = field(default_factory=dict)  # name → which profile has it


@dataclass
class CheckResult:
    expr: ast.Node
    type: t.CelType
    types: dict[int, t.CelType]
    references: frozenset[str]  # declared variables the expression reads
    functions: frozenset[str]  # overload ids the expression may call


class Checker:
    def __init__(self, declarations: Declarations, source: str) -> None:
        self.decls = declarations
        self.source = source
        self.issues: list[Issue] = []
        self.types: dict[int, t.CelType] = {}
        self.scopes: list[dict[str, t.CelType]] = []
        self.references: set[str] = set()
        self.overloads_used: set[str] = set()
        self.homogeneity_exempt = 0  # inside the arguments of format(), as cel-go exempts them

    # --- entry point -------------------------------------------------------------------------------

    def check(self, expr: ast.Node) -> CheckResult:
        expr = self.visit(expr)
        if self.issues:
            raise CelCompileError(self.issues, self.source)
        types = {key: t.resolve_free(value) for key, value in self.types.items()}
        return CheckResult(expr, types[id(expr)], types, frozenset(self.references), frozenset(self.overloads_used))

    def error(self, node: ast.Node, message: str) -> t.CelType:
        self.issues.append(Issue(message, node.line, node.column))
        return t.ERROR

    def visit(self, node: ast.Node) -> ast.Node:
        """Check ``node`` and return it, or its resolved replacement; records its type."""
        method = getattr(self, f"_{type(node).__name__}")
        replacement: ast.Node
        replacement, node_type = method(node)
        self.types[id(replacement)] = node_type
        return replacement

    def type_of(self, node: ast.Node) -> t.CelType:
        return self.types[id(node)]

    # --- leaves -------------------------------------------------------------------------------------

    def _Literal(self, node: ast.Literal) -> tuple[ast.Node, t.CelType]:
        return node, _literal_type(node.value)

    def _lookup_local(self, name: str) -> t.CelType | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def _Ident(self, node: ast.Ident) -> tuple[ast.Node, t.CelType]:
        local = self._lookup_local(node.name)
        if local is not None:
            return node, local
        resolved = self._resolve_name(node.name, node)
        if resolved is not None:
            return resolved
        return node, self.error(node, self._undeclared(node.name))

    def _resolve_name(self, name: str, node: ast.Node) -> tuple[ast.Node, t.CelType] | None:
        if name in self.decls.variables:
            self.references.add(name)
            return ast.Ident(name, line=node.line, column=node.column), self.decls.variables[name]
        if name in TYPE_IDENTIFIERS:
            literal = ast.Literal(v.TYPES[TYPE_IDENTIFIERS[name]], line=node.line, column=node.column)
            return literal, t.type_of(t.DYN)
        if name in self.decls.constants:
            value = self.decls.constants[name]
            return ast.Literal(value, line=node.line, column=node.column), _literal_type(value)
        return None

    def _undeclared(self, name: str) -> str:
        hint = self.decls.unavailable_hint.get(name)
        suffix = f" ({hint})" if hint else ""
        # cel-go checker/errors.go undeclaredReference; policies have no container, so it is ''
        return f"undeclared reference to '{name}' (in container ''){suffix}"

    # --- selection and indexing ------------------------------------------------------------------

    def _Select(self, node: ast.Select) -> tuple[ast.Node, t.CelType]:
        qualified = ast.qualified_name(node)
        if qualified is not None and not node.test_only:
            root = qualified.split(".", 1)[0]
            if qualified in self.decls.variables and self._lookup_local(root) is None:
                # a dotted variable (authorizer.requestResource) wins over selecting a field of its
                # root, as cel-go's checkSelect resolves the qualified name first
                resolved = self._resolve_name(qualified, node)
                if resolved is not None:
                    return resolved
            if self._lookup_local(root) is None and root not in self.decls.variables:
                resolved = self._resolve_name(qualified, node)
                if resolved is not None:
                    return resolved
                # cel-go reports the identifier that does not resolve, at its own position
                # (checker/checker.go checkSelect falls back to checking the operand).
                return node, self.error(_root_operand(node), self._undeclared(root))
        node.operand = self.visit(node.operand)
        operand_type = self.type_of(node.operand)
        optional_operand = operand_type.kind == "optional_type"
        if node.test_only:
            # has(x.?y.z): the field is looked up on the optional's value (cel-go checker.go
            # checkSelectField unwraps the operand with maybeUnwrapOptional); the result is bool.
            self._field_type(node, operand_type.element if optional_operand else operand_type, node.field)
            return node, t.BOOL
        base = operand_type.element if optional_operand else operand_type
        field_type = self._field_type(node, base, node.field)
        if node.optional or optional_operand:
            return node, t.optional_of(field_type.element if field_type.kind == "optional_type" else field_type)
        return node, field_type

    def _field_type(self, node: ast.Node, operand: t.CelType, name: str) -> t.CelType:
        kind = operand.kind
        if kind in ("dyn", "error", "param"):
            return t.DYN
        if kind == "map":
            key = operand.params[0]
            if key.kind not in ("string", "dyn", "param"):
                return self.error(node, f"type '{operand}' does not support field selection")
            return operand.params[1]
        if kind == "struct":
            if operand.name == "JSONPatch":
                if name not in JSONPATCH_FIELDS:
                    return self.error(node, f"undefined field '{name}'")
                return JSONPATCH_FIELDS[name]
            return t.DYN
        if kind == "opaque" and operand.name in self.decls.records:
            fields = self.decls.records[operand.name]
            if name in fields:
                return fields[name]
            if operand.name in self.decls.open_records:
                return t.DYN
            return self.error(node, f"undefined field '{name}'")
        return self.error(node, f"type '{operand}' does not support field selection")

    def _Index(self, node: ast.Index) -> tuple[ast.Node, t.CelType]:
        node.operand = self.visit(node.operand)
        node.index = self.visit(node.index)
        operand_type, index_type = self.type_of(node.operand), self.type_of(node.index)
        optional_operand = operand_type.kind == "optional_type"
        base = operand_type.element if optional_operand else operand_type
        result = self._index_type(node, base, index_type)
        if node.optional or optional_operand:
            return node, t.optional_of(result)
        return node, result

    def _index_type(self, node: ast.Node, operand: t.CelType, index: t.CelType) -> t.CelType:
        if operand.kind in ("dyn", "error", "param"):
            return t.DYN
        if operand.kind == "list":
            if index.kind in ("int", "uint", "dyn", "error", "double"):
                return operand.params[0]
        elif operand.kind == "map":
            if t.is_assignable(operand.params[0], index, {}) or index.kind in ("int", "uint", "double"):
                return operand.params[1]
        elif operand.kind == "opaque" and operand.name in self.decls.records:
            return t.DYN
        return self.error(node, f"found no matching overload for '_[_]' applied to '({operand}, {index})'")

    # --- calls ------------------------------------------------------------------------------------

    def _Call(self, node: ast.Call) -> tuple[ast.Node, t.CelType]:
        if node.target is not None:
            qualified = ast.qualified_name(node.target)
            if qualified is not None:
                root = qualified.split(".", 1)[0]
                name = f"{qualified}.{node.function}"
                shadowed = self._lookup_local(root) is not None or root in self.decls.variables
                if not shadowed and (name in self.decls.functions or name in self.decls.unavailable_hint):
                    node = ast.Call(name, node.args, line=node.line, column=node.column)
        if node.function not in self.decls.functions and node.function not in _SPECIAL_CALLS:
            # Report the unknown function itself, not the arguments' knock-on errors (cel.bind's variable);
            # cel-go checker.go checkCall checks an instance call's target first, so `authorizer.path(…)`
            # where `authorizer` is not declared names 'authorizer', then the function.
            if node.target is not None:
                self.visit(node.target)
            return node, self.error(node, self._undeclared(node.function))
        if node.target is not None:
            node.target = self.visit(node.target)
        exempt = node.function in HOMOGENEITY_EXEMPT_FUNCTIONS
        self.homogeneity_exempt += exempt
        try:
            node.args = [self.visit(a) for a in node.args]
        finally:
            self.homogeneity_exempt -= exempt
        special = _SPECIAL_CALLS.get(node.function)
        if special is not None:
            return node, special(self, node)
        return node, self._resolve_overload(node)

    def _resolve_overload(self, node: ast.Call) -> t.CelType:
        candidates = self.decls.functions.get(node.function)
        if not candidates:
            return self.error(node, self._undeclared(node.function))
        arg_nodes = ([node.target] if node.target is not None else []) + node.args
        arg_types = [self.type_of(a) for a in arg_nodes]
        member = node.target is not None
        matches: list[tuple[Overload, t.Bindings]] = []
        for fallback in (False, True):  # a fallback overload only when nothing else matches
            for overload in candidates:
                if overload.member != member or overload.fallback != fallback:
                    continue
                bindings: t.Bindings = {}
                if _params_accept(overload, arg_types, bindings) and (
                    not fallback or _each_fits_some_overload(candidates, arg_types)
                ):
                    matches.append((overload, bindings))
            if matches:
                break
        if not matches:
            shown = ", ".join(str(a) for a in arg_types)
            return self.error(node, f"found no matching overload for '{node.function}' applied to '({shown})'")
        self.overloads_used.update(o.id for o, _ in matches)
        results = [t.substitute(o.result, b, t.FREE) for o, b in matches]
        result = results[0]
        for other in results[1:]:
            joined = t.join(result, other)
            result = joined if joined is not None else t.DYN
        return result

    def _logical(self, node: ast.Call) -> t.CelType:
        for arg in node.args:
            arg_type = self.type_of(arg)
            if arg_type.kind not in ("bool", "dyn", "error", "param"):
                return self.error(
                    arg, f"found no matching overload for '{node.function}' applied to '({arg_type}, ...)'"
                )
        return t.BOOL

    def _conditional(self, node: ast.Call) -> t.CelType:
        cond, then, otherwise = (self.type_of(a) for a in node.args)
        if cond.kind not in ("bool", "dyn", "error", "param"):
            return self.error(node.args[0], f"conditional requires a bool condition, got '{cond}'")
        joined = t.join(then, otherwise)
        if joined is None:
            return self.error(node, f"found no matching overload for '_?_:_' applied to '(bool, {then}, {otherwise})'")
        return joined

    def _equality(self, node: ast.Call) -> t.CelType:
        left, right = (self.type_of(a) for a in node.args)
        if left.kind == "type" and right.kind == "type":
            return t.BOOL  # type values compare whatever their parameters (cel-go checker/types.go: TypeKind)
        if t.join(left, right) is None and not _numeric_pair(left, right):
            return self.error(node, f"found no matching overload for '{node.function}' applied to '({left}, {right})'")
        return t.BOOL

    def _in(self, node: ast.Call) -> t.CelType:
        element, container = (self.type_of(a) for a in node.args)
        if container.kind == "list" or container.kind == "map":
            item = container.params[0]
        elif container.kind in ("dyn", "error", "param"):
            return t.BOOL
        else:
            return self.error(node, f"found no matching overload for '@in' applied to '({element}, {container})'")
        if t.join(item, element) is None and not _numeric_pair(item, element):
            return self.error(node, f"found no matching overload for '@in' applied to '({element}, {container})'")
        return t.BOOL

    def _dyn(self, node: ast.Call) -> t.CelType:
        if node.target is not None or len(node.args) != 1:
            return self._resolve_overload(node)
        return t.DYN

    # --- aggregates ---------------------------------------------------------------------------------

    def _join_elements(self, node: ast.Node, current: t.CelType | None, new: t.CelType, what: str) -> t.CelType:
        if current is None:
            return new
        joined = t.join(current, new)
        if joined is None and _numeric_pair(current, new) and not self.decls.homogeneous_literals:
            return t.DYN
        if joined is None:
            if not self.decls.homogeneous_literals or self.homogeneity_exempt:
                return t.DYN
            self.error(node, f"expected type '{current}' but found '{new}' in {what} (wrap mixed values in dyn())")
            return t.DYN
        return joined

    def _CreateList(self, node: ast.CreateList) -> tuple[ast.Node, t.CelType]:
        element_type: t.CelType | None = None
        for element in node.elements:
            element.value = self.visit(element.value)
            element_t = self.type_of(element.value)
            if element.optional:
                element_t = self._optional_inner(element.value, element_t)
            element_type = self._join_elements(element.value, element_type, element_t, "list literal")
        return node, t.list_of(element_type or t.FREE)

    def _optional_inner(self, node: ast.Node, node_type: t.CelType) -> t.CelType:
        if node_type.kind == "optional_type":
            return node_type.element
        if node_type.kind in ("dyn", "error", "param"):
            return t.DYN
        return self.error(node, f"optional entry requires an optional value, got '{node_type}'")

    def _CreateMap(self, node: ast.CreateMap) -> tuple[ast.Node, t.CelType]:
        key_type: t.CelType | None = None
        value_type: t.CelType | None = None
        for entry in node.entries:
            entry.key = self.visit(entry.key)
            entry.value = self.visit(entry.value)
            k = self.type_of(entry.key)
            if k.kind not in ("int", "uint", "bool", "string", "dyn", "error", "param"):
                self.error(entry.key, f"unsupported map key type: '{k}'")
            value_t = self.type_of(entry.value)
            if entry.optional:
                value_t = self._optional_inner(entry.value, value_t)
            key_type = self._join_elements(entry.key, key_type, k, "map literal keys")
            value_type = self._join_elements(entry.value, value_type, value_t, "map literal values")
        return node, t.map_of(key_type or t.FREE, value_type or t.FREE)

    def _CreateStruct(self, node: ast.CreateStruct) -> tuple[ast.Node, t.CelType]:
        root = node.type_name.split(".", 1)[0]
        if root not in self.decls.struct_types or (root == "JSONPatch" and node.type_name != "JSONPatch"):
            # cel-go checker.go checkCreateStruct: errors.undeclaredReference, and the fields are not
            # checked (neither environment sets a container)
            return node, self.error(node, f"undeclared reference to '{node.type_name}' (in container '')")
        for f in node.fields:
            f.value = self.visit(f.value)
            value_t = self.type_of(f.value)
            if f.optional:
                value_t = self._optional_inner(f.value, value_t)
            if root == "JSONPatch":
                expected = JSONPATCH_FIELDS.get(f.name)
                if expected is None:
                    self.error(f.value, f"undefined field '{f.name}' of type 'JSONPatch'")
                elif not t.is_assignable(expected, value_t, {}):
                    self.error(
                        f.value, f"expected type of field '{f.name}' is '{expected}' but provided type is '{value_t}'"
                    )
        return node, t.struct(node.type_name)

    # --- macros -------------------------------------------------------------------------------------

    def _Comprehension(self, node: ast.Comprehension) -> tuple[ast.Node, t.CelType]:
        node.range = self.visit(node.range)
        range_type = self.type_of(node.range)
        if range_type.kind == "list":
            first, second = (t.INT, range_type.params[0]) if node.var2 else (range_type.params[0], t.DYN)
        elif range_type.kind == "map":
            first, second = range_type.params[0], range_type.params[1]
        elif range_type.kind in ("dyn", "error", "param"):
            first, second = (t.DYN, t.DYN)
        else:
            return node, self.error(
                node.range, f"expression of type '{range_type}' cannot be the range of a comprehension"
            )
        scope = {node.var: first}
        if node.var2:
            scope[node.var2] = second
        self.scopes.append(scope)
        try:
            if node.predicate is not None:
                node.predicate = self.visit(node.predicate)
                self._expect_bool(node.predicate, node.macro)
            node.body = self.visit(node.body)
        finally:
            self.scopes.pop()
        body = self.type_of(node.body)
        kind = node.kind
        if kind in ("all", "exists", "exists_one"):
            self._expect_bool(node.body, node.macro)
            return node, t.BOOL
        if kind == "filter":
            self._expect_bool(node.body, node.macro)
            return node, range_type if range_type.kind == "list" else t.list_of(first)
        if kind == "map" or kind == "transformList":
            return node, t.list_of(body)
        if kind == "transformMap":
            return node, t.map_of(first, body)
        if kind == "transformMapEntry":
            if body.kind not in ("map", "dyn", "error", "param"):
                return node, self.error(node.body, f"transformMapEntry() expression must be a map, got '{body}'")
            return node, body if body.kind == "map" else t.map_of(t.DYN, t.DYN)
        if kind == "sortBy":
            return node, range_type if range_type.kind == "list" else t.list_of(t.DYN)
        return node, t.DYN  # pragma: no cover

    def _expect_bool(self, node: ast.Node, macro: str) -> None:
        node_type = self.type_of(node)
        if node_type.kind not in ("bool", "dyn", "error", "param"):
            self.error(node, f"{macro}() predicate must be a bool, got '{node_type}'")

    def _Bind(self, node: ast.Bind) -> tuple[ast.Node, t.CelType]:
        node.init = self.visit(node.init)
        self.scopes.append({node.var: self.type_of(node.init)})
        try:
            node.body = self.visit(node.body)
        finally:
            self.scopes.pop()
        return node, self.type_of(node.body)

    def _OptMap(self, node: ast.OptMap) -> tuple[ast.Node, t.CelType]:
        node.target = self.visit(node.target)
        target_type = self.type_of(node.target)
        if target_type.kind not in ("optional_type", "dyn", "error", "param"):
            return node, self.error(node.target, f"optMap() requires an optional value, got '{target_type}'")
        self.scopes.append({node.var: target_type.element})
        try:
            node.body = self.visit(node.body)
        finally:
            self.scopes.pop()
        body = self.type_of(node.body)
        if node.flat:
            return node, body if body.kind == "optional_type" else t.optional_of(t.DYN)
        return node, t.optional_of(body)


_SPECIAL_CALLS = {
    "_&&_": Checker._logical,
    "_||_": Checker._logical,
    "_?_:_": Checker._conditional,
    "_==_": Checker._equality,
    "_!=_": Checker._equality,
    "@in": Checker._in,
    "dyn": Checker._dyn,
}


def _numeric_pair(a: t.CelType, b: t.CelType) -> bool:
    numeric = ("int", "uint", "double")
    return a.kind in numeric and b.kind in numeric


def _each_fits_some_overload(candidates: list[Overload], arg_types: list[t.CelType]) -> bool:
    """A fallback overload (``math.greatest(1, 1.0, 1u)``) takes only arguments some regular overload
    takes somewhere (``math.greatest(1, 2, true)`` stays a compile error, as cel-go's macro refuses)."""
    params = [p for o in candidates if not o.fallback for p in o.params]
    return all(any(t.is_assignable(p, a, {}) for p in params) for a in arg_types)


def _params_accept(overload: Overload, arg_types: list[t.CelType], bindings: t.Bindings) -> bool:
    params = overload.params
    if overload.variadic:
        if len(arg_types) < len(params) - 1:
            return False
        expanded = list(params[:-1]) + [params[-1]] * (len(arg_types) - len(params) + 1)
        return all(t.is_assignable(p, a, bindings) for p, a in zip(expanded, arg_types, strict=True))
    if len(params) != len(arg_types):
        return False
    return all(t.is_assignable(p, a, bindings) for p, a in zip(params, arg_types, strict=True))


def _literal_type(value: Any) -> t.CelType:
    if value is None:
        return t.NULL
    if isinstance(value, bool):
        return t.BOOL
    if isinstance(value, v.UintType):
        return t.UINT
    if isinstance(value, int):
        return t.INT
    if isinstance(value, float):
        return t.DOUBLE
    if isinstance(value, str):
        return t.STRING
    if isinstance(value, bytes):
        return t.BYTES
    if isinstance(value, v.TypeValue):
        return t.type_of(t.DYN)
    name = v.type_name(value)
    return t.opaque(name)


def _root_operand(node: ast.Node) -> ast.Node:
    """The identifier a chain of selections starts from (``a`` in ``a.b.c``)."""
    while isinstance(node, ast.Select):
        node = node.operand
    return node
