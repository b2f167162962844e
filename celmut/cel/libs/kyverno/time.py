"""Kyverno's time library (kyverno/sdk ``extensions/cel/libs/time``).

time.now() -> <timestamp>

    The current time, from ``Services.clock`` (so tests and replays can pin it).

        time.now() - duration("3h") < time.now()

time.toCron(<timestamp>) -> <string>

    A cron schedule firing at that minute: ``"<minute> <hour> <day> <month> <weekday>"`` in UTC,
    with Sunday as weekday 0.

        time.toCron(timestamp("2025-01-02T15:30:00Z")) == "30 15 2 1 4"

time.truncate(<timestamp>, <duration>) -> <timestamp>

    Rounds down to a multiple of the duration since Go's zero time (0001-01-01T00:00:00Z), as Go's
    ``Time.Truncate``; a duration of zero or less returns the timestamp unchanged.

        time.truncate(timestamp("2025-01-02T03:45:27Z"), duration("1h")) == timestamp("2025-01-02T03:00:00Z")
"""

from __future__ import annotations

import datetime
from typing import Any

from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("kyverno.time")
fn = LIBRARY.function

_GO_ZERO_NS = v.Timestamp.from_datetime(datetime.datetime(1, 1, 1, tzinfo=datetime.UTC)).ns


@fn("time.now", (), "timestamp", context=True, pure=False)
def now(ctx: Any) -> v.Timestamp:
    current = ctx.services.clock()
    if not isinstance(current, datetime.datetime):
        raise CelEvaluationError("time.now: the configured clock did not return a datetime")
    return v.Timestamp.from_datetime(current)


@fn("time.toCron", ("timestamp",), "string")
def to_cron(ts: Any) -> str:
    if type(ts) is not v.Timestamp:
        raise no_such_overload("time.toCron", ts)
    utc = ts.to_datetime()
    weekday = (utc.weekday() + 1) % 7  # Go: Sunday is 0
    return f"{utc.minute} {utc.hour} {utc.day} {utc.month} {weekday}"


@fn("time.truncate", ("timestamp", "duration"), "timestamp")
def truncate(ts: Any, step: Any) -> v.Timestamp:
    """Go's ``Time.Truncate``: round down to a multiple of ``step`` since the zero time (year 1)."""
    if type(ts) is not v.Timestamp or type(step) is not v.Duration:
        raise no_such_overload("time.truncate", ts, step)
    if step.ns <= 0:
        return ts
    return v.Timestamp(ts.ns - (ts.ns - _GO_ZERO_NS) % step.ns)
