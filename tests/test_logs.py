"""JSON logs (issue 15, item 9): one line per event, no ANSI from uvicorn, the whole traceback of an
exception, and how many policies were loaded from where."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from celmut.logs import JsonFormatter
from celmut.service.assembly import EngineSettings
from celmut.service.store import PolicyStore
from celmut.sources.files import FileSource

ROOT = Path(__file__).resolve().parents[1]


def record(msg: str, **extra: object) -> logging.LogRecord:
    entry = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, msg, (), None)
    entry.__dict__.update(extra)
    return entry


def test_uvicorns_color_message_is_not_logged() -> None:
    """uvicorn/config.py logs 'Uvicorn running on …' with extra={"color_message": <ANSI>}."""
    line = JsonFormatter().format(record("Uvicorn running", color_message="\x1b[1mUvicorn running\x1b[0m", port=1))
    entry = json.loads(line)
    assert "color_message" not in entry and "\x1b" not in line and entry["port"] == 1


def _raise_nested() -> None:
    def inner() -> None:
        raise ValueError("the innermost problem")

    try:
        inner()
    except ValueError as ex:
        raise RuntimeError("reload failed") from ex


def test_an_exception_keeps_its_whole_traceback_in_one_line() -> None:
    try:
        _raise_nested()
    except RuntimeError:
        entry = logging.LogRecord("celmut.test", logging.ERROR, __file__, 1, "policy reload failed", (), sys.exc_info())
    line = JsonFormatter().format(entry)
    parsed = json.loads(line)
    assert "\n" not in line
    assert parsed["error"] == "RuntimeError: reload failed"
    assert "Traceback (most recent call last)" in parsed["traceback"]
    assert "in inner" in parsed["traceback"] and "ValueError: the innermost problem" in parsed["traceback"]


def test_a_reload_logs_how_many_policies_came_from_where(caplog: pytest.LogCaptureFixture) -> None:
    store = PolicyStore([FileSource([str(ROOT / "policies/examples")])], EngineSettings())
    with caplog.at_level(logging.INFO, logger="celmut.server"):
        store.reload(force=True)
    (loaded,) = [r for r in caplog.records if r.getMessage() == "policies loaded"]
    entry = json.loads(JsonFormatter().format(loaded))
    assert entry["documents"] == {f"files: {ROOT / 'policies/examples'}": 2}
    # add-team-label, default-security-context and its two autogen variants (defaults, cronjobs)
    assert entry["policies"] == 4 and entry["rejected"] == 0
