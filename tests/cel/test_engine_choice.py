"""Choosing the CEL engine in the Python API: ``backend="compiled" | "interpreted"`` on
:class:`celmut.cel.Environment`, :func:`celmut.load` and :func:`celmut.eval`, else
``CELMUT_CEL_ENGINE``, else ``compiled``; a former name runs the engine it maps to and logs its
deprecation warning once per process; an unknown name is a :class:`ConfigurationError`."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

import celmut
from celmut import cel
from celmut.cel.backends import select
from celmut.cel.backends.runners import CompiledRunner, PlannedRunner
from celmut.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[2]
FORMER = {"auto": "compiled", "celpy": "compiled", "planner": "interpreted", "cpp": "compiled"}


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No CELMUT_CEL_ENGINE from the shell, and every deprecation not yet warned about."""
    monkeypatch.delenv(select.ENV_VAR, raising=False)
    select.warn_once.cache_clear()
    yield
    select.warn_once.cache_clear()


def deprecations(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == select.__name__ and r.levelno == logging.WARNING]


def test_the_default_is_the_compiled_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cel.Environment("kyverno").backend.name == "compiled"
    assert isinstance(cel.Environment("kyverno").compile("1 + 1"), CompiledRunner)
    monkeypatch.setenv(select.ENV_VAR, "interpreted")
    program = cel.Environment("kyverno").compile("1 + 2")
    assert type(program) is PlannedRunner and program.evaluate(cel.Activation()) == 3
    assert cel.Environment("kyverno", backend="compiled").backend.name == "compiled"  # the argument wins


@pytest.mark.parametrize("former", sorted(FORMER))
def test_a_former_name_runs_its_engine_and_warns_once(former: str, caplog: pytest.LogCaptureFixture) -> None:
    for _ in range(3):  # a policy set creates many environments: one warning
        assert cel.Environment("kyverno", backend=former).backend.name == FORMER[former]
    (message,) = deprecations(caplog)
    assert message.startswith(f"CEL engine '{former}' ") and f"'{FORMER[former]}'" in message


def test_a_former_name_in_the_environment_variable(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(select.ENV_VAR, "planner")
    assert select.resolve() == "interpreted" and cel.Environment("kubernetes").backend.name == "interpreted"
    assert deprecations(caplog) == ["CEL engine 'planner' is deprecated: it is now called 'interpreted'"]


def test_the_python_api_takes_the_names(caplog: pytest.LogCaptureFixture) -> None:
    assert celmut.eval("variables.n * 2", backend="interpreted", variables={"n": 21}) == 42
    assert celmut.eval("variables.n * 3", backend="celpy", variables={"n": 14}) == 42
    assert deprecations(caplog) == ["CEL engine 'celpy' is deprecated: it is now called 'compiled'"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "shop"}, "spec": {}}
    results = [
        celmut.load(ROOT / "policies/examples", backend=engine).apply(pod).patch
        for engine in ("compiled", "interpreted", "planner")
    ]
    assert results[0] and results[0] == results[1] == results[2]


def test_an_unknown_name_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unknown CEL engine 'fast'; choose compiled or interpreted"):
        cel.Environment("kyverno", backend="fast")
