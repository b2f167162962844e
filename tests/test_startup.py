"""What each command loads (issue 15, item 6): ``celmut --version`` and ``--help`` load neither the
CEL layer nor any cluster or server library, and the offline commands never load FastAPI, uvicorn,
the Kubernetes client or prometheus_client. Deterministic: it inspects ``sys.modules`` in a fresh
interpreter; the time it takes is measured by benchmarks/startup_bench.py, never here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVER_AND_CLUSTER = ("fastapi", "uvicorn", "starlette", "kubernetes", "prometheus_client", "urllib3")
PROBE = """
import contextlib, io, json, sys
from celmut.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules} | {n for n in sys.modules if n.startswith("celmut.")})))
"""


def loaded(*argv: str) -> set[str]:
    result = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=ROOT, check=True)
    return set(json.loads(result.stdout))


@pytest.mark.parametrize(
    "argv",
    [["--version"], ["--help"], ["apply", "--help"], ["playground", "--help"], ["version"], ["completion", "bash"]],
    ids=" ".join,
)
def test_version_and_help_load_no_cel_no_cluster_no_server(argv: list[str]) -> None:
    modules = loaded(*argv)
    heavy = {"celmut.cel", "celpy", "lark", "cryptography", "kubernetes_validate", "jsonschema", *SERVER_AND_CLUSTER}
    assert modules & heavy == set()


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "1 + 1"],
        ["compile", "presets/gpu-slicing.yaml"],
        ["apply", "policies/examples", "-r", "examples/resources/"],
        ["test", "tests/data/kyverno-tests"],
    ],
    ids=lambda argv: argv[0],
)
def test_offline_commands_load_no_server_or_cluster_library(argv: list[str]) -> None:
    modules = loaded(*argv)
    assert "celmut.cel" in modules  # they did run
    assert modules & set(SERVER_AND_CLUSTER) == set()
