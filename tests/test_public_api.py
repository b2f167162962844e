"""The public Python API (celmut/__init__.py): the exported names are pinned, they load lazily, the
docs page's example runs, and the API answers as the CLI does on the shipped examples."""

from __future__ import annotations

import doctest
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import celmut
import celmut.api

ROOT = Path(__file__).resolve().parents[1]
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
}


def test_the_exported_names_are_pinned() -> None:
    assert celmut.__all__ == [
        "AdmissionInput",
        "AdmissionResult",
        "CelmutError",
        "Policies",
        "PolicyError",
        "PolicyOutcome",
        "PolicySetError",
        "Provenance",
        "__version__",
        "eval",
        "load",
    ]
    assert all(getattr(celmut, name) is not None for name in celmut.__all__)
    with pytest.raises(AttributeError):
        _ = celmut.engine  # type: ignore[attr-defined]


def test_import_celmut_loads_nothing_else() -> None:
    probe = "import sys, json, celmut; print(json.dumps(sorted(m for m in sys.modules if m.startswith('celmut'))))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True).stdout)
    assert loaded == ["celmut", "celmut.lazy"]


def test_the_package_is_typed() -> None:
    assert (ROOT / "celmut" / "py.typed").is_file()


def test_the_python_api_page_example_runs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    page = (ROOT / "docs" / "python-api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert blocks
    monkeypatch.chdir(ROOT)
    for block in blocks:
        exec(compile(block, "docs/python-api.md", "exec"), {})
    out = capsys.readouterr().out
    assert "add-team-label: applied" in out and "no/such/file.yaml" in out


def test_the_api_docstring_examples_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = doctest.testmod(celmut.api, extraglobs={"celmut": celmut}, optionflags=doctest.ELLIPSIS)
    assert result.attempted and not result.failed


def test_load_raises_one_error_listing_every_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: policies.kyverno.io/v1\nkind: MutatingPolicy\nmetadata: {name: bad}\n"
        "spec:\n  mutations:\n  - patchType: JSONPatch\n    jsonPatch: {expression: 'object.'}\n"
    )
    with pytest.raises(celmut.PolicyError) as caught:
        celmut.load(bad, tmp_path / "missing.yaml")
    message = str(caught.value)
    assert "missing.yaml: no such file or directory" in message and "bad.yaml: MutatingPolicy bad" in message
    assert isinstance(caught.value, celmut.CelmutError) and len(caught.value.problems) == 2  # type: ignore[attr-defined]


def test_apply_answers_as_celmut_apply_does() -> None:
    """The same object out of the API as out of ``celmut apply -o json`` (stdout holds the object)."""
    pod = yaml.safe_load((ROOT / "examples" / "resources" / "pod.yaml").read_text())
    result = celmut.load(ROOT / "policies" / "examples").apply(pod)
    cli = subprocess.run(
        [sys.executable, "-m", "celmut", "apply", "policies/examples", "-r", "examples/resources/pod.yaml", "-o", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert cli.returncode == 0, cli.stderr
    printed, _ = json.JSONDecoder().raw_decode(cli.stdout)
    assert result.allowed and result.changed
    assert result.object == printed
    assert [(o.policy, o.status) for o in result.outcomes if o.status != "skipped"] == [
        ("add-team-label", "applied"),
        ("default-security-context", "applied"),
    ]


def test_eval_rejects_an_input_it_does_not_know() -> None:
    with pytest.raises(TypeError, match="oldObject"):
        celmut.eval("1", oldObject={})
