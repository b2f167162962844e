"""JSON logs (issue 15, item 9): one line per event, no ANSI from uvicorn, the whole traceback of an
exception, and how many policies were loaded from where."""

from __future__ import annotations

import ast
import json
import logging
import sys
from pathlib import Path

import pytest

from celmut.logs import RESERVED, JsonFormatter
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


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(["a", "b"], ["a", "b"], id="a list (orjson)"),
        pytest.param("ünïcödé/漢", "ünïcödé/漢", id="non-ASCII text, as UTF-8"),
        pytest.param(2**70, 2**70, id="an integer past 64 bits (json's fallback)"),
        pytest.param({1: "x"}, {"1": "x"}, id="a key that is no string (json's fallback)"),
        pytest.param({"b"}, "{'b'}", id="a value JSON has no type for: its str()"),
    ],
)
def test_every_extra_value_makes_one_json_line(value: object, expected: object) -> None:
    line = JsonFormatter().format(record("admission", field=value))
    assert "\n" not in line and json.loads(line)["field"] == expected


def test_the_timestamp_follows_each_records_second() -> None:
    """The seconds' text is formatted once per second and reused: a record of another second gets its own."""
    formatter, first, later = JsonFormatter(), record("a"), record("b")
    first.created, first.msecs = 1_700_000_000.25, 250.0
    later.created, later.msecs = 1_700_000_001.5, 500.0
    stamps = [json.loads(formatter.format(r))["time"] for r in (first, first, later, first)]
    assert stamps == [
        "2023-11-14T22:13:20.250Z",
        "2023-11-14T22:13:20.250Z",
        "2023-11-14T22:13:21.500Z",
        "2023-11-14T22:13:20.250Z",
    ]


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


LOGGING_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}


def _extra_arguments() -> list[tuple[str, int, ast.expr]]:
    """Every ``extra=`` of a logging call in celmut: (file, line, the expression)."""
    found = []
    for path in sorted((ROOT / "celmut").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LOGGING_METHODS:
                found += [(str(path.relative_to(ROOT)), node.lineno, k.value) for k in node.keywords if k.arg == "extra"]
    return found


def test_no_logging_call_passes_an_extra_key_a_log_record_already_has() -> None:
    """``Logger.makeRecord`` raises KeyError ("Attempt to overwrite 'name' in LogRecord") for such a key,
    only when the level is enabled: the TLS manager's thread died on ``extra={"name": …}`` at INFO and a
    default install never got its serving Secret (issue 38). Keys must be literal to be checked here."""
    extras = _extra_arguments()
    assert len(extras) > 50  # the scan sees celmut's logging calls
    problems = []
    for where, line, value in extras:
        if not isinstance(value, ast.Dict) or not all(isinstance(k, ast.Constant) for k in value.keys):
            problems.append(f"{where}:{line}: extra is not a dict literal with literal keys")
            continue
        problems += [
            f"{where}:{line}: extra key {k.value!r} is a LogRecord attribute"
            for k in value.keys
            if isinstance(k, ast.Constant) and k.value in RESERVED
        ]
    assert problems == []


@pytest.mark.parametrize("key", sorted(RESERVED))
def test_the_reserved_keys_are_the_ones_logging_refuses(key: str) -> None:
    """The list the scan checks against is logging's own: each of its keys is refused at run time."""
    logger = logging.getLogger("celmut.test.reserved")
    with pytest.raises(KeyError, match="Attempt to overwrite"):
        logger.makeRecord(logger.name, logging.INFO, __file__, 1, "m", (), None, extra={key: 1})
