"""CEL ``timestamp`` and ``duration`` values, exact to the nanosecond as cel-go's Go ``time.Time``
and ``time.Duration`` are (a Python ``datetime``/``timedelta`` stops at microseconds).

The library functions live in :mod:`celmut.cel.libs.timestamps`; :mod:`celmut.cel.values` re-exports
these types with the rest of the value model.
"""

from __future__ import annotations

import datetime

NANOS_PER_SECOND = 1_000_000_000
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


class Timestamp:
    """CEL ``timestamp``: nanoseconds since the Unix epoch (UTC). cel-go keeps a Go ``time.Time``,
    exact to the nanosecond; a Python ``datetime`` would stop at microseconds."""

    __slots__ = ("ns",)

    def __init__(self, ns: int) -> None:
        self.ns = ns

    @classmethod
    def from_datetime(cls, value: datetime.datetime) -> Timestamp:
        """A ``datetime`` (naive means UTC) as a timestamp."""
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return cls(_timedelta_ns(value - _EPOCH))

    @property
    def seconds(self) -> int:
        """Whole seconds since the epoch (floor, as Go's ``Unix()``)."""
        return self.ns // NANOS_PER_SECOND

    @property
    def nanos(self) -> int:
        """Nanoseconds within the second, 0–999,999,999."""
        return self.ns % NANOS_PER_SECOND

    def to_datetime(self, zone: datetime.tzinfo = datetime.UTC) -> datetime.datetime:
        """The ``datetime`` in ``zone`` (sub-microsecond digits dropped)."""
        return (_EPOCH + datetime.timedelta(microseconds=self.ns // 1000)).astimezone(zone)

    def __eq__(self, other: object) -> bool:
        return other.ns == self.ns if type(other) is Timestamp else NotImplemented

    def __lt__(self, other: Timestamp) -> bool:
        return self.ns < other.ns

    def __gt__(self, other: Timestamp) -> bool:
        return self.ns > other.ns

    def __hash__(self) -> int:
        return hash(("timestamp", self.ns))

    def __repr__(self) -> str:
        return f"timestamp({format_timestamp(self)!r})"


class Duration:
    """CEL ``duration``: nanoseconds, as Go's ``time.Duration``."""

    __slots__ = ("ns",)

    def __init__(self, ns: int) -> None:
        self.ns = ns

    @classmethod
    def from_timedelta(cls, value: datetime.timedelta) -> Duration:
        return cls(_timedelta_ns(value))

    def to_timedelta(self) -> datetime.timedelta:
        """The ``timedelta`` (sub-microsecond digits dropped, toward zero)."""
        micros = abs(self.ns) // 1000
        return datetime.timedelta(microseconds=-micros if self.ns < 0 else micros)

    def __eq__(self, other: object) -> bool:
        return other.ns == self.ns if type(other) is Duration else NotImplemented

    def __lt__(self, other: Duration) -> bool:
        return self.ns < other.ns

    def __gt__(self, other: Duration) -> bool:
        return self.ns > other.ns

    def __hash__(self) -> int:
        return hash(("duration", self.ns))

    def __repr__(self) -> str:
        return f"duration({format_duration(self)!r})"


def _timedelta_ns(delta: datetime.timedelta) -> int:
    return ((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds) * 1000


def format_timestamp(value: Timestamp) -> str:
    """RFC 3339 in UTC with trailing zeros of the fraction removed, as cel-go prints timestamps
    (Go's ``time.RFC3339Nano``)."""
    utc = value.to_datetime()
    text = f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
    if value.nanos:
        text += "." + f"{value.nanos:09d}".rstrip("0")
    return text + "Z"


def format_duration(value: Duration) -> str:
    """protobuf JSON form: seconds with up to 9 fractional digits, e.g. ``1.5s``, ``-90s``,
    ``1.000000001s``."""
    sign = "-" if value.ns < 0 else ""
    seconds, fraction = divmod(abs(value.ns), NANOS_PER_SECOND)
    if fraction:
        return f"{sign}{seconds}.{f'{fraction:09d}'.rstrip('0')}s"
    return f"{sign}{seconds}s"
