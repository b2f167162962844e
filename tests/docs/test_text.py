"""User documentation speaks to users: no page of README.md, CONTRIBUTING.md or docs/, no benchmark's
docstring and no --help (its reference pages are under docs/) speaks of the project's issues, its
development stops, branches or commits, or a machine's paths. History belongs in CHANGELOG.md.
Upstream references (kyverno/kyverno#17438, a Kubernetes source file) are fine."""

from __future__ import annotations

import ast
import re

import pytest

from tests.docs.examples import ROOT, pages

FORBIDDEN = {
    "an issue number": re.compile(r"(?i)(?<![\w/])issues?[ -]#?\d+|(?<![\w/])#\d+\b(?![\w/])"),
    "the issue": re.compile(r"(?i)\bthe issue(?:'s)?\b|\bissue's\b"),
    "a development stop": re.compile(r"(?i)\b(?:this|that|the|each|previous|next|a|its)\s+stop(?:'s)?\b|\bstop's\b"),
    "a branch": re.compile(r"(?i)\bbranch(?:es)?\b|\bwt-\d"),
    "a commit": re.compile(r"(?<![\w:])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
    "a machine's path": re.compile(r"/work/|~/\.cache|\.cache/kube|/home/\w|/root/|\.\./shared"),
}


def _texts() -> list[tuple[str, str]]:
    found = [(p.relative_to(ROOT).as_posix(), p.read_text()) for p in pages()]
    found.append(("benchmarks/README.md", (ROOT / "benchmarks" / "README.md").read_text()))
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    found.append((f"{path.relative_to(ROOT)} {getattr(node, 'name', '')} docstring".strip(), doc))
    return found


TEXTS = _texts()


@pytest.mark.parametrize(("where", "text"), TEXTS, ids=[w for w, _ in TEXTS])
def test_user_docs_speak_to_users(where: str, text: str) -> None:
    problems = [
        f"{what}: {line.strip()[:160]}"
        for line in text.splitlines()
        for what, pattern in FORBIDDEN.items()
        if pattern.search(line)
    ]
    assert problems == [], where


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("as issue 36 measured", "an issue number"),
        ("the issue's targets", "the issue"),
        ("measured at this stop", "a development stop"),
        ("merged from branch wt-36a", "a branch"),
        ("side by side with 6eb1d8b", "a commit"),
        ("kubeconfig in ~/.cache/kube-rig", "a machine's path"),
    ],
)
def test_each_kind_of_history_is_caught(line: str, what: str) -> None:
    assert FORBIDDEN[what].search(line)


@pytest.mark.parametrize(
    "line",
    ["kyverno/kyverno#17438", "kubernetes/kubernetes#57167", "`pkg/controllers/webhook`", "sha256:0a1b2c3d4e5f6a7b"],
)
def test_upstream_references_are_fine(line: str) -> None:
    assert not any(pattern.search(line) for pattern in FORBIDDEN.values())


def test_every_benchmark_says_how_to_run_it() -> None:
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    for path in sorted((ROOT / "benchmarks").glob("*_bench.py")):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert f"python benchmarks/{path.name}" in doc, path.name
        assert f"`{path.name}`" in readme and f"python benchmarks/{path.name}" in readme, path.name
