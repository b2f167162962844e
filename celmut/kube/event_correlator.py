"""client-go's EventCorrelator (``k8s.io/client-go/tools/record/events_cache.go``): what keeps a recorder
that posts an Event per object bounded, before anything reaches the API server. Pure: no I/O.

For each Event it is given (a core/v1 Event body), in client-go's order:

* **aggregation** (``EventAggregator``): Events that differ only in their message — same source,
  involved object, type, reason, reporting controller and instance — are counted per message; from the
  10th distinct message within 10 minutes (``defaultAggregateMaxEvents``, ``defaultAggregateIntervalInSeconds``)
  they become one Event whose message is the latest prefixed ``(combined from similar events): ``;
* **de-duplication** (``eventLogger``): an Event seen before (the same key, message included) is not
  created again: the stored one is patched with ``count`` + 1, ``lastTimestamp`` and ``message``;
* **spam filter** (``EventSourceObjectSpamFilter``): each source may post 25 Events about one object at
  once, then one every 5 minutes (a token bucket per source and object, ``defaultSpamBurst``,
  ``defaultSpamQPS``); the rest are skipped — their occurrences still counted, so the next write that
  passes carries the full ``count``.

Each cache holds the 4,096 most recent keys (``maxLruCacheEntries``), as client-go's LRUs do.
"""

from __future__ import annotations

import datetime
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

MAX_ENTRIES = 4096  # maxLruCacheEntries
AGGREGATE_MAX_EVENTS = 10  # defaultAggregateMaxEvents
AGGREGATE_INTERVAL = 600.0  # defaultAggregateIntervalInSeconds
SPAM_BURST = 25  # defaultSpamBurst
SPAM_QPS = 1.0 / 300.0  # defaultSpamQPS
AGGREGATE_PREFIX = "(combined from similar events): "  # EventAggregatorByReasonMessageFunc

Event = dict[str, Any]
K = TypeVar("K")
V = TypeVar("V")


class _Lru(Generic[K, V]):
    """groupcache's lru.Cache: the least recently used entry goes past ``size``."""

    def __init__(self, size: int = MAX_ENTRIES) -> None:
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def add(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)


def _source(event: Event) -> tuple[str, str]:
    source = event.get("source") or {}
    return str(source.get("component") or ""), str(source.get("host") or "")


def _object(event: Event) -> tuple[str, ...]:
    ref = event.get("involvedObject") or {}
    return tuple(str(ref.get(k) or "") for k in ("kind", "namespace", "name", "uid", "apiVersion"))


def spam_key(event: Event) -> tuple[str, ...]:
    """``getSpamKey``: source and involved object."""
    return (*_source(event), *_object(event))


def aggregate_key(event: Event) -> tuple[str, ...]:
    """``EventAggregatorByReasonFunc``'s aggregate key: all but the message."""
    rest = (event.get("type"), event.get("reason"), event.get("reportingComponent"), event.get("reportingInstance"))
    return (*_source(event), *_object(event), *(str(v or "") for v in rest))


def event_key(event: Event) -> tuple[str, ...]:
    """``getEventKey``: source, involved object (with its fieldPath), type, reason and message."""
    field_path = str((event.get("involvedObject") or {}).get("fieldPath") or "")
    rest = (event.get("type"), event.get("reason"), event.get("message"))
    return (*_source(event), *_object(event), field_path, *(str(v or "") for v in rest))


class _TokenBucket:
    """flowcontrol's token bucket: ``burst`` tokens, refilled at ``qps``; TryAccept takes one if there is one."""

    def __init__(self, qps: float, burst: int, now: float) -> None:
        self.qps, self.burst, self.tokens, self.at = qps, burst, float(burst), now

    def try_accept(self, now: float) -> bool:
        self.tokens = min(float(self.burst), self.tokens + (now - self.at) * self.qps)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass
class _Aggregate:
    messages: set[str]
    last: float


@dataclass(frozen=True)
class _Observation:
    count: int
    first: str
    name: str


@dataclass(frozen=True)
class Correlated:
    """What to do with an Event: create ``event`` (``patch`` is None), patch the stored one with ``patch``,
    or nothing (``skip``: the spam filter held it back)."""

    event: Event
    patch: dict[str, Any] | None = None
    skip: bool = False


class EventCorrelator:
    """``EventCorrelate`` and ``UpdateState`` of client-go, thread-safe; ``clock`` gives seconds
    (monotonic for the windows), ``stamp`` the Events' timestamps."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        stamp: Callable[[], str] | None = None,
        max_entries: int = MAX_ENTRIES,
    ) -> None:
        self.clock = clock
        self.stamp = stamp or _timestamp
        self._spam: _Lru[tuple[str, ...], _TokenBucket] = _Lru(max_entries)
        self._aggregates: _Lru[tuple[str, ...], _Aggregate] = _Lru(max_entries)
        self._observed: _Lru[tuple[str, ...], _Observation] = _Lru(max_entries)
        self._lock = threading.Lock()

    def correlate(self, event: Event) -> Correlated:
        """Aggregate, de-duplicate and filter one new Event (``EventCorrelate``)."""
        with self._lock:
            event, key = self._aggregate(event)
            event, patch = self._observe(event, key)
            if not self._accept(event):
                return Correlated(event, skip=True)
            return Correlated(event, patch)

    def update_state(self, event: Event) -> None:
        """What the API server stored (``UpdateState``): later occurrences patch that Event."""
        with self._lock:
            self._remember(event_key(event), event)

    def _aggregate(self, event: Event) -> tuple[Event, tuple[str, ...]]:
        now = self.clock()
        group = aggregate_key(event)
        record = self._aggregates.get(group)
        if record is None or now - record.last > AGGREGATE_INTERVAL:
            record = _Aggregate(set(), now)
        record.messages.add(str(event.get("message") or ""))
        record.last = now
        self._aggregates.add(group, record)
        if len(record.messages) < AGGREGATE_MAX_EVENTS:
            return event, event_key(event)
        record.messages.pop()  # do not grow the set past the threshold (PopAny)
        stamp = self.stamp()
        name = str((event.get("involvedObject") or {}).get("name") or "object")
        combined = {
            **event,
            "metadata": {"name": f"{name}.{uuid.uuid4().hex[:16]}", "namespace": event["metadata"]["namespace"]},
            "message": AGGREGATE_PREFIX + str(event.get("message") or ""),
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
        }
        return combined, ("aggregate", *group)

    def _observe(self, event: Event, key: tuple[str, ...]) -> tuple[Event, dict[str, Any] | None]:
        seen = self._observed.get(key)
        patch = None
        if seen is not None and seen.count > 0:
            event = {
                **event,
                "metadata": {**event["metadata"], "name": seen.name},
                "firstTimestamp": seen.first,
                "count": seen.count + 1,
            }
            patch = {k: event[k] for k in ("count", "lastTimestamp", "message")}
        self._remember(key, event)
        return event, patch

    def _remember(self, key: tuple[str, ...], event: Event) -> None:
        self._observed.add(
            key,
            _Observation(
                int(event.get("count") or 1), str(event.get("firstTimestamp") or ""), event["metadata"]["name"]
            ),
        )

    def _accept(self, event: Event) -> bool:
        now = self.clock()
        key = spam_key(event)
        bucket = self._spam.get(key) or _TokenBucket(SPAM_QPS, SPAM_BURST, now)
        accepted = bucket.try_accept(now)
        self._spam.add(key, bucket)
        return accepted


def _timestamp() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
