"""Kyverno's rule that the type names of an ApplyConfiguration follow its field paths.

In ``Object{spec: Object.spec{template: Object.spec.template{…}}}`` every nested construction must
be named after the path it is assigned to (list elements share their list's path), as Kyverno's
``CheckTypeNamesMatchFieldPathNames`` enforces. Plain map literals are allowed anywhere.
"""

from __future__ import annotations

from celmut.cel import ast


def type_name_errors(expr: ast.Node) -> list[tuple[ast.Node, str]]:
    """(node, message) for each construction whose type name does not match its field path."""
    problems: list[tuple[ast.Node, str]] = []
    _check(expr, "Object", problems)
    return problems


def _check(node: ast.Node, expected: str | None, problems: list[tuple[ast.Node, str]]) -> None:
    if isinstance(node, ast.CreateStruct):
        if node.type_name == "JSONPatch":
            return
        if expected is not None and node.type_name != expected:
            problems.append((node, f"type name {node.type_name!r} does not match its field path {expected!r}"))
        for init in node.fields:
            _check(init.value, f"{node.type_name}.{init.name}", problems)
    elif isinstance(node, ast.CreateList):
        for element in node.elements:
            _check(element.value, expected, problems)
    elif isinstance(node, ast.Comprehension) and node.kind in ("map", "transformList"):
        _check(node.body, expected, problems)
    elif isinstance(node, ast.Call) and node.function == "_?_:_":
        _check(node.args[1], expected, problems)
        _check(node.args[2], expected, problems)
    elif isinstance(node, ast.Bind):
        _check(node.body, expected, problems)
