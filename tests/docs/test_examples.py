"""Every fenced shell and YAML example of README.md, CONTRIBUTING.md and docs/ runs as written.

Per page, in a directory holding the repository's files and the page's titled YAML blocks:

* each ``celmut`` command of a shell block runs in-process and exits as its ``# exit N`` comment says
  (else 0); a ``console`` block's shown output is compared with what the command prints;
* ``make TARGET`` is dry-run (``make -n``), and the ``celmut`` command its recipe prints runs;
* a YAML block parses and loads as what it is: a policy or preset loads and compiles
  (``celmut.load``), a resource is accepted by ``celmut apply``, a GlobalContextEntry serves
  ``celmut apply`` as a cluster resource, Helm values pass the chart's values schema, a Kyverno
  ``Test`` is run by a ``celmut test`` of the page;
* a block marked ``<!-- not-run: reason -->`` (it needs a cluster, installs software, or takes
  minutes) still has each ``celmut`` command parsed by the real argument parser, each repository
  path it names checked, and each benchmark flag checked against the benchmark's ``--help``.

Nothing else runs: a ``kubectl``, ``helm`` or ``pip`` line in a block without a marker fails.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.docs.examples import ROOT, SHELL, YAML, Block, Command, blocks, commands, pages, segments

PAGES = [page for page in pages() if any(b.language in SHELL + YAML for b in blocks(page))]
POLICY_KINDS = {
    "MutatingPolicy", "NamespacedMutatingPolicy", "PolicyException", "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding", "PodMutation", "GpuSlicing", "PodPinningPlan",
}  # fmt: skip
LONG_RUNNING = {"serve", "controller", "playground"}  # they serve until stopped
REPOSITORY_PATH = re.compile(r"^(policies|examples|presets|tests|charts|crds|benchmarks|docs)/")


def run_celmut(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """``celmut ARGV`` in this process, in ``cwd``: (exit code, stdout, stderr)."""
    from celmut.main import main

    out, err = io.StringIO(), io.StringIO()
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as stop:  # argparse: --help, or a bad flag
                code = stop.code if isinstance(stop.code, int) else 1
    finally:
        os.chdir(previous)
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def workspace(tmp_path: Path, page_blocks: list[Block]) -> Iterator[Path]:
    """A directory with the repository's top-level entries (linked) and the page's titled files."""
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".venv", "site") and not (tmp_path / entry.name).exists():
            (tmp_path / entry.name).symlink_to(entry)
    for block in page_blocks:
        if block.title:
            assert not (tmp_path / block.title).exists(), f"{block.where}: {block.title} names a repository file"
            (tmp_path / block.title).write_text(block.text)
    yield tmp_path


def _celmut_argv(argv: list[str]) -> list[str]:
    argv = [a for a in argv if a not in ("2>&1",)]
    assert argv[0] == "celmut"
    return argv[1:]


def check_command(block: Block, command: Command, cwd: Path) -> None:
    argv = command.argv
    where = f"{block.where}: {command.line}"
    if argv[0] == "make":
        dry = subprocess.run(["make", "-n", *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert dry.returncode == 0, where + "\n" + dry.stderr
        for line in dry.stdout.replace("\\\n", " ").splitlines():  # the recipe's celmut command runs
            if line.startswith(".venv/bin/celmut "):
                code, out, err = run_celmut(line.split()[1:], ROOT)
                assert code == 0, where + "\n" + err[-2000:]
        return
    assert argv[0] == "celmut", f"{where}: only celmut and make run here; mark the block <!-- not-run: why -->"
    assert not {"|", ">", "<"} & set(command.line.split()), f"{where}: a pipe or redirect: mark the block not-run"
    args = _celmut_argv(argv)
    assert (args and args[0] not in LONG_RUNNING) or "--help" in args, f"{where}: serves until stopped"
    code, out, err = run_celmut(args, cwd)
    assert "Traceback" not in err, where + "\n" + err[-3000:]
    assert code == command.exit_code, f"{where}: exit {code}\n{out[-1500:]}\n{err[-1500:]}"
    if command.output is not None and command.output.strip():
        shown = [line.rstrip() for line in command.output.rstrip().splitlines()]
        printed = [line.rstrip() for line in out.rstrip().splitlines()]
        if "2>&1" in argv:
            printed = [line.rstrip() for line in (err + out).rstrip().splitlines()]
        assert printed == shown, f"{where}: the page shows other output than the command prints"


@cache
def benchmark_help(script: str) -> str:
    done = subprocess.run([sys.executable, script, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{script} --help: {done.stderr[-1000:]}"
    return done.stdout


def check_not_run(block: Block) -> None:
    """What can be checked without running: celmut's flags, the repository's paths, benchmarks' flags."""
    from celmut.main import build_parser, parse

    assert block.not_run, f"{block.where}: a not-run marker needs its reason"
    if block.language in YAML:
        assert [d for d in yaml.safe_load_all(block.text) if d is not None], f"{block.where}: no document"
        return
    for command in commands(block):
        for argv in segments(command.line):
            if argv[0] == "celmut":
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
                    try:
                        parse(build_parser(), argv[1:])
                    except SystemExit as stop:
                        assert stop.code == 0, f"{block.where}: {command.line}\n{err.getvalue()}"
            if argv[0] in ("python", "python3") and argv[1].startswith("benchmarks/"):
                usage = benchmark_help(argv[1])
                for flag in (a.strip("[]") for a in argv[2:] if a.strip("[]").startswith("--")):
                    assert flag in usage, f"{block.where}: {argv[1]} has no {flag}"
            for token in argv:
                if REPOSITORY_PATH.match(token) and "$" not in token and "*" not in token:
                    assert (ROOT / token).exists(), f"{block.where}: {token} does not exist"


def check_yaml(block: Block, cwd: Path) -> None:
    import celmut

    documents = [d for d in yaml.safe_load_all(block.text) if d is not None]
    assert documents, f"{block.where}: an empty YAML block"
    kinds = {str(d.get("kind")) for d in documents if isinstance(d, dict)}
    path = cwd / (block.title or f"block-{block.line}.yaml")
    if not block.title:
        path.write_text(block.text)
    if all("staticConfig" in d or d.get("kind") in POLICY_KINDS for d in documents):
        policies = celmut.load(str(path))  # raises PolicyError naming every problem
        assert policies.names or kinds <= {"PolicyException"}, f"{block.where}: no policy"
    elif kinds == {"GlobalContextEntry"}:
        code, _, err = run_celmut(
            ["apply", "policies/examples", "-r", "examples/resources/pod.yaml", "--cluster-resources", str(path)], cwd
        )
        assert code == 0, f"{block.where}\n{err[-2000:]}"
    elif kinds == {"Test"}:
        runs = [c for b in blocks(ROOT / block.page) for c in commands(b) if c.argv[:2] == ["celmut", "test"]]
        assert runs, f"{block.where}: a Kyverno test no block of the page runs with celmut test"
    elif all("apiVersion" in d and "kind" in d for d in documents):
        code, _, err = run_celmut(["apply", "policies/examples", "-r", str(path)], cwd)
        assert code == 0, f"{block.where}: celmut apply does not accept it\n{err[-2000:]}"
    else:  # Helm values
        schema = json.loads((ROOT / "charts" / "celmut" / "values.schema.json").read_text())
        for document in documents:
            jsonschema.validate(document, schema)


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_example_of_the_page_runs(page: Path, tmp_path: Path) -> None:
    page_blocks = [b for b in blocks(page) if b.language in SHELL + YAML]
    with workspace(tmp_path, page_blocks) as cwd:
        for block in page_blocks:
            if block.not_run is not None:
                check_not_run(block)
            elif block.language in YAML:
                check_yaml(block, cwd)
            else:
                for command in commands(block):
                    check_command(block, command, cwd)


def test_not_run_blocks_say_why_and_stay_the_exception() -> None:
    """Blocks that need a cluster (kubectl, helm, a served port) or take minutes (benchmarks) are
    marked; every other example runs."""
    every = [b for page in pages() for b in blocks(page) if b.language in SHELL + YAML]
    skipped = [b for b in every if b.not_run is not None]
    assert all(b.not_run for b in skipped)
    assert len(every) > 60
    assert len(skipped) * 5 <= len(every) * 2, [b.where for b in skipped]


def test_a_shell_line_is_split_into_its_commands() -> None:
    """What the not-run check parses: each command of a pipe, a chain or a loop body."""
    line = 'for f in presets/spot-*.yaml; do celmut compile "$f" > "x/$(basename "$f")"; done'
    assert ["celmut", "compile", "$f"] in segments(line)
    assert segments("celmut manifests --crds | kubectl apply -f -  # first") == [
        ["celmut", "manifests", "--crds"],
        ["kubectl", "apply", "-f", "-"],
    ]


@pytest.mark.parametrize(
    ("text", "fails"),
    [
        ("$ celmut eval '1 + 1'\n2\n", False),
        ("$ celmut eval '1 + 1'\n3\n", True),  # the page shows other output
        ("$ celmut eval 'nope('\n", True),  # exits 2 where the page expects 0
        ("$ celmut eval 'nope('  # exit 2: a compile error\n", False),
    ],
)
def test_a_console_block_is_held_to_its_output_and_exit_code(tmp_path: Path, text: str, fails: bool) -> None:
    block = Block(page="page.md", line=1, language="console", title="", not_run=None, text=text)
    (command,) = commands(block)
    if fails:
        with pytest.raises(AssertionError):
            check_command(block, command, tmp_path)
    else:
        check_command(block, command, tmp_path)
