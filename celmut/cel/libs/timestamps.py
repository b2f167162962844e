"""Timestamps and durations: ``timestamp()``, ``duration()`` and their accessor methods.

Timestamps parse strict RFC 3339 (as cel-go does) and must lie in years 0001–9999; durations parse
Go's ``time.ParseDuration`` syntax (``1h30m``, ``-1.5s``, ``300ms``, ``2us``, ``10ns``) within
±290 years. Python's datetime keeps microseconds, so nanosecond digits are truncated.
Accessors take an optional time zone: an IANA name (``America/New_York``) or an offset (``-08:00``);
``getMonth``, ``getDayOfYear`` and ``getDayOfMonth`` are 0-based as in CEL, ``getDate`` is 1-based.
"""

from __future__ import annotations

import datetime
import functools
import re
import zoneinfo
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError, describe

LIBRARY = Library("cel.lib.std.time")
fn, method = LIBRARY.function, LIBRARY.method

_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$")
_MIN_TIMESTAMP = datetime.datetime(1, 1, 1, tzinfo=datetime.UTC)
_MAX_DURATION = datetime.timedelta(microseconds=(2**63 - 1) // 1000)


def check_timestamp(value: datetime.datetime) -> v.TimestampType:
    if not isinstance(value, v.TimestampType):
        value = v.TimestampType(value)
    return value


def check_duration(value: datetime.timedelta) -> v.DurationType:
    if abs(value) > _MAX_DURATION:
        raise CelEvaluationError("duration out of range")
    return value if isinstance(value, v.DurationType) else v.DurationType(value)


def parse_timestamp(text: str) -> v.TimestampType:
    match = _RFC3339.match(text)
    if match is None:
        raise CelEvaluationError(f"invalid timestamp {describe(text)}: want RFC 3339 such as 2024-01-02T15:04:05Z")
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        if zone in ("Z", "z"):
            tz = datetime.UTC
        else:
            sign = -1 if zone[0] == "-" else 1
            offset = datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
            tz = datetime.timezone(sign * offset)
        micros = int((fraction or "0").ljust(6, "0")[:6])
        parsed = datetime.datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micros, tzinfo=tz
        )
        return v.TimestampType(parsed.astimezone(datetime.UTC))
    except (ValueError, OverflowError) as ex:
        raise CelEvaluationError(f"invalid timestamp {describe(text)}: {ex}") from None


_DURATION_UNITS = {
    "ns": Decimal("0.001"),
    "us": Decimal(1),
    "µs": Decimal(1),  # U+00B5 micro sign
    "μs": Decimal(1),  # U+03BC Greek mu
    "ms": Decimal(1000),
    "s": Decimal(1_000_000),
    "m": Decimal(60_000_000),
    "h": Decimal(3_600_000_000),
}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> v.DurationType:
    body = text
    sign = 1
    if body[:1] in "+-":
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return v.DurationType(datetime.timedelta(0))
    micros = Decimal(0)
    position = 0
    for part in _DURATION_PART.finditer(body):
        if part.start() != position:
            break
        micros += Decimal(part.group(1)) * _DURATION_UNITS[part.group(2)]
        position = part.end()
    if not body or position != len(body):
        raise CelEvaluationError(f"invalid duration {describe(text)}: want Go syntax such as 1h30m or 1.5s")
    return check_duration(datetime.timedelta(microseconds=int(sign * micros)))


@fn("timestamp", ("string",), "timestamp")
@fn("timestamp", ("timestamp",), "timestamp")
@fn("timestamp", ("int",), "timestamp")
def to_timestamp(value: Any) -> v.TimestampType:
    if isinstance(value, v.TimestampType):
        return value
    if isinstance(value, str):
        return parse_timestamp(value)
    if type(value) is int:
        try:
            stamp = datetime.datetime.fromtimestamp(value, tz=datetime.UTC)
        except (ValueError, OverflowError, OSError):
            raise CelEvaluationError("timestamp out of range") from None
        return v.TimestampType(stamp)
    raise CelEvaluationError(f"type conversion error from '{v.type_name(value)}' to 'timestamp'")


@fn("duration", ("string",), "duration")
@fn("duration", ("duration",), "duration")
def to_duration(value: Any) -> v.DurationType:
    if isinstance(value, v.DurationType):
        return value
    if isinstance(value, str):
        return parse_duration(value)
    raise CelEvaluationError(f"type conversion error from '{v.type_name(value)}' to 'duration'")


@functools.lru_cache(maxsize=128)
def _zone(name: str) -> datetime.tzinfo:
    offset = re.fullmatch(r"([+-]?)(\d{1,2}):(\d{2})", name)
    if offset:
        sign = -1 if offset.group(1) == "-" else 1
        return datetime.timezone(sign * datetime.timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3))))
    if name.upper() == "UTC":
        return datetime.UTC
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise CelEvaluationError(f"unknown time zone {name!r}") from None


def _in_zone(stamp: datetime.datetime, zone: str | None) -> datetime.datetime:
    return stamp.astimezone(_zone(zone) if zone else datetime.UTC)


_TIMESTAMP_ACCESSORS: dict[str, Callable[[datetime.datetime], int]] = {
    "getFullYear": lambda d: d.year,
    "getMonth": lambda d: d.month - 1,
    "getDate": lambda d: d.day,
    "getDayOfMonth": lambda d: d.day - 1,
    "getDayOfWeek": lambda d: d.isoweekday() % 7,
    "getDayOfYear": lambda d: d.timetuple().tm_yday - 1,
    "getHours": lambda d: d.hour,
    "getMinutes": lambda d: d.minute,
    "getSeconds": lambda d: d.second,
    "getMilliseconds": lambda d: d.microsecond // 1000,
}

_DURATION_ACCESSORS = {
    "getHours": 3_600_000_000,
    "getMinutes": 60_000_000,
    "getSeconds": 1_000_000,
    "getMilliseconds": 1_000,
}


def _timestamp_accessor(name: str) -> Any:
    extract = _TIMESTAMP_ACCESSORS[name]

    def accessor(stamp: datetime.datetime, zone: str | None = None) -> int:
        return int(extract(_in_zone(stamp, zone)))

    return accessor


def _duration_accessor(unit: int) -> Any:
    def accessor(duration: datetime.timedelta) -> int:
        micros = duration // datetime.timedelta(microseconds=1)
        whole = abs(micros) // unit
        return -whole if micros < 0 else whole

    return accessor


for _name in _TIMESTAMP_ACCESSORS:
    _impl = _timestamp_accessor(_name)
    method(_name, "timestamp", (), "int")(_impl)
    method(_name, "timestamp", ("string",), "int")(_impl)
for _name, _unit in _DURATION_ACCESSORS.items():
    method(_name, "duration", (), "int")(_duration_accessor(_unit))
