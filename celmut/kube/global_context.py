"""Kyverno's GlobalContextEntry in the cluster: ``globalContext.Get`` from watched and polled data.

Follows kyverno/kyverno ``pkg/controllers/globalcontext/controller.go`` (one store entry per
GlobalContextEntry, replaced when its spec changes, dropped when it is deleted) and the entries of
``pkg/globalcontext``:

* ``kubernetesResource`` (``k8sresource/entry.go``): a watched list of group/version/resource, in one
  namespace or all; ``Get("")`` is the list of objects, ``Get(name)`` a projection (JMESPath over the
  list), an unknown projection ``projection "name" not found``;
* ``apiCall`` (``externalapi/entry.go``): a ``urlPath`` into the API server or a ``service.url``
  called every ``refreshInterval`` (default 10m, Kyverno's CRD default) with ``retryLimit`` tries;
  ``Get("")`` is the decoded JSON, a projection its precomputed JMESPath result; before the first
  answer ``no data available``, after a failed call that call's error;
* an entry that cannot be built (an invalid JMESPath, a spec with neither form) answers
  ``failed to create cached context entry: …`` (``invalid/entry.go``).

A name with no entry is ``null`` (Kyverno's ``GetGlobalReference`` in ``pkg/cel/libs``). Nothing here
waits: a watch still listing answers an error at once, never a hang in the admission path.

Bounded: at most ``max_objects`` objects per watched entry and ``max_bytes`` of JSON per entry (an
entry over either answers an error saying so); ``service`` calls obey the HTTP allow-list of CEL's
``http.*`` (:class:`celmut.cel.HttpPolicy`). Metrics: ``celmut_global_context_entry_objects``,
``celmut_global_context_entry_bytes`` and ``celmut_global_context_refresh_failures_total``.

Status is written as Kyverno writes it (``api/kyverno/v2alpha1`` ``GlobalContextEntryStatus.SetReady``:
a ``Ready`` condition, reason ``Succeeded``/``Failed``, the deprecated ``ready`` flag, and
``lastRefreshTime`` after each successful API call) — only when ``write_status()`` says so: the
controller's leader, while Kyverno is absent (when Kyverno runs, its controller owns the status).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import orjson
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from celmut.cel.lookups import HttpPolicy
from celmut.kube.cache import WatchedCache
from celmut.kube.client import MERGE_PATCH, Cluster, ClusterError
from celmut.kube.global_context_entries import (
    API_VERSION,
    RESOURCE,
    ApiCallEntry,
    Entry,
    EntryInvalid,
    InvalidEntry,
    ResourceEntry,
    now_rfc3339,
)

log = logging.getLogger("celmut.kube")


class GlobalContextStore(Collector):
    """Every GlobalContextEntry of the cluster, as a :class:`celmut.cel.lookups.GlobalContextLookup`."""

    def __init__(
        self,
        cluster: Cluster,
        http_policy: HttpPolicy,
        *,
        write_status: Callable[[], bool] = lambda: False,
        max_objects: int = 10_000,
        max_bytes: int = 16 << 20,
    ) -> None:
        self.cluster, self.http_policy = cluster, http_policy
        self.write_status = write_status
        self.max_objects, self.max_bytes = max_objects, max_bytes
        self._entries: dict[str, tuple[str, Entry]] = {}  # name -> (spec fingerprint, entry)
        self._failures: dict[str, int] = {}
        self._outcomes: dict[str, tuple[bool, str, bool]] = {}  # name -> last (ready, message, refreshed)
        self._written: dict[str, tuple[bool, str, bool]] = {}  # name -> the outcome its status shows
        self._lock = threading.Lock()
        self.watch = WatchedCache(cluster, API_VERSION, RESOURCE, max_objects=1000)
        self.watch.add_handler(self._changed)

    def start(self) -> GlobalContextStore:
        self.watch.start()
        return self

    def stop(self) -> None:
        self.watch.stop()
        with self._lock:
            entries, self._entries = list(self._entries.values()), {}
        for _, entry in entries:
            entry.stop()

    def synced(self) -> bool:
        return self.watch.synced.is_set() or self.watch.absent

    def wait_ready(self, timeout: float) -> GlobalContextStore:
        """Until the entries are listed and each has its first data or error (at most ``timeout``)."""
        deadline = time.monotonic() + timeout
        self.watch.wait_synced(timeout)
        with self._lock:
            entries = [entry for _, entry in self._entries.values()]
        for entry in entries:
            entry.wait(max(deadline - time.monotonic(), 0.0))
        return self

    # --- the controller (pkg/controllers/globalcontext) --------------------------------------------

    def _changed(self, event: str, obj: dict[str, Any], _old: dict[str, Any] | None) -> None:
        name = str((obj.get("metadata") or {}).get("name") or "")
        raw = obj.get("spec")
        spec: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        fingerprint = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS).decode()
        with self._lock:
            current = self._entries.get(name)
            if event != "DELETED" and current is not None and current[0] == fingerprint:
                return  # a status write or a label change: the entry stays (updateGTXEntry compares specs)
            stale = self._entries.pop(name, None)
        if stale is not None:
            stale[1].stop()
        if event == "DELETED":
            with self._lock:
                for table in (self._failures, self._outcomes, self._written):
                    table.pop(name, None)
            return
        entry = self._build(name, spec)
        with self._lock:
            self._entries[name] = (fingerprint, entry)

    def _build(self, name: str, spec: Mapping[str, Any]) -> Entry:
        def report(ready: bool, message: str) -> None:
            if not ready:
                self._failures[name] = self._failures.get(name, 0) + 1
            self._status(name, ready, message, refreshed=ready and "apiCall" in spec)

        try:
            if isinstance(spec.get("kubernetesResource"), Mapping) == isinstance(spec.get("apiCall"), Mapping):
                raise EntryInvalid("A global context entry should either have KubernetesResource or APICall")
            if isinstance(spec.get("kubernetesResource"), Mapping):
                return ResourceEntry(
                    self.cluster, spec, max_objects=self.max_objects, max_bytes=self.max_bytes, on_synced=report
                )
            return ApiCallEntry(self.cluster, spec, self.http_policy, max_bytes=self.max_bytes, on_refresh=report)
        except (EntryInvalid, KeyError, TypeError, ValueError) as ex:
            log.warning("invalid GlobalContextEntry", extra={"entry": name, "error": str(ex)})
            self._status(name, False, str(ex))
            return InvalidEntry(str(ex))

    def _status(self, name: str, ready: bool, message: str, *, refreshed: bool = False) -> None:
        """Record an entry's outcome; write it now when celmut owns the status, else at :meth:`flush_status`."""
        with self._lock:
            self._outcomes[name] = (ready, message, refreshed)
        if self.write_status():
            self._write_status(name)

    def flush_status(self) -> None:
        """Write the outcomes recorded while celmut did not own the status (a standby that became the
        leader, a start before Kyverno's absence was known): Kyverno writes on every refresh, so the
        status of an entry refreshed hourly would otherwise lag by up to an hour."""
        if not self.write_status():
            return
        with self._lock:
            names = [name for name, outcome in self._outcomes.items() if outcome != self._written.get(name)]
        for name in names:
            self._write_status(name)

    def _write_status(self, name: str) -> None:
        """Kyverno's SetReady (+ UpdateRefreshTime after a successful call)."""
        with self._lock:
            outcome = self._outcomes.get(name)
        if outcome is None:
            return
        ready, message, refreshed = outcome
        current = self.watch.get("", name) or {}
        status = dict(current.get("status") or {})
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
        previous = next((c for c in conditions if c.get("type") == "Ready"), None)
        state = "True" if ready else "False"
        condition = {
            "type": "Ready",
            "status": state,
            "reason": "Succeeded" if ready else "Failed",
            "message": message,
            # meta.SetStatusCondition: the transition time moves only when the status does
            "lastTransitionTime": previous.get("lastTransitionTime")
            if previous is not None and previous.get("status") == state and previous.get("lastTransitionTime")
            else now_rfc3339(),
        }
        generation = (current.get("metadata") or {}).get("generation")
        if generation is not None:
            condition["observedGeneration"] = generation
        patch: dict[str, Any] = {
            "ready": ready,
            "conditions": [c for c in conditions if c.get("type") != "Ready"] + [condition],
        }
        if refreshed:
            patch["lastRefreshTime"] = now_rfc3339()
        try:
            self.cluster.patch(
                API_VERSION, RESOURCE, "", name, {"status": patch}, content_type=MERGE_PATCH, sub="status"
            )
        except ClusterError as ex:
            log.warning("cannot write GlobalContextEntry status", extra={"entry": name, "error": str(ex)})
            return
        with self._lock:
            self._written[name] = outcome

    # --- GlobalContextLookup ------------------------------------------------------------------------

    def get(self, entry: str, projection: str = "") -> Any:
        with self._lock:
            found = self._entries.get(entry)
        return None if found is None else found[1].get(projection)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._entries)

    # --- metrics ------------------------------------------------------------------------------------

    def sizes(self) -> Iterable[tuple[str, int, int, int]]:
        """(entry, objects, bytes, refresh failures) of each entry."""
        with self._lock:
            entries = [(name, entry) for name, (_, entry) in sorted(self._entries.items())]
        for name, entry in entries:
            objects, size = entry.size()
            yield name, objects, size, self._failures.get(name, 0)

    def collect(self) -> Iterator[Any]:
        objects, size, failures = metric_families()
        for name, count, nbytes, failed in self.sizes():
            objects.add_metric([name], count)
            size.add_metric([name], nbytes)
            failures.add_metric([name], failed)
        yield from (objects, size, failures)


def metric_families() -> tuple[GaugeMetricFamily, GaugeMetricFamily, CounterMetricFamily]:
    """The store's three metric families, empty: what each component's ``/metrics`` adds per entry."""
    objects = GaugeMetricFamily(
        "celmut_global_context_entry_objects", "Objects cached for each GlobalContextEntry", labels=["entry"]
    )
    size = GaugeMetricFamily(
        "celmut_global_context_entry_bytes", "JSON bytes cached for each GlobalContextEntry", labels=["entry"]
    )
    failures = CounterMetricFamily(
        "celmut_global_context_refresh_failures",
        "Failed refreshes (API calls, cache syncs) of each GlobalContextEntry",
        labels=["entry"],
    )
    return objects, size, failures
