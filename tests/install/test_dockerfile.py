"""The Dockerfile (Docker is not available to the tests: its instructions are read instead): a slim
Python 3.11 base, tracing installed, the hot path compiled by mypyc with the compiler in the build
stage only, a numeric non-root user matching the chart's runAsUser, and a build context that leaves
out what the image does not need."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from celmut.install.manifests import RUN_AS

ROOT = Path(__file__).resolve().parents[2]


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last_from = max(i for i, (op, _) in enumerate(steps) if op == "FROM")
    return steps[last_from:]


def test_every_stage_is_slim_python_3_11() -> None:
    bases = [args.split()[0] for op, args in instructions() if op == "FROM"]
    assert bases and all(base == "python:3.11-slim" for base in bases)


def test_tracing_is_installed_from_the_project() -> None:
    installs = [args for op, args in instructions() if op == "RUN" and "pip install" in args]
    extras = [m.group(1).split(",") for args in installs if (m := re.search(r"""\[([a-z,]+)\]""", args))]
    assert any("tracing" in found for found in extras), installs
    # pip only warns about an extra the project does not declare (such as the removed ``fast``)
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {extra for found in extras for extra in found} <= set(declared), extras


def test_the_image_runs_the_compiled_wheel_and_carries_no_compiler() -> None:
    steps = instructions()
    last_from = max(i for i, (op, _) in enumerate(steps) if op == "FROM")
    build, final = steps[:last_from], steps[last_from:]
    assert any(op == "RUN" and "CELMUT_MYPYC=1 pip wheel" in args for op, args in build)
    assert any(op == "RUN" and "apt-get install" in args and "gcc" in args for op, args in build)
    assert not any("gcc" in args or "apt-get install" in args for _, args in final)
    # the image refuses to build unless `celmut version` reports the compiled build
    assert any(op == "RUN" and "celmut version" in args and "Build: compiled" in args for op, args in final)


def test_the_image_runs_as_the_charts_non_root_user() -> None:
    (user,) = [args for op, args in final_stage() if op == "USER"]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) == RUN_AS != 0  # numeric: kubelet can verify runAsNonRoot
    assert not gid or (gid.isdigit() and int(gid) != 0)
    entrypoint = [args for op, args in final_stage() if op == "ENTRYPOINT"]
    assert entrypoint == ['["celmut"]']


def test_the_build_context_excludes_the_virtualenv_and_tests_but_not_the_sources() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".venv", ".git", "tests"} <= ignored
    copied = " ".join(args for op, args in instructions() if op == "COPY")
    for needed in ("pyproject.toml", "setup.py", "build_backend", "README.md", "celmut"):
        assert needed in copied and needed not in ignored
