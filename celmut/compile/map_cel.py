"""The CEL side of turning a MutatingPolicy into a MutatingAdmissionPolicy.

Two things the converter (:mod:`celmut.compile.to_map`) needs from the CEL floor:

* **Where a match condition reads variables.** A MutatingAdmissionPolicy's match conditions cannot see
  ``variables`` (kube-apiserver compiles them before the variables; kyverno/api
  ``MutatingPolicySpec.Variables``: "a native Kubernetes MutatingAdmissionPolicy does not support
  variables in match conditions"). :func:`reads_variables` finds such a reference.
* **Inlining variables into a condition** (:func:`inline_variables`), for the presets only: their CEL
  is celmut's own, written with named variables for readability, and substituting each variable's
  definition (recursively) is exact — CEL has no side effects, and a variable's value (or error) is
  the value (or error) of its expression. A user's policy is refused instead, as Kyverno's generated
  MAP would be refused by the API server.

And :func:`kyverno_only`: the Kyverno-only functions a compile error names, the construct a
conversion reports first.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator, Mapping

from celmut.cel import ast, profiles
from celmut.cel.errors import CelCompileError
from celmut.cel.parser import parse
from celmut.cel.unparse import Unparser

VARIABLES = "variables"
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_UNDECLARED = re.compile(
    r"undeclared reference to '([^']+)' (?:\(in container '[^']*'\) )?\(available only in the Kyverno"
)
# Lookups and I/O first: they are why a construct cannot move, not the syntax around it (cel.bind).
_IO_PREFIXES = ("resource.", "http.", "globalContext.", "image.", "imagedata.")


class InlineError(ValueError):
    """A variable cannot be substituted into an expression (its definition is missing, or a macro
    variable of the expression would capture one of its names)."""


def _variable_name(node: ast.Node) -> str | None:
    """``x`` for ``variables.x`` / ``variables["x"]``; None for anything else."""
    if isinstance(node, ast.Select) and isinstance(node.operand, ast.Ident) and node.operand.name == VARIABLES:
        return None if node.optional else node.field
    if (
        isinstance(node, ast.Index)
        and isinstance(node.operand, ast.Ident)
        and node.operand.name == VARIABLES
        and isinstance(node.index, ast.Literal)
        and isinstance(node.index.value, str)
        and not node.optional
    ):
        return node.index.value
    return None


def _bound(node: ast.Node) -> set[str]:
    """The names a macro node binds for its body (and predicate)."""
    if isinstance(node, ast.Comprehension):
        return {node.var} | ({node.var2} if node.var2 else set())
    if isinstance(node, (ast.Bind, ast.OptMap)):
        return {node.var}
    return set()


def _scoped(node: ast.Node, scope: frozenset[str]) -> Iterator[tuple[ast.Node, frozenset[str]]]:
    """Every node under ``node`` with the macro variables in scope there."""
    yield node, scope
    inner = scope | _bound(node)
    for child in node.children():
        # A comprehension's range (and a bind's init, an optMap's target) is outside its own scope.
        outside = (
            (isinstance(node, ast.Comprehension) and child is node.range)
            or (isinstance(node, ast.Bind) and child is node.init)
            or (isinstance(node, ast.OptMap) and child is node.target)
        )
        yield from _scoped(child, scope if outside else inner)


class _AsWritten(Unparser):
    """Writes field names as policies write them (``request.namespace``), not backquoted: backquoted
    field names need a cel-go parser option the API server does not turn on."""

    def select(self, node: ast.Select) -> str:
        if not _FIELD.match(node.field) or node.field in ("true", "false", "null", "in"):
            return super().select(node)
        operand = self.unparse(node.operand)
        if node.test_only:
            return f"has({operand}.{node.field})"
        return f"{operand}.{'?' if node.optional else ''}{node.field}"


def reads_variables(source: str) -> bool:
    """Whether ``source`` refers to ``variables`` (not shadowed by a macro variable of that name)."""
    tree = parse(source)
    return any(
        isinstance(node, ast.Ident) and node.name == VARIABLES and VARIABLES not in scope
        for node, scope in _scoped(tree, frozenset())
    )


def _free_names(tree: ast.Node) -> set[str]:
    return {n.name for n, scope in _scoped(tree, frozenset()) if isinstance(n, ast.Ident) and n.name not in scope}


def _substitute(node: ast.Node, definitions: Mapping[str, ast.Node], scope: frozenset[str]) -> ast.Node:
    name = _variable_name(node) if VARIABLES not in scope else None
    if name is not None:
        if name not in definitions:
            raise InlineError(f"variables.{name} is not defined before it is used")
        replacement = definitions[name]
        captured = _free_names(replacement) & scope
        if captured:
            raise InlineError(
                f"variables.{name} reads {', '.join(sorted(captured))}, a macro variable where it is used"
            )
        return copy.deepcopy(replacement)
    inner = scope | _bound(node)

    def sub(child: ast.Node, within: frozenset[str] = scope) -> ast.Node:
        return _substitute(child, definitions, within)

    if isinstance(node, (ast.Select, ast.Index)):
        node.operand = sub(node.operand)
        if isinstance(node, ast.Index):
            node.index = sub(node.index)
    elif isinstance(node, ast.Call):
        node.target = sub(node.target) if node.target is not None else None
        node.args = [sub(a) for a in node.args]
    elif isinstance(node, ast.CreateList):
        for element in node.elements:
            element.value = sub(element.value)
    elif isinstance(node, ast.CreateMap):
        for entry in node.entries:
            entry.key, entry.value = sub(entry.key), sub(entry.value)
    elif isinstance(node, ast.CreateStruct):
        for init in node.fields:
            init.value = sub(init.value)
    elif isinstance(node, ast.Comprehension):
        node.range = sub(node.range)
        node.predicate = sub(node.predicate, inner) if node.predicate is not None else None
        node.body = sub(node.body, inner)
    elif isinstance(node, ast.Bind):
        node.init, node.body = sub(node.init), sub(node.body, inner)
    elif isinstance(node, ast.OptMap):
        node.target, node.body = sub(node.target), sub(node.body, inner)
    return node


def inline_variables(sources: Mapping[str, str], expression: str) -> str:
    """``expression`` with every ``variables.<name>`` replaced by that variable's definition, itself
    inlined (``sources``: the variables in declaration order). Raises :class:`InlineError`."""
    definitions: dict[str, ast.Node] = {}
    for name, source in sources.items():
        definitions[name] = _substitute(parse(source), definitions, frozenset())
    tree = _substitute(parse(expression), definitions, frozenset())
    return _AsWritten().unparse(tree)


@functools.cache
def _kyverno_functions() -> frozenset[str]:
    return frozenset(profiles.KYVERNO.functions()) - frozenset(profiles.KUBERNETES.functions())


def kyverno_only(source: str, message: str = "") -> list[str]:
    """The functions (and macros) of ``source`` only Kyverno's CEL environment has, lookups first
    (``['resource.List', 'cel.bind']``); those a compile error ``message`` names when ``source`` does not
    parse. The checker stops at the first undeclared call of a nest, so the tree is read instead."""
    try:
        tree = parse(source)
    except CelCompileError:
        return list(dict.fromkeys(_UNDECLARED.findall(message)))
    only = _kyverno_functions()
    found: list[str] = []
    for node in tree.walk():
        if isinstance(node, ast.Bind) and "cel.bind" not in profiles.KUBERNETES.macros:
            found.append("cel.bind")
        elif isinstance(node, ast.Call):
            qualified = ast.qualified_name(node.target) if node.target is not None else None
            name = f"{qualified}.{node.function}" if qualified else node.function
            if name in only:
                found.append(name)
            elif node.target is not None and node.function in only:
                found.append(node.function)
    found = list(dict.fromkeys(found)) or list(dict.fromkeys(_UNDECLARED.findall(message)))
    return sorted(found, key=lambda name: (not name.startswith(_IO_PREFIXES), found.index(name)))


def purpose(source: str) -> str:
    """What an expression is for, from its leading ``// comment`` line ('' without one)."""
    first = source.strip().splitlines()[0] if source.strip() else ""
    return first[2:].strip() if first.startswith("//") else ""


__all__ = ["CelCompileError", "InlineError", "inline_variables", "kyverno_only", "purpose", "reads_variables"]
