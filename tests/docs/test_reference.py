"""The reference pages (docs/reference/) are what the code says today, and say all of it: every
command and flag, Helm value, CRD field, metric and CEL function. A page that differs from what
``make docs-reference`` writes fails, naming the page; the completeness checks below read the code
apart from the generator, so a generator that forgot something fails too."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.docs.reference_pages import ROOT, generator

GEN = generator()
PAGES: dict[str, str] = GEN.render()
REFERENCE = ROOT / "docs" / "reference"


def test_every_reference_page_is_what_the_code_renders() -> None:
    stale = GEN.stale(PAGES)
    assert stale == [], "stale reference pages (run `make docs-reference`): " + ", ".join(stale)


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    from celmut.main import build_parser

    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("command", list(_subcommands()))
def test_each_command_page_names_every_flag_and_exit_code(command: str) -> None:
    parser = _subcommands()[command]
    page = (REFERENCE / "cli" / f"{command}.md").read_text()
    for action in parser._actions:
        if action.help == argparse.SUPPRESS:
            continue
        for flag in action.option_strings:
            if flag not in ("-h", "--help"):
                assert f"`{flag}`" in page, f"{command}: {flag}"
    assert re.search(r"^\| 70 \|", page, re.M), "exit code 70"
    assert f"[`celmut {command}`]({command}.md)" in (REFERENCE / "cli" / "index.md").read_text()


def _leaf_paths(node: Any, prefix: str = "") -> set[str]:
    paths = set()
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else key
            paths |= _leaf_paths(value, path) if isinstance(value, dict) and value else {path}
    return paths


def _schema_properties(schema: dict[str, Any], prefix: str = "") -> set[str]:
    paths = set()
    for key, sub in (schema.get("properties") or {}).items():
        path = f"{prefix}.{key}" if prefix else key
        paths |= _schema_properties(sub, path) if sub.get("properties") else {path}
    return paths


def test_the_helm_values_page_has_every_value_and_schema_property() -> None:
    chart = ROOT / "charts" / "celmut"
    page = (REFERENCE / "helm-values.md").read_text()
    values = yaml.safe_load((chart / "values.yaml").read_text())
    schema = json.loads((chart / "values.schema.json").read_text())
    rows = set(re.findall(r"^\| `([^`]+)` \|", page, re.M))
    assert _schema_properties(schema) - rows == set()

    def documented(path: str) -> bool:  # a key of a free-form map is documented by the map's row
        parts = path.split(".")
        return any(".".join(parts[:n]) in rows for n in range(len(parts), 0, -1))

    leaves = _leaf_paths(values)
    assert len(leaves) > 80
    assert {path for path in leaves if not documented(path)} == set()


@pytest.mark.parametrize("crd_file", sorted(p.name for p in (ROOT / "crds").glob("*.yaml")))
def test_each_crd_page_has_every_field(crd_file: str) -> None:
    crd = yaml.safe_load((ROOT / "crds" / crd_file).read_text())
    page = (REFERENCE / "crds" / f"{crd['metadata']['name']}.md").read_text()
    names: set[str] = set()

    def walk(schema: dict[str, Any]) -> None:
        for key, sub in (schema.get("properties") or {}).items():
            names.add(key)
            walk(sub)
        for nested in ("items", "additionalProperties"):
            if isinstance(schema.get(nested), dict):
                walk(schema[nested])

    for version in crd["spec"]["versions"]:
        walk(version["schema"]["openAPIV3Schema"])
    documented = set(re.findall(r"^\| `(?:[^`]*\.)?([^.`\[\]]+)(?:\[\])?` \|", page, re.M))
    assert names - documented == set()


def test_the_metrics_page_has_every_metric_named_in_the_code() -> None:
    page = (REFERENCE / "metrics.md").read_text()
    documented = set(re.findall(r"^\| `(celmut_[a-z_]+)` \|", page, re.M))
    in_code = set()
    for path in (ROOT / "celmut").rglob("*.py"):
        # a metric's name is the first argument of its constructor, its help text the second
        in_code |= set(re.findall(r'\(\s*"(celmut_[a-z_]+)",\s*"', path.read_text()))
    assert len(in_code) > 30
    missing = {name for name in in_code if name not in documented and f"{name}_total" not in documented}
    assert missing == set()


def test_the_cel_page_has_every_function_of_both_profiles() -> None:
    from celmut.cel import profiles

    page = (REFERENCE / "cel-functions.md").read_text()
    functions = {name for profile in profiles.PROFILES.values() for name in profile.functions()}
    assert len(functions) > 200
    assert {f for f in functions if f"{f}(" not in page} == set()


def test_a_stale_page_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check names the page that differs, and a generated page no renderer writes any more."""
    copy = tmp_path / "reference"
    for path, text in PAGES.items():
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / path).write_text(text)
    (copy / "metrics.md").write_text(PAGES["metrics.md"].replace("celmut_policies_loaded", "celmut_gone"))
    (copy / "cli" / "removed.md").write_text(GEN.GENERATED + "# celmut removed\n")
    monkeypatch.setattr(GEN, "REFERENCE", copy)
    assert GEN.stale(PAGES) == ["cli/removed.md", "metrics.md"]
    assert GEN.main(["--check"]) == 1
    assert GEN.main([]) == 0 and GEN.stale(PAGES) == []
