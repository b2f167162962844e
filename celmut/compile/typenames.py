"""Which mutations need the type names of their typed constructions kept until admission.

In ``Object{spec: Object.spec{template: Object.spec.template{…}}}`` every nested construction must be
named after the path it is assigned to (list elements share their list's path). The API server and
Kyverno check this when the mutation runs, not when the policy is created
(``k8s.io/apiserver/pkg/cel/mutation/dynamic/objects.go`` ``CheckTypeNamesMatchFieldPathNames``,
called from ``patch/smd.go``/``patch/json_patch.go``; Kyverno ``pkg/cel/policies/mpol/compiler/
applyconfig.go``): a policy with a wrong name is accepted and fails at admission
(:mod:`celmut.runtime.typenames`). That check reads the names off the result, which the C++ backend
does not keep below the top level, so :func:`needs_runtime_names` says when a mutation must run on
cel-python: when this static walk cannot prove every name right.
"""

from __future__ import annotations

from celmut.cel import ast


def type_name_errors(expr: ast.Node, root: str = "Object") -> list[tuple[ast.Node, str]]:
    """(node, message) for each construction whose type name does not match its field path."""
    problems: list[tuple[ast.Node, str]] = []
    _check(expr, root, problems, set())
    return problems


def needs_runtime_names(expr: ast.Node) -> bool:
    """Whether a typed construction in ``expr`` is misnamed or sits where this walk cannot tell
    its path (inside a function call, a variable, a map value …)."""
    problems: list[tuple[ast.Node, str]] = []
    seen: set[int] = set()
    _check(expr, "Object", problems, seen)
    if problems:
        return True
    return any(
        isinstance(node, ast.CreateStruct) and node.type_name != "JSONPatch" and id(node) not in seen
        for node in expr.walk()
    )


def _check(node: ast.Node, expected: str | None, problems: list[tuple[ast.Node, str]], seen: set[int]) -> None:
    if isinstance(node, ast.CreateStruct):
        if node.type_name == "JSONPatch":
            for init in node.fields:
                if init.name == "value":
                    _check(init.value, None, problems, seen)  # a JSONPatch value is its own root
            return
        seen.add(id(node))
        if expected is not None and node.type_name != expected:
            problems.append((node, f"type name {node.type_name!r} does not match its field path {expected!r}"))
        for init in node.fields:
            _check(init.value, f"{node.type_name}.{init.name}", problems, seen)
    elif isinstance(node, ast.CreateList):
        for element in node.elements:
            _check(element.value, expected, problems, seen)
    elif isinstance(node, ast.Comprehension) and node.kind in ("map", "transformList"):
        _check(node.body, expected, problems, seen)
    elif isinstance(node, ast.Call) and node.function == "_?_:_":
        _check(node.args[1], expected, problems, seen)
        _check(node.args[2], expected, problems, seen)
    elif isinstance(node, ast.Bind):
        _check(node.body, expected, problems, seen)
