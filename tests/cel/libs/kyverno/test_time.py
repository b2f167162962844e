"""Kyverno's time library: rows from kyverno/sdk ``extensions/cel/libs/time/lib_test.go``; ``time.now``
reads ``Services.clock``, pinned here."""

from __future__ import annotations

import datetime
from typing import Any

from celmut.cel.lookups import Services
from tests.cel.helpers import Err, cases, check_case

NOW = datetime.datetime(2025, 3, 9, 17, 45, 30, 250000, tzinfo=datetime.UTC)

ROWS = [
    ("time.now()", "2025-03-09T17:45:30.25Z"),
    ('time.now() - duration("3h")', "2025-03-09T14:45:30.25Z"),
    ("type(time.now()) == google.protobuf.Timestamp", True),
    ('time.truncate(timestamp("2025-01-02T03:45:27Z"), duration("1h"))', "2025-01-02T03:00:00Z"),
    ('time.truncate(timestamp("2025-01-02T03:45:27.123Z"), duration("1s"))', "2025-01-02T03:45:27Z"),
    ('time.truncate(timestamp("2025-01-02T03:45:27Z"), duration("24h"))', "2025-01-02T00:00:00Z"),
    # Go truncates since its zero time (year 1), not the Unix epoch: 7h steps land on 22:00 the day before
    ('time.truncate(timestamp("2025-01-02T03:45:27Z"), duration("7h"))', "2025-01-01T22:00:00Z"),
    ('time.truncate(timestamp("2025-01-02T03:45:27Z"), duration("0s"))', "2025-01-02T03:45:27Z"),
    ('time.truncate(timestamp("2025-01-02T03:45:27Z"), duration("-1h"))', "2025-01-02T03:45:27Z"),
    ('time.truncate(time.now(), duration("15m"))', "2025-03-09T17:45:00Z"),
    ('time.toCron(timestamp("2025-01-02T15:30:00Z"))', "30 15 2 1 4"),
    ('time.toCron(timestamp("2025-03-09T00:05:00+02:00"))', "5 22 8 3 6"),  # in UTC; Saturday is 6
    ("time.toCron(time.now())", "45 17 9 3 0"),  # Sunday is 0
    ("time.toCron(1)", Err("compile", "no matching overload")),
    ('time.truncate(time.now(), "1h")', Err("compile", "no matching overload")),
]


@cases(ROWS)
def test_time(expression: str, expected: Any) -> None:
    check_case(expression, expected, services=Services(clock=lambda: NOW))


def test_default_clock_is_utc_now() -> None:
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    check_case(f'time.now() >= timestamp("{before.isoformat().replace("+00:00", "Z")}")', True)


def test_naive_clock_is_taken_as_utc() -> None:
    check_case("time.now()", "2024-01-01T00:00:00Z", services=Services(clock=lambda: datetime.datetime(2024, 1, 1)))


def test_kubernetes_profile_has_no_time_library() -> None:
    check_case("time.now()", Err("compile", "undeclared reference to 'time.now'"), profile="kubernetes")
