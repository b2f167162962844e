"""``--cel-engine compiled|interpreted`` on every command that compiles CEL (eval, apply, test, compile,
explain, serve, controller) and on ``manifests``: the same outputs on both engines, each engine really
used; the former names (``auto``, ``celpy``, ``planner``, the removed ``cpp``) still accepted with a
one-line warning and no traceback; a clear exit 2 for an unknown name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from celmut.cel import environment
from celmut.cel.backends import select
from celmut.cel.backends.runners import CompiledRunner, PlannedRunner
from celmut.main import build_parser, main
from celmut.service.settings import from_flags

ROOT = Path(__file__).resolve().parents[2]
POD = str(ROOT / "examples/resources/pod.yaml")

# former name → the engine it runs and the one line it warns with
FORMER = {
    "auto": ("compiled", "warning: CEL engine 'auto' is deprecated: it is the default engine, 'compiled'"),
    "celpy": ("compiled", "warning: CEL engine 'celpy' is deprecated: it is now called 'compiled'"),
    "planner": ("interpreted", "warning: CEL engine 'planner' is deprecated: it is now called 'interpreted'"),
    "cpp": ("compiled", "warning: CEL engine 'cpp' was removed (it was slower on policies): using 'compiled'"),
}
RUNNERS = {"compiled": CompiledRunner, "interpreted": PlannedRunner}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def program_of(source: str) -> object:
    """The program the environment cache holds for ``source`` (each test evaluates its own text)."""
    (program,) = [p for (_, text), p in environment._cache.items() if text == source]
    return program


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_eval_runs_the_engine_it_names(capsys: pytest.CaptureFixture[str], engine: str) -> None:
    source = f"object.spec.containers.map(c, c.name + '{engine}')"
    code, out, err = run(capsys, "eval", source, "--object", POD, "--cel-engine", engine)
    assert code == 0 and err == "" and json.loads(out) == [f"nginx{engine}", f"sidecar{engine}"]
    program = program_of(source)
    assert type(program) is RUNNERS[engine]


@pytest.mark.parametrize("former", sorted(FORMER))
def test_a_former_name_runs_its_engine_with_a_one_line_warning(capsys: pytest.CaptureFixture[str], former: str) -> None:
    engine, warning = FORMER[former]
    source = f"object.metadata.name + '{former}'"
    code, out, err = run(capsys, "eval", source, "--object", POD, "--cel-engine", former)
    assert code == 0 and json.loads(out) == f"web-7d4b9c{former}"
    assert err.splitlines() == [warning]  # one line, no traceback
    assert type(program_of(source)) is RUNNERS[engine]


def test_a_former_name_in_the_environment_variable_warns_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(select.ENV_VAR, "planner")
    code, out, err = run(capsys, "eval", "1 + 41")
    assert code == 0 and out.strip() == "42" and err.splitlines() == [FORMER["planner"][1]]


def test_apply_gives_the_same_output_on_both_engines(capsys: pytest.CaptureFixture[str]) -> None:
    outputs = set()
    for engine in ("compiled", "interpreted"):
        code, out, err = run(
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
        assert code == 0 and "warning: CEL engine" not in err
        outputs.add(out)
    assert len(outputs) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["apply", "policies/examples", "-r", "examples/resources/pod.yaml"],
        ["compile", "presets/gpu-slicing.yaml"],
        ["test", "tests/data/kyverno-tests"],
        ["explain", "-f", "examples/resources/pod.yaml", "policies/examples"],
    ],
    ids=lambda argv: argv[0],
)
@pytest.mark.parametrize("engine", ["interpreted", "celpy"])
def test_every_one_shot_command_takes_the_flag(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str], engine: str
) -> None:
    monkeypatch.chdir(ROOT)
    code, _, err = run(capsys, *argv, "--cel-engine", engine)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning: CEL engine")]
    assert warnings == ([FORMER[engine][1]] if engine in FORMER else [])


@pytest.mark.parametrize("command", ["serve", "controller"])
@pytest.mark.parametrize(("given", "engine"), [("interpreted", "interpreted"), ("celpy", "compiled")])
def test_the_long_running_commands_make_the_engine_their_processes_default(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str, given: str, engine: str
) -> None:
    """serve and controller log a former name's deprecation (one JSON line) and hand their worker
    processes the current name, so a worker neither warns again nor differs."""
    monkeypatch.setenv(select.ENV_VAR, "compiled")  # restored after the test
    tls = ["--tls-cert", "cert.pem", "--tls-key", "key.pem"] if command == "serve" else []
    assert from_flags(build_parser().parse_args([command, *tls, "--policies", "p", "--cel-engine", given])) is not None
    assert select.resolve() == engine
    logged = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    deprecations = [entry["msg"] for entry in logged if entry["msg"].startswith("CEL engine")]
    assert deprecations == ([FORMER[given][1].removeprefix("warning: ")] if given in FORMER else [])
    assert all(entry["level"] == "warning" for entry in logged if entry["msg"] in deprecations)


@pytest.mark.parametrize(("given", "written"), [("interpreted", "interpreted"), ("planner", "interpreted")])
def test_manifests_write_the_current_name(capsys: pytest.CaptureFixture[str], given: str, written: str) -> None:
    code, out, err = run(capsys, "manifests", "--cel-engine", given)
    assert code == 0
    assert err.splitlines() == ([FORMER[given][1]] if given in FORMER else [])
    deployments = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "Deployment"]
    assert len(deployments) == 2
    for deployment in deployments:
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[args.index("--cel-engine") + 1] == written


def test_an_unknown_name_is_bad_input(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit) as raised:  # argparse's own exit
        main(["eval", "1 + 1", "--cel-engine", "fast"])
    err = capsys.readouterr().err
    assert raised.value.code == 2 and "invalid choice: 'fast' (choose from 'compiled', 'interpreted')" in err
    monkeypatch.setenv(select.ENV_VAR, "bogus")
    code, _, err = run(capsys, "eval", "1 + 1")
    assert code == 2 and err.strip() == "error: unknown CEL engine 'bogus'; choose compiled or interpreted"
    code, out, _ = run(capsys, "eval", "1 + 1", "--cel-engine", "compiled")  # the flag wins
    assert code == 0 and out.strip() == "2"
