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

# The attributes every LogRecord has: ``Logger.makeRecord`` raises KeyError for an ``extra`` key among
# them ("Attempt to overwrite 'name' in LogRecord"), so no call may use one (tests/test_logs.py checks
# every logging call in celmut).
RESERVED = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}
_DROPPED = {"color_message"}  # uvicorn's coloured copy of msg (uvicorn/config.py, uvicorn/server.py)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update({k: v for k, v in record.__dict__.items() if k not in RESERVED and k not in _DROPPED})
        if record.exc_info:
            traceback = self.formatException(record.exc_info)
            entry["error"] = traceback.splitlines()[-1]
            entry["traceback"] = traceback
        elif record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
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
