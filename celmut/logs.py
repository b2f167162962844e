"""Structured JSON logs: one line per event, never object contents or secrets.

Each line has ``time``, ``level``, ``logger`` and ``msg``, plus the record's ``extra`` fields. An
exception keeps its whole traceback, as one JSON string in ``traceback`` (and its last line in
``error``), so a log collector gets the event in one line and a person gets every frame. uvicorn's
``color_message`` (the message again, with ANSI escapes for its own console) is dropped.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

import orjson

# The attributes every LogRecord has: ``Logger.makeRecord`` raises KeyError for an ``extra`` key among
# them ("Attempt to overwrite 'name' in LogRecord"), so no call may use one (tests/test_logs.py checks
# every logging call in celmut).
RESERVED = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}
_DROPPED = {"color_message"}  # uvicorn's coloured copy of msg (uvicorn/config.py, uvicorn/server.py)


class JsonFormatter(logging.Formatter):
    """One JSON object per record. The webhook logs every admission at INFO (the chart's default
    level), so this is on the hot path: orjson encodes (a sixth of ``json.dumps``' time) and the
    timestamp's seconds are formatted once per second; what orjson refuses (a key that is no string,
    an integer past 64 bits) is encoded by ``json`` instead."""

    def __init__(self) -> None:
        super().__init__()
        self._second: tuple[int, str] = (-1, "")  # the last second formatted, and its text

    def format(self, record: logging.LogRecord) -> str:
        second = int(record.created)
        stamp = self._second
        if stamp[0] != second:  # two threads may both format it: the same text
            stamp = self._second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
        entry: dict[str, Any] = {
            "time": f"{stamp[1]}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in RESERVED and key not in _DROPPED:
                entry[key] = value
        if record.exc_info:
            traceback = self.formatException(record.exc_info)
            entry["error"] = traceback.splitlines()[-1]
            entry["traceback"] = traceback
        elif record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        try:
            return orjson.dumps(entry, default=str).decode()
        except TypeError:
            return json.dumps(entry, default=str)


def configure(level: str = "INFO") -> None:
    """JSON lines on stderr for celmut's loggers (and uvicorn's)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in ("celmut", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level)
        logger.propagate = False
