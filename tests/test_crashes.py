"""A background thread's death is the process's (issue 38, item 0): recorded, named, fatal."""

from __future__ import annotations

import threading

import pytest

from celmut import crashes


def _die_in_a_thread(error: BaseException, name: str = "celmut-test-worker") -> None:
    def target() -> None:
        raise error

    thread = threading.Thread(target=target, name=name)
    thread.start()
    thread.join(5)


@pytest.fixture(autouse=True)
def _restore_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)


@pytest.mark.parametrize(
    ("error", "death"),
    [
        pytest.param(KeyError("Attempt to overwrite 'name' in LogRecord"), True, id="an exception is a death"),
        pytest.param(SystemExit(1), True, id="sys.exit(1), as uvicorn when it cannot bind, is a death"),
        pytest.param(SystemExit(0), False, id="sys.exit(0) ends the thread as asked"),
        pytest.param(SystemExit(None), False, id="sys.exit() ends the thread as asked"),
    ],
)
def test_a_thread_that_dies_is_named_and_stops_the_process(error: BaseException, death: bool) -> None:
    stopped = threading.Event()
    deaths = crashes.install(on_death=stopped.set)
    assert deaths.failure() == ""
    _die_in_a_thread(error)
    assert stopped.is_set() is death
    if death:
        assert deaths.failure().startswith("background thread celmut-test-worker died: ")
        assert type(error).__name__ in deaths.failure()
    else:
        assert deaths.failure() == ""


def test_the_first_death_is_the_one_reported(caplog: pytest.LogCaptureFixture) -> None:
    deaths = crashes.install()
    _die_in_a_thread(RuntimeError("first"), "one")
    _die_in_a_thread(RuntimeError("second"), "two")
    assert deaths.failure() == "background thread one died: RuntimeError: first"
    logged = [r for r in caplog.records if r.name == "celmut.crashes"]
    assert len(logged) == 2 and all(r.exc_info for r in logged)  # each with its traceback
