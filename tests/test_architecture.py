"""House rules that import-linter cannot express (see docs/architecture.md): no import cycles, lazy
imports included, and no module-level mutable state in the runtime and the service floor."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "celmut"


def _cycles() -> list[list[str]]:
    """Strongly connected components of celmut's import graph (Tarjan), larger than one module."""
    graph = grimp.build_graph("celmut", cache_dir=None)
    modules = sorted(graph.modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in modules:
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_itself_through_others() -> None:
    assert _cycles() == []


_MUTATORS = {"append", "add", "update", "setdefault", "pop", "popitem", "clear", "extend", "insert", "remove"}


def _module_state_writes(path: Path) -> list[str]:
    """Writes to module-level containers from inside functions, and ``global`` statements."""
    tree = ast.parse(path.read_text())
    module_names = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    problems = []
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
        local = {a.arg for a in function.args.args + function.args.kwonlyargs}
        for node in ast.walk(function):
            if isinstance(node, ast.Global):
                problems.append(f"{path.name}:{node.lineno}: global {', '.join(node.names)}")
            target = None
            if isinstance(node, ast.Assign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                target = next((t.value for t in targets if isinstance(t, ast.Subscript)), None)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
                target = node.func.value
            if isinstance(target, ast.Name) and target.id in module_names and target.id not in local:
                problems.append(f"{path.name}:{node.lineno}: writes module-level {target.id}")
    return problems


@pytest.mark.parametrize(
    "path",
    [*sorted((PACKAGE / "runtime").rglob("*.py")), *sorted((PACKAGE / "service").rglob("*.py")), PACKAGE / "kinds.py"],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_the_runtime_keeps_no_module_level_state(path: Path) -> None:
    """Registries belong to whoever built them (a policy store, an offline cluster), never to a module."""
    assert _module_state_writes(path) == []
