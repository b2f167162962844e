"""Shared pytest configuration: the fake Kubernetes API server fixtures (tests/fakekube), and logging
left as each test found it (commands run in-process configure celmut's JSON logging)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import celmut
from celmut.native import COMPILED_MODULES, current_build

pytest_plugins = ["tests.fakekube.fixtures"]

_LOGGERS = ("celmut", "uvicorn", "uvicorn.error")
CHECKOUT = Path(__file__).resolve().parents[1]


def pytest_report_header() -> str:
    return f"celmut build: {current_build().describe()}, from {Path(celmut.__file__).parent}"


def pytest_sessionstart(session: pytest.Session) -> None:
    """``CELMUT_EXPECT_BUILD=compiled`` (``make test-compiled``): stop unless the installed compiled build
    is what the tests import: not the checkout's sources, every compiled module loaded as compiled."""
    expected = os.environ.get("CELMUT_EXPECT_BUILD")
    if not expected:
        return
    for name in COMPILED_MODULES:
        __import__(name)
    build = current_build()
    if build.kind != expected or (expected == "compiled" and len(build.compiled_modules) != len(COMPILED_MODULES)):
        raise pytest.UsageError(f"the tests expect the {expected} build but run {build.describe()}")
    if Path(celmut.__file__).resolve().parent == CHECKOUT / "celmut":
        raise pytest.UsageError(f"the tests expect the installed {expected} build but import the checkout's celmut")


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    saved = [
        (logger, list(logger.handlers), logger.level, logger.propagate) for logger in map(logging.getLogger, _LOGGERS)
    ]
    yield
    for logger, handlers, level, propagate in saved:
        logger.handlers, logger.level, logger.propagate = handlers, level, propagate
