"""Shared pytest configuration: the fake Kubernetes API server fixtures (tests/fakekube), and logging
left as each test found it (commands run in-process configure celmut's JSON logging)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

pytest_plugins = ["tests.fakekube.fixtures"]

_LOGGERS = ("celmut", "uvicorn", "uvicorn.error")


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    saved = [
        (logger, list(logger.handlers), logger.level, logger.propagate) for logger in map(logging.getLogger, _LOGGERS)
    ]
    yield
    for logger, handlers, level, propagate in saved:
        logger.handlers, logger.level, logger.propagate = handlers, level, propagate
