"""Which build runs, and the switch that forces the pure-Python modules (celmut.native).

mypyc installs each compiled module as an extension beside its ``.py``; Python prefers the extension.
``CELMUT_PURE=1`` must make the same install import the sources, and ``celmut version`` must say which
build runs and why.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from celmut.main import main
from celmut.native import COMPILED_MODULES, SourceOnlyFinder, current_build, installed_extensions

EXTENSION = importlib.machinery.EXTENSION_SUFFIXES[0]


def test_the_source_only_finder_takes_the_py_beside_a_compiled_module(tmp_path: Path) -> None:
    (tmp_path / "fast.py").write_text("VALUE = 1\n")
    (tmp_path / f"fast{EXTENSION}").write_bytes(b"not a real extension")
    usual = importlib.machinery.PathFinder.find_spec("celmut.fast", [str(tmp_path)])
    assert usual is not None and usual.origin is not None and usual.origin.endswith(EXTENSION)  # what Python picks
    spec = SourceOnlyFinder().find_spec("celmut.fast", [str(tmp_path)])
    assert spec is not None and spec.origin == str(tmp_path / "fast.py")
    assert SourceOnlyFinder().find_spec("othertool.fast", [str(tmp_path)]) is None  # only celmut's modules


def test_compiled_modules_are_found_beside_their_sources(tmp_path: Path) -> None:
    first = COMPILED_MODULES[0].split(".")[1:]
    (tmp_path / Path(*first[:-1])).mkdir(parents=True, exist_ok=True)
    (tmp_path / Path(*first[:-1]) / f"{first[-1]}{EXTENSION}").write_bytes(b"")
    assert installed_extensions(tmp_path) == (COMPILED_MODULES[0],)
    assert installed_extensions(tmp_path / "empty") == ()


def test_celmut_pure_names_itself_as_the_reason() -> None:
    build = current_build({"CELMUT_PURE": "1"})
    if any(name in sys.modules for name in installed_extensions()):  # too late for this process: it says so
        assert build.kind == "compiled" and "CELMUT_PURE was set after" in build.reason
    else:
        assert build.kind == "pure" and "CELMUT_PURE is set" in build.reason
    assert current_build({"CELMUT_PURE": "0"}) == current_build({})  # 0 does not ask for it


def test_celmut_version_says_which_build_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    lines = capsys.readouterr().out.splitlines()
    build = current_build()
    assert lines[1] == f"Build: {build.kind} ({build.reason})"


@pytest.mark.skipif(not installed_extensions(), reason="no compiled modules installed here: run `make test-compiled`")
@pytest.mark.parametrize("pure", ["", "1"])
def test_an_install_with_compiled_modules_runs_either_build(tmp_path: Path, pure: str) -> None:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"CELMUT_PURE": pure}
    probe = "import celmut.runtime.engine as e, celmut.native as n; print(e.__file__); print(n.current_build().kind)"
    done = subprocess.run([sys.executable, "-P", "-c", probe], env=environment, cwd=tmp_path, capture_output=True,
                          text=True, check=True)  # fmt: skip
    origin, kind = done.stdout.split()
    assert (origin.endswith(".py"), kind) == ((True, "pure") if pure else (False, "compiled"))
    version = subprocess.run([sys.executable, "-P", "-m", "celmut", "version"], env=environment, cwd=tmp_path,
                             capture_output=True, text=True, check=True)  # fmt: skip
    assert f"Build: {kind} (" in version.stdout


def test_the_compiled_build_page_counts_the_modules_that_are_compiled() -> None:
    """docs/development/compiled-build.md shows `celmut version` of the image and the figures' module
    count: both name as many modules as COMPILED_MODULES lists (it went stale once when modules moved)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "development" / "compiled-build.md").read_text()
    counts = {int(n) for n in re.findall(r"\b(\d+) (?:compiled )?modules\b", page)}
    assert counts == {len(COMPILED_MODULES)}, counts
