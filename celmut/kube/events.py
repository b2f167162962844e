"""Kubernetes Events about objects celmut read or changed (core/v1, as kubectl describe shows them): one
at a time (:func:`post_event`), or folded per object and reason with a count (:class:`EventAggregator`)."""

from __future__ import annotations

import dataclasses
import datetime
import logging
import socket
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from celmut.kube.client import MERGE_PATCH, Cluster, ClusterError, NotFound

log = logging.getLogger("celmut.kube")

MAX_MESSAGE = 1024  # the API server's limit on an Event message


def event_for(
    obj: Mapping[str, Any],
    *,
    reason: str,
    message: str,
    component: str,
    warning: bool = False,
    name: str = "",
    action: str = "",
    related: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An Event about ``obj``; cluster-scoped objects get theirs in ``default``, as Kubernetes does.
    ``component`` reports it, from this host (``reportingInstance``, as Kyverno's events say);
    ``action`` and ``related`` as Kyverno sets them.

    ``name``: a fixed Event name (a second create of it is refused with AlreadyExists: one Event however
    many processes report the same thing); default a unique one."""
    meta = obj.get("metadata") or {}
    now = _timestamp()
    event: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": name or f"{meta.get('name') or 'object'}.{uuid.uuid4().hex[:16]}",
            "namespace": meta.get("namespace") or "default",
        },
        "involvedObject": {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "name": meta.get("name"),
            "namespace": meta.get("namespace") or "",
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "type": "Warning" if warning else "Normal",
        "reason": reason,
        "message": message[:MAX_MESSAGE],
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": instance_of(component),
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    if action:
        event["action"] = action
    if related is not None:
        event["related"] = dict(related)
    return event


def instance_of(component: str) -> str:
    """Kyverno's reportingInstance: the component and the host it runs on (the API server's limit: 128)."""
    return f"{component}-{socket.gethostname()}"[:128]


def post_event(cluster: Cluster, obj: dict[str, Any], **details: Any) -> None:
    """Record an Event about ``obj`` (see :func:`event_for`); raises ClusterError on failure."""
    event = event_for(obj, **details)
    cluster.create("v1", "events", event["metadata"]["namespace"], event)


# client-go tools/record/events_cache.go: EventAggregatorByReasonMessageFunc's prefix, and
# defaultAggregateIntervalInSeconds (a similar event after this long starts a new Event)
AGGREGATE_PREFIX = "(combined from similar events): "
AGGREGATE_INTERVAL = 600.0
MAX_AGGREGATES = 4096  # client-go's maxLruCacheEntries


def reference(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An ObjectReference to ``obj`` (an Event's involvedObject or related)."""
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "name": meta.get("name"),
        "namespace": meta.get("namespace") or "",
        "uid": meta.get("uid"),
        "resourceVersion": meta.get("resourceVersion"),
    }
    return {k: v for k, v in ref.items() if v is not None}


@dataclass
class _Aggregate:
    """One folded Event: what it says, how often it happened, and what the API server holds of it."""

    regarding: dict[str, Any]
    reason: str
    warning: bool
    action: str = ""
    message: str = ""
    related: dict[str, Any] | None = None
    count: int = 0  # occurrences since the Event was created
    written: int = 0  # the count the stored Event says (0: not created yet)
    name: str = ""
    first: str = ""
    last: str = ""
    seen: float = 0.0  # monotonic time of the last occurrence
    wrote: float = 0.0  # monotonic time of the last write

    @property
    def dirty(self) -> bool:
        return self.count != self.written


class EventAggregator:
    """Events about many objects, folded as client-go's EventCorrelator folds similar events
    (``tools/record/events_cache.go``): one Event per (regarding object, reason, group) — a policy and the
    namespace of the objects it acted on — whose ``count`` says how often it happened and whose message is
    the latest one (prefixed ``(combined from similar events): `` once there are several). An occurrence
    after :data:`AGGREGATE_INTERVAL` of quiet starts a new Event, as the correlator's aggregation window
    does. :meth:`flush` creates what is new at once and updates a stored Event's count at most every
    ``update_every`` seconds (and on ``final``), so a pass over 100,000 objects is one Event per policy and
    namespace and a few count updates, not 100,000 writes."""

    def __init__(
        self,
        cluster: Cluster,
        component: str,
        *,
        update_every: float = 10.0,
        interval: float = AGGREGATE_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cluster = cluster
        self.component = component
        self.update_every = update_every
        self.interval = interval
        self.clock = clock
        self._aggregates: OrderedDict[tuple[Any, ...], _Aggregate] = OrderedDict()
        self._lock = threading.Lock()

    def add(
        self,
        regarding: Mapping[str, Any],
        *,
        reason: str,
        message: str,
        group: str = "",
        related: Mapping[str, Any] | None = None,
        warning: bool = False,
        action: str = "",
    ) -> None:
        """One occurrence: ``regarding`` (an object) ``reason``, about the objects of ``group``."""
        ref = reference(regarding)
        key = (ref.get("apiVersion"), ref.get("kind"), ref.get("namespace"), ref.get("name"), reason, group)
        now, stamp = self.clock(), _timestamp()
        with self._lock:
            entry = self._aggregates.get(key)
            if entry is None or now - entry.seen > self.interval:
                entry = _Aggregate(ref, reason, warning, action, first=stamp)
            self._aggregates[key] = entry
            self._aggregates.move_to_end(key)
            entry.count += 1
            entry.message, entry.last, entry.seen = message, stamp, now
            entry.related = reference(related) if related is not None else None
            while len(self._aggregates) > MAX_AGGREGATES:
                oldest = next(iter(self._aggregates))
                if self._aggregates[oldest].dirty:
                    break  # never forget what is not written yet
                del self._aggregates[oldest]

    def pending(self) -> int:
        with self._lock:
            return sum(1 for entry in self._aggregates.values() if entry.dirty)

    def flush(self, *, final: bool = False) -> int:
        """Write what changed: new Events now, count updates when ``update_every`` has passed (or
        ``final``). The number of writes; a refused one is logged and tried again on the next flush."""
        now = self.clock()
        with self._lock:
            due = [
                (key, dataclasses.replace(entry))
                for key, entry in self._aggregates.items()
                if entry.dirty and (final or not entry.written or now - entry.wrote >= self.update_every)
            ]
        writes = 0
        for key, entry in due:
            try:
                name = self._write(entry)
            except ClusterError as ex:
                log.warning("could not record an event", extra={"reason": entry.reason, "error": str(ex)})
                continue
            writes += 1
            with self._lock:
                current = self._aggregates.get(key)
                if current is not None and current.first == entry.first:  # the same Event (not a new window)
                    current.name, current.written, current.wrote = name, entry.count, now
        return writes

    def _write(self, entry: _Aggregate) -> str:
        message = (AGGREGATE_PREFIX if entry.count > 1 else "") + entry.message
        if entry.name:
            patch: dict[str, Any] = {
                "count": entry.count,
                "lastTimestamp": entry.last,
                "message": message[:MAX_MESSAGE],
            }
            if entry.related is not None:
                patch["related"] = entry.related
            try:
                self.cluster.patch("v1", "events", _event_namespace(entry.regarding), entry.name, patch,
                                   content_type=MERGE_PATCH)  # fmt: skip
                return entry.name
            except NotFound:
                pass  # gone (the API server's event TTL): create it again
        event = event_for(
            {"apiVersion": entry.regarding.get("apiVersion"), "kind": entry.regarding.get("kind"),
             "metadata": {k: entry.regarding[k] for k in ("name", "namespace", "uid", "resourceVersion")
                          if k in entry.regarding}},
            reason=entry.reason, message=message, component=self.component, warning=entry.warning,
            action=entry.action,
        )  # fmt: skip
        event.update(count=entry.count, firstTimestamp=entry.first, lastTimestamp=entry.last)
        if entry.related is not None:
            event["related"] = entry.related
        self.cluster.create("v1", "events", event["metadata"]["namespace"], event)
        return str(event["metadata"]["name"])


def _event_namespace(ref: Mapping[str, Any]) -> str:
    return str(ref.get("namespace") or "default")


def _timestamp() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
