"""Timestamps and durations: ``timestamp()``, ``duration()`` and their accessor methods.

Timestamps parse strict RFC 3339 (as cel-go does) and must lie in years 0001–9999; durations parse
Go's ``time.ParseDuration`` syntax (``1h30m``, ``-1.5s``, ``300ms``, ``2us``, ``10ns``) within
±290 years (an int64 of nanoseconds). Both are exact to the nanosecond, as in cel-go
(:class:`~celmut.cel.values.Timestamp`, :class:`~celmut.cel.values.Duration`): digits beyond the
nanosecond are truncated, as Go's parsers do.
Accessors take an optional time zone: an IANA name (``America/New_York``) or an offset (``-08:00``);
``getMonth``, ``getDayOfYear`` and ``getDayOfMonth`` are 0-based as in CEL, ``getDate`` is 1-based.
"""

from __future__ import annotations

import datetime
import functools
import re
import zoneinfo
from collections.abc import Callable
from typing import Any

from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError, describe

LIBRARY: Library = Library("cel.lib.std.time")
fn, method = LIBRARY.function, LIBRARY.method

# A year of five or more digits parses so that it is refused as out of range, as cel-spec wants
# (timestamps.textproto timestamp_range/from_string_over: "range").
_RFC3339 = re.compile(r"^(\d{4,})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$")
_NANOS = v.NANOS_PER_SECOND
# cel-go's valid range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z
_MIN_TIMESTAMP_NS = -62_135_596_800 * _NANOS
_MAX_TIMESTAMP_NS = 253_402_300_800 * _NANOS - 1
_MAX_DURATION_NS = 2**63 - 1


def check_timestamp(ns: int) -> v.Timestamp:
    if not _MIN_TIMESTAMP_NS <= ns <= _MAX_TIMESTAMP_NS:
        raise CelEvaluationError("timestamp out of range")
    return v.Timestamp(ns)


def check_duration(ns: int) -> v.Duration:
    if not -_MAX_DURATION_NS <= ns <= _MAX_DURATION_NS:
        raise CelEvaluationError("duration out of range")
    return v.Duration(ns)


def parse_timestamp(text: str) -> v.Timestamp:
    match = _RFC3339.match(text)
    if match is None:
        raise CelEvaluationError(f"invalid timestamp {describe(text)}: want RFC 3339 such as 2024-01-02T15:04:05Z")
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    if len(year) > 4:
        raise CelEvaluationError(f"invalid timestamp {describe(text)}: year {year} is out of range")
    try:
        offset = 0
        if zone not in ("Z", "z"):
            hours, minutes = int(zone[1:3]), int(zone[4:6])
            if hours > 23 or minutes > 59:
                raise ValueError("time zone offset out of range")
            offset = (-1 if zone[0] == "-" else 1) * (hours * 3600 + minutes * 60)
        wall = datetime.datetime(int(year), int(month), int(day), int(hour), int(minute), int(second))
    except (ValueError, OverflowError) as ex:
        raise CelEvaluationError(f"invalid timestamp {describe(text)}: {ex}") from None
    delta = wall - datetime.datetime(1970, 1, 1)
    seconds = delta.days * 86_400 + delta.seconds - offset
    nanos = int((fraction or "0").ljust(9, "0"))
    return check_timestamp(seconds * _NANOS + nanos)


_DURATION_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": _NANOS,
    "m": 60 * _NANOS,
    "h": 3600 * _NANOS,
}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> v.Duration:
    """Go's ``time.ParseDuration``: each part's fraction is exact to the nanosecond, digits beyond
    it are dropped (``1.0000000019s`` is ``1.000000001s``)."""
    body = text
    sign = 1
    if body[:1] in "+-":
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return v.Duration(0)
    total = 0
    position = 0
    for part in _DURATION_PART.finditer(body):
        if part.start() != position:
            break
        number, unit = part.group(1), _DURATION_UNITS[part.group(2)]
        whole, _, fraction = number.partition(".")
        total += int(whole or "0") * unit
        if fraction:
            total += int(fraction) * unit // 10 ** len(fraction)
        position = part.end()
    if not body or position != len(body):
        raise CelEvaluationError(f"invalid duration {describe(text)}: want Go syntax such as 1h30m or 1.5s")
    return check_duration(sign * total)


@fn("timestamp", ("string",), "timestamp")
@fn("timestamp", ("timestamp",), "timestamp")
@fn("timestamp", ("int",), "timestamp")
def to_timestamp(value: Any) -> v.Timestamp:
    if type(value) is v.Timestamp:
        return value
    if isinstance(value, str):
        return parse_timestamp(value)
    if type(value) is int:
        return check_timestamp(value * _NANOS)
    raise CelEvaluationError(f"type conversion error from '{v.type_name(value)}' to 'timestamp'")


@fn("duration", ("string",), "duration")
@fn("duration", ("duration",), "duration")
def to_duration(value: Any) -> v.Duration:
    if type(value) is v.Duration:
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


def _in_zone(stamp: v.Timestamp, zone: str | None) -> datetime.datetime:
    try:
        return stamp.to_datetime(_zone(zone) if zone else datetime.UTC)
    except OverflowError:
        raise CelEvaluationError("timestamp out of range") from None


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
}

_DURATION_ACCESSORS = {
    "getHours": 3600 * _NANOS,
    "getMinutes": 60 * _NANOS,
    "getSeconds": _NANOS,
    "getMilliseconds": 1_000_000,
}


def _timestamp_accessor(name: str) -> Any:
    extract = _TIMESTAMP_ACCESSORS[name]

    def accessor(stamp: v.Timestamp, zone: str | None = None) -> int:
        return int(extract(_in_zone(stamp, zone)))

    return accessor


def _milliseconds(stamp: v.Timestamp, zone: str | None = None) -> int:
    if zone:
        _zone(zone)  # an unknown zone is an error even though offsets are whole seconds
    return stamp.nanos // 1_000_000


def _duration_accessor(unit: int) -> Any:
    def accessor(duration: v.Duration) -> int:
        whole = abs(duration.ns) // unit
        return -whole if duration.ns < 0 else whole

    return accessor


for _name in _TIMESTAMP_ACCESSORS:
    _impl = _timestamp_accessor(_name)
    method(_name, "timestamp", (), "int")(_impl)
    method(_name, "timestamp", ("string",), "int")(_impl)
method("getMilliseconds", "timestamp", (), "int")(_milliseconds)
method("getMilliseconds", "timestamp", ("string",), "int")(_milliseconds)
for _name, _unit in _DURATION_ACCESSORS.items():
    method(_name, "duration", (), "int")(_duration_accessor(_unit))
