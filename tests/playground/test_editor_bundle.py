"""The editor the page ships (``celmut/playground/static/editor.js``) is CodeMirror 6 built by esbuild from
``playground-src/`` with the packages its lockfile pins: the committed file says (first line) the hash
of every source it was built from, which must be the sources in the repository, and rebuilding it gives
the same bytes. Nothing of it comes from a CDN."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "playground-src"
BUNDLE = ROOT / "celmut" / "playground" / "static" / "editor.js"


def sources_hash() -> str:
    """build.mjs's ``sourcesHash``: each file's path, a NUL, its bytes, a NUL, in its order."""
    files = ["build.mjs", "package.json", "package-lock.json"]
    files += sorted(f"src/{p.name}" for p in (SOURCES / "src").glob("*.js"))
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.encode() + b"\0")
        digest.update((SOURCES / file).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def test_the_committed_editor_is_built_from_the_sources_in_the_repository() -> None:
    first = BUNDLE.read_text(encoding="utf-8").split("\n", 1)[0]
    found = re.search(r"sources sha256:([0-9a-f]{64})", first)
    assert found, first
    assert found[1] == sources_hash(), "playground-src changed: rebuild the editor with `make playground-editor`"


def test_every_package_is_pinned_to_one_version_with_its_integrity() -> None:
    package = json.loads((SOURCES / "package.json").read_text())
    lock = json.loads((SOURCES / "package-lock.json").read_text())
    for name, version in package["devDependencies"].items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} {version}: an exact version, not a range"
        locked = lock["packages"][f"node_modules/{name}"]
        assert locked["version"] == version and locked["integrity"].startswith("sha512-")


def test_the_bundle_carries_the_licences_of_what_it_bundles_and_loads_nothing_else() -> None:
    text = BUNDLE.read_text(encoding="utf-8")
    for package in ("@codemirror/view", "@codemirror/lang-yaml", "@lezer/yaml", "style-mod"):
        assert re.search(rf"\n{re.escape(package)} \d+\.\d+\.\d+\n\n", text), package
    code = text.split("/* The packages bundled above")[0]
    assert not re.search(r"""(import\(|fetch\(|src=)["']https?://""", code)  # no CDN, nothing fetched


def test_the_editor_ships_in_the_wheel() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["celmut"]
    assert "playground/static/*.js" in data
    assert not (ROOT / "celmut" / "playground" / "package.json").exists()  # the sources stay out of the package


@pytest.mark.skipif(
    shutil.which("node") is None or not (SOURCES / "node_modules" / "esbuild").is_dir(),
    reason="no node, or playground-src/node_modules not installed (make playground-editor installs it)",
)
def test_a_rebuild_gives_the_same_bytes(tmp_path: Path) -> None:
    rebuilt = tmp_path / "editor.js"
    subprocess.run(["node", "build.mjs", str(rebuilt)], cwd=SOURCES, check=True, capture_output=True, timeout=300)
    assert rebuilt.read_bytes() == BUNDLE.read_bytes()
