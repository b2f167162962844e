"""One frozen EngineSettings from the flags to the engine: every setting reaches the engine's
options without a hand-written copy, and the controller's drift engine (``narrowed``) keeps them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from celmut.compile.pipeline import compile_paths
from celmut.runtime.options import AdmissionOptions
from celmut.service.assembly import EngineSettings, assemble_engine, narrowed

EXAMPLES = Path(__file__).resolve().parents[2] / "policies" / "examples"
SETTINGS = EngineSettings(
    timeout_seconds=1.5,
    background_usernames=frozenset({"system:serviceaccount:celmut:celmut"}),
    max_input_bytes=1234,
    max_object_bytes=5678,
    kubernetes_version="1.33",
    opt_out=None,
    record_provenance=True,
    report_unselected=False,
)


def test_every_setting_reaches_the_engine_options() -> None:
    engine = assemble_engine(compile_paths(str(EXAMPLES)), SETTINGS)
    for setting in dataclasses.fields(EngineSettings):
        assert getattr(engine.options, setting.name) == getattr(SETTINGS, setting.name), setting.name
    assert isinstance(engine.options, AdmissionOptions)


def test_settings_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SETTINGS.timeout_seconds = 3.0  # type: ignore[misc]


def test_a_narrowed_engine_keeps_the_options_and_exceptions_over_fewer_policies() -> None:
    engine = assemble_engine(compile_paths(str(EXAMPLES)), SETTINGS)
    few = narrowed(engine, engine.policies[:1])
    assert few.options is engine.options and few.exceptions == engine.exceptions
    assert [p.name for p in few.policies] == [engine.policies[0].name]
