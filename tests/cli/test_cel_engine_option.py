"""``--cel-engine auto|celpy|planner`` on the commands that compile CEL: the same outputs on
every engine, and a clear exit 2 when the requested engine is unknown."""

from __future__ import annotations

from pathlib import Path

import pytest

from celmut.cel.backends import select
from celmut.main import main

ROOT = Path(__file__).resolve().parents[2]
POD = str(ROOT / "examples/resources/pod.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("engine", ["auto", "celpy", "planner", "cpp"])
def test_eval_on_each_engine(capsys: pytest.CaptureFixture[str], engine: str) -> None:
    code, out, _ = run(capsys, "eval", "object.spec.containers.map(c, c.name)", "--object", POD, "--cel-engine", engine)
    assert code == 0 and out.split() == ["[", '"nginx",', '"sidecar"', "]"]


def test_apply_gives_the_same_output_on_every_engine(capsys: pytest.CaptureFixture[str]) -> None:
    outputs = set()
    for engine in ("celpy", "planner"):
        code, out, _ = run(
            capsys,
            "apply",
            str(ROOT / "policies"),
            "-r",
            str(ROOT / "examples/resources/"),
            "--cluster-resources",
            str(ROOT / "examples/cluster.yaml"),
            "-o",
            "patch",
            "--cel-engine",
            engine,
        )
        assert code == 0
        outputs.add(out)
    assert len(outputs) == 1


def test_the_environment_variable_chooses_without_the_flag(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(select.ENV_VAR, "bogus")
    code, _, err = run(capsys, "eval", "1 + 1")
    assert code == 2 and "unknown CEL engine 'bogus'" in err
    code, out, _ = run(capsys, "eval", "1 + 1", "--cel-engine", "celpy")
    assert code == 0 and out.strip() == "2"
