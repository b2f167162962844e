"""The controller's Events, as Kyverno's event generator posts them (kyverno/kyverno ``pkg/event/controller.go``)
and kept bounded as client-go's recorder keeps them.

:meth:`EventRecorder.add` takes what happened (:class:`EventInfo`: the object regarded, reason, message,
action, reporting component, the related object) and, as Kyverno's ``Add`` does, leaves out the reasons
``--omitEvents`` names (Kyverno's chart omits ``PolicyApplied`` and ``PolicySkipped``), an object without a
name, and anything past ``max_queued`` waiting Events (Kyverno's ``--maxQueuedEvents``, 1000: dropped and
counted, never waited for — a scan is never held up by its Events). A thread of its own (:meth:`run`, as
Kyverno's event workers) writes them:

* ``per-object`` (the default, Kyverno's): each Event about its own object, through client-go's
  :class:`~celmut.kube.event_correlator.EventCorrelator` — similar Events about one object folded, a
  repeated one counted, 25 at once per source and object then one every 5 minutes;
* ``aggregated`` (for very large clusters): only the Events about a policy, folded per policy, reason and
  namespace of the related objects (:class:`~celmut.kube.events.EventAggregator`), the objects' own
  Events left to their reports — a policy read from a file included (``aggregate_only``: in ``per-object``
  there is no object to post them about).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from celmut.kube.client import MERGE_PATCH, Cluster, ClusterError, NotFound
from celmut.kube.event_correlator import EventCorrelator
from celmut.kube.events import EventAggregator, event_for, reference

log = logging.getLogger("celmut.kube")

PER_OBJECT = "per-object"
AGGREGATED = "aggregated"
EVENT_MODES = (PER_OBJECT, AGGREGATED)
# Kyverno's reasons (pkg/event/reason.go), the values --omitEvents takes
REASONS = ("PolicyViolation", "PolicyApplied", "PolicyError", "PolicySkipped")
DEFAULT_OMITTED = ("PolicyApplied", "PolicySkipped")  # Kyverno's chart: features.omitEvents.eventTypes
MAX_QUEUED = 1000  # Kyverno's --maxQueuedEvents
WORKERS = 3  # Kyverno's event controller: pkg/event/controller.go Workers


def parse_omitted(text: str) -> frozenset[str]:
    """``--omitEvents``: Kyverno's comma-separated reasons (``PolicyApplied,PolicySkipped``; empty: none).
    Raises ValueError naming an unknown reason (Kyverno ignores it; a typo would silently omit nothing)."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in REASONS]
    if unknown:
        raise ValueError(
            f"--omitEvents: unknown event type {unknown[0]!r}; use a comma-separated list of {', '.join(REASONS)}"
        )
    return frozenset(names)


@dataclass(frozen=True)
class EventInfo:
    """One Event to post (Kyverno's ``event.Info``): about ``regarding`` (an ObjectReference), from
    ``component``; ``related``: the other object it concerns (a policy's Event names the resource)."""

    regarding: Mapping[str, Any]
    reason: str
    message: str
    component: str
    action: str = ""
    related: Mapping[str, Any] | None = None
    warning: bool = True
    # about a policy read from a file, which is no object to post about: only folded (``aggregated``)
    aggregate_only: bool = False

    @classmethod
    def about(cls, obj: Mapping[str, Any], **details: Any) -> EventInfo:
        """An Event about ``obj`` (a whole object or a reference), ``related`` likewise."""
        related = details.pop("related", None)
        return cls(_ref(obj), related=_ref(related) if related is not None else None, **details)


def _ref(obj: Mapping[str, Any]) -> dict[str, Any]:
    return reference(obj) if "metadata" in obj else {k: v for k, v in obj.items() if v is not None}


def _as_object(ref: Mapping[str, Any]) -> dict[str, Any]:
    """The object an ObjectReference names, as :func:`~celmut.kube.events.event_for` takes one."""
    meta = {k: ref[k] for k in ("name", "namespace", "uid", "resourceVersion") if k in ref}
    return {"apiVersion": ref.get("apiVersion"), "kind": ref.get("kind"), "metadata": meta}


class EventRecorder:
    """Events queued by the controller's parts, written by :meth:`run` (or :meth:`flush`)."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        mode: str = PER_OBJECT,
        omitted: Iterable[str] = DEFAULT_OMITTED,
        max_queued: int = MAX_QUEUED,
        on_result: Callable[[str, str], None] | None = None,  # (reason, result), for metrics
        correlator: EventCorrelator | None = None,
        aggregator: Callable[[str], EventAggregator] | None = None,
    ) -> None:
        if mode not in EVENT_MODES:
            raise ValueError(f"events mode {mode!r}: use {' or '.join(EVENT_MODES)}")
        self.cluster = cluster
        self.mode = mode
        self.omitted = frozenset(omitted)
        self.max_queued = max_queued
        self.on_result = on_result or (lambda reason, result: None)
        self.correlator = correlator or EventCorrelator()
        self._make_aggregator = aggregator or (lambda component: EventAggregator(cluster, component))
        self._aggregators: dict[str, EventAggregator] = {}
        self._queue: deque[EventInfo] = deque()
        self._cond = threading.Condition()
        self._writing = 0

    # --- producers ---------------------------------------------------------------------------------

    def add(self, *infos: EventInfo, always: bool = False) -> None:
        """Queue Events (``always``: whatever ``--omitEvents`` and the mode say, e.g. an eviction)."""
        for info in infos:
            if not info.regarding.get("name"):
                continue  # Kyverno: no Event for an object without a name (generateName, not yet named)
            if not always and info.reason in self.omitted:
                continue
            if self.mode == AGGREGATED and not always:
                self._fold(info)
                continue
            if info.aggregate_only:
                continue
            with self._cond:
                if len(self._queue) >= self.max_queued:
                    self.on_result(info.reason, "dropped")
                    continue
                self._queue.append(info)
                self._cond.notify()

    def _fold(self, info: EventInfo) -> None:
        if info.related is None:
            return  # aggregated: an object's own Event is left to its report
        with self._cond:
            aggregator = self._aggregators.get(info.component)
            if aggregator is None:
                aggregator = self._aggregators[info.component] = self._make_aggregator(info.component)
        aggregator.add(
            _as_object(info.regarding),
            reason=info.reason,
            message=info.message,
            group=str(info.related.get("namespace") or ""),
            related=_as_object(info.related),
            warning=info.warning,
            action=info.action,
        )

    # --- the writer --------------------------------------------------------------------------------

    def pending(self) -> int:
        """Events queued or being written, and folded Events whose count is not written yet."""
        with self._cond:
            queued = len(self._queue) + self._writing
            aggregators = list(self._aggregators.values())
        return queued + sum(a.pending() for a in aggregators)

    def flush(self, *, final: bool = False) -> int:
        """Write what is queued (and the folded Events due; all of them with ``final``): the number of writes."""
        writes = self._drain()
        with self._cond:
            aggregators = list(self._aggregators.values())
        return writes + sum(a.flush(final=final) for a in aggregators)

    def _drain(self) -> int:
        writes = 0
        while True:
            with self._cond:
                if not self._queue:
                    break
                info = self._queue.popleft()
                self._writing += 1
            try:
                writes += self._write(info)
            finally:
                with self._cond:
                    self._writing -= 1
        return writes

    def run(self, stop: threading.Event, fold_interval: float = 1.0, workers: int = WORKERS) -> None:
        """The writing threads (Kyverno's event controller runs 3 workers): each Event as soon as it is
        queued, the folded ones every ``fold_interval``; what is left once ``stop`` is set, then they end."""
        helpers = [
            threading.Thread(target=self._work, args=(stop, fold_interval), name=f"celmut-events-{i}", daemon=True)
            for i in range(1, workers)
        ]
        for helper in helpers:
            helper.start()
        while not stop.is_set():
            with self._cond:
                if not self._queue:
                    self._cond.wait(fold_interval)
            self.flush()
        for helper in helpers:
            helper.join(timeout=5)
        self.flush(final=True)

    def _work(self, stop: threading.Event, fold_interval: float) -> None:
        while not stop.is_set():
            with self._cond:
                if not self._queue:
                    self._cond.wait(fold_interval)
            self._drain()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _write(self, info: EventInfo) -> int:
        event = event_for(
            _as_object(info.regarding),
            reason=info.reason,
            message=info.message,
            component=info.component,
            warning=info.warning,
            action=info.action,
            related=info.related,
        )
        correlated = self.correlator.correlate(event)
        if correlated.skip:
            self.on_result(info.reason, "filtered")
            return 0
        event, namespace = correlated.event, correlated.event["metadata"]["namespace"]
        try:
            if correlated.patch is not None:
                try:
                    stored = self.cluster.patch(
                        "v1", "events", namespace, event["metadata"]["name"], correlated.patch, content_type=MERGE_PATCH
                    )
                    self.on_result(info.reason, "updated")
                    self.correlator.update_state(stored)
                    return 1
                except NotFound:  # expired (the API server's event TTL): created again, as client-go does
                    event = {**event, "metadata": {**event["metadata"]}}
                    event["metadata"].pop("resourceVersion", None)
            stored = self.cluster.create("v1", "events", namespace, event)
        except ClusterError as ex:  # an Event is best effort: logged and counted, not retried
            log.warning("could not record an event", extra={"reason": info.reason, "error": str(ex)})
            self.on_result(info.reason, "error")
            return 0
        self.on_result(info.reason, "created")
        self.correlator.update_state(stored)
        return 1
