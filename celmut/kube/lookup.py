"""CEL's view of the cluster (``resource.Get/List/Post``, namespaces, owners) from watched caches.

:class:`CacheSet` starts a cluster-wide cache for a resource the first time it is looked up and keeps
it (at most ``max_caches`` resources; beyond that lookups go to the API server directly).
:class:`ClusterLookup` implements :class:`celmut.cel.lookups.ResourceLookup` over it.

Pods (issue 38), for decisions counting a workload's pods (exact spot splits, distribution groups):

* **the pods this process admitted** and the cache does not show yet are counted
  (:meth:`ClusterLookup.remember_admitted`, :mod:`celmut.kube.admitted_pods`);
* **inside an admission** (the webhook opens a :class:`celmut.cel.lookups.AdmissionScope` around each)
  a pod list is a decision: it takes the workload's decision lock, held until the admission has
  recorded what it admitted, so the decisions about one workload are made one at a time in a process,
  each counting the earlier ones; and it reads the workload's pods the API server has stored
  (:mod:`celmut.kube.stored_pods`), so a pod deleted (or Terminating) a moment ago is never counted
  because the watch is behind.

**The guarantee** (docs/presets/spot.md): with one webhook process a split is exact, and so it is
across processes with the decision ledger (:mod:`celmut.kube.decision_ledger`: the pods other processes
are admitting are counted, and a decision another process overtook is made again). Without the ledger,
another process's pods are counted once the API server has stored them; the split of a workload is off
from ``floor(n × percent / 100)`` by at most the number of pods other processes were admitting, not yet
stored, while it decided.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from celmut import kinds
from celmut.cel.lookups import (
    AdmissionScope,
    LookupFailed,
    ResourceConflict,
    ResourceNotFound,
    admission_scope,
    before_blocking,
    may_block,
)
from celmut.kube.admitted_pods import AdmittedPods, reconcile
from celmut.kube.cache import Handler, WatchedCache
from celmut.kube.client import Cluster, ClusterError, Conflict, NotFound
from celmut.kube.decision_ledger import DECISION_ANNOTATION, DecisionLedger, LedgerView, decision_of
from celmut.kube.stored_pods import METADATA_FIELD_SELECTORS, StoredRead, StoredReads

log = logging.getLogger("celmut.kube")

# The label each cache indexes: the spot presets list a workload's pods by pod-template-hash.
INDEXED_LABELS = {("v1", "pods"): "pod-template-hash"}


class CacheSet:
    """Cluster-wide watched caches, created on first use.

    Resources in ``metadata_only`` are cached as ``PartialObjectMetadata`` (up to
    ``max_metadata_objects`` each); the others whole, up to ``max_objects`` each (a full cache is
    not read: lookups go to the API server, :meth:`ready`). :meth:`set_metadata_only` changes the
    set when the policies change; a cache in the wrong mode is dropped and listed again on next use.
    ``deliver_whole``: metadata-only caches still list and watch whole objects, and hand them whole to
    their handlers (the controller evaluates what changed; :class:`~celmut.kube.cache.WatchedCache`).
    """

    def __init__(
        self,
        cluster: Cluster,
        *,
        max_caches: int = 32,
        sync_timeout: float = 5.0,
        metadata_only: frozenset[tuple[str, str]] = frozenset(),
        max_objects: int = 20_000,
        max_metadata_objects: int = 250_000,
        deliver_whole: bool = False,
    ) -> None:
        self.cluster = cluster
        self.max_caches = max_caches
        self.sync_timeout = sync_timeout
        self.metadata_only = metadata_only
        self.max_objects = max_objects
        self.max_metadata_objects = max_metadata_objects
        self.deliver_whole = deliver_whole
        self._caches: dict[tuple[str, str], WatchedCache] = {}
        self._lock = threading.Lock()

    def cache(
        self, api_version: str, resource: str, *, wait: bool = True, handlers: Sequence[tuple[Handler, bool]] = ()
    ) -> WatchedCache | None:
        """The resource's cache, started on first use (``handlers`` added before its first list)."""
        key = (api_version, resource)
        with self._lock:
            cache = self._caches.get(key)
            if cache is None:
                if len(self._caches) >= self.max_caches:
                    return None
                projected = key in self.metadata_only
                cache = self._caches[key] = WatchedCache(
                    self.cluster,
                    api_version,
                    resource,
                    field_selector=METADATA_FIELD_SELECTORS.get(key, "") if projected else "",
                    metadata_only=projected,
                    deliver_whole=self.deliver_whole,
                    max_objects=self.max_metadata_objects if projected else self.max_objects,
                    index_label=INDEXED_LABELS.get(key, ""),
                )
                for handler, locked in handlers:
                    cache.add_handler(handler, locked=locked)
                cache.start()
        if wait and not cache.wait_synced(self.sync_timeout):
            return None
        return cache

    def set_metadata_only(self, resources: frozenset[tuple[str, str]]) -> None:
        """Cache these resources metadata-only from now on (the others whole). A cache in the other mode
        is listed again now (not on the first admission that needs it), its handlers moved to the new one."""
        with self._lock:
            self.metadata_only = resources
            stale = {key: cache for key, cache in self._caches.items() if cache.metadata_only != (key in resources)}
            for key, cache in stale.items():
                del self._caches[key]
                cache.stop()
        for (api_version, resource), old in stale.items():
            fresh = self.cache(api_version, resource, wait=False, handlers=old.handlers())
            if fresh is None:
                log.warning("cache not replaced", extra={"resource": f"{resource}.{api_version}"})

    def existing(self, api_version: str, resource: str) -> WatchedCache | None:
        """The resource's cache if one was started (never starts one)."""
        with self._lock:
            return self._caches.get((api_version, resource))

    def synced_now(self, api_version: str, resource: str) -> bool:
        """Whether the resource's current cache has its first list in (a handler's view: the events of a
        cache's first list are not changes)."""
        cache = self.existing(api_version, resource)
        return cache is not None and cache.synced.is_set()

    def sizes(self) -> list[tuple[str, bool, int, bool]]:
        """(resource, metadata-only, objects, overflowed) of each cache, for ``/metrics``."""
        return [
            (kinds.qualified_resource(c.api_version, c.resource), c.metadata_only, len(c), c.overflowed)
            for c in self.caches()
        ]

    def ready(self, api_version: str, resource: str) -> WatchedCache | None:
        """The synced cache of a resource, or None when reading it would wait or go to the API server;
        where waiting is not allowed (:func:`celmut.cel.lookups.may_block`), never waits."""
        cache = self.cache(api_version, resource, wait=may_block())
        if cache is None or cache.absent or cache.overflowed or not cache.synced.is_set():
            return None
        return cache

    def caches(self) -> list[WatchedCache]:
        with self._lock:
            return list(self._caches.values())

    def synced(self) -> bool:
        """Every cache has listed once, or cannot be (not served, forbidden): a resource celmut may not
        read holds up no one's readiness, only the policies that name it (they say so)."""
        return all(c.settled for c in self.caches())

    def unreadable(self) -> dict[tuple[str, str], str]:
        """(apiVersion, resource) -> why celmut may not list or watch it, for each cache forbidden now."""
        return {(c.api_version, c.resource): c.denied for c in self.caches() if c.denied}

    def stop(self) -> None:
        for cache in self.caches():
            cache.stop()


def read_object(cluster: Cluster, api_version: str, resource: str, namespace: str, name: str) -> dict[str, Any]:
    """One object read from the API server, its errors as CEL lookup errors (``resource.Get``)."""
    try:
        return cluster.get(api_version, resource, namespace, name)
    except NotFound as ex:
        raise ResourceNotFound(ex.message) from None
    except ClusterError as ex:
        raise LookupFailed(f"reading {resource} {namespace}/{name}: {ex}") from None


def _name(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _read_key(
    cache: WatchedCache | None, caches: CacheSet, namespace: str, labels: Mapping[str, str] | None
) -> tuple[str, tuple[tuple[str, str], ...], bool]:
    """Which stored list a pod list reads: namespace, labels, and the cache's projection."""
    metadata_only = cache.metadata_only if cache is not None else ("v1", "pods") in caches.metadata_only
    return namespace, tuple(sorted((labels or {}).items())), metadata_only


def _labelled(obj: Mapping[str, Any], labels: Mapping[str, str] | None) -> bool:
    own = (obj.get("metadata") or {}).get("labels") or {}
    return all(own.get(k) == v for k, v in (labels or {}).items())


class ClusterLookup:
    """:class:`ResourceLookup` backed by watched caches, with an overlay of just-admitted pods."""

    def __init__(
        self,
        caches: CacheSet,
        *,
        overlay_seconds: float = 60.0,
        decision_locks: int = 64,
        ledger: DecisionLedger | None = None,
    ) -> None:
        self.caches = caches
        self.ledger = ledger  # decisions across webhook processes (celmut.kube.decision_ledger); None: this one only
        self.overlay_seconds = overlay_seconds
        self.admitted = AdmittedPods(overlay_seconds)
        self.stored_reads = StoredReads(caches.cluster)  # the pod lists decisions read (celmut.kube.stored_pods)
        self._counting = threading.Lock()
        self._counting_pods = False  # set once CEL lists pods: only then is the overlay worth keeping
        # striped by (namespace, labels) of a pod list: the decisions about one workload's pods, one at a time
        self._decision_locks = [threading.Lock() for _ in range(decision_locks)]

    # --- the overlay of admitted pods -----------------------------------------------------------

    def remember_admitted(self, pod: dict[str, Any], *, received: dict[str, Any] | None = None) -> None:
        """Count a pod admitted moments ago until the pod cache shows it; ``received`` is the object the
        webhook call received (None: unknown, the pod is recorded)."""
        if (
            not self._counting_pods
            or pod.get("kind") != "Pod"
            or not any(r.get("controller") for r in (pod.get("metadata") or {}).get("ownerReferences") or [])
            or pod == received  # this call changed nothing: the call that changes the pod records it
        ):
            return
        scope = admission_scope()
        decision = decision_of(pod)
        if scope is not None and self.ledger is not None and decision:
            for view in scope.views.values():
                if view is None or self.ledger.record(view, decision, pod):
                    continue
                if not scope.final:
                    scope.stale = True  # another process decided meanwhile: the admission is evaluated again
                    return
                self.ledger.record_anyway(view, decision, pod)  # the decision stands: later ones count it
        self.admitted.remember(pod, received)

    def _count_pods(self, cache: WatchedCache) -> None:
        """From the first pod list on: keep the overlay, and drop an entry as its pod is stored in the
        cache (under the cache's lock: a snapshot never sees a pod in both, nor in neither)."""
        if not self._counting_pods:
            with self._counting:
                if not self._counting_pods:
                    cache.add_handler(self.admitted.stored, locked=True)
                    self._counting_pods = True

    def decision_stripe(self, namespace: str, labels: Mapping[str, str] | None) -> int:
        """Which decision lock a pod list takes (a stable hash: the same in every process and run)."""
        text = "\0".join([namespace, *(f"{k}={v}" for k, v in sorted((labels or {}).items()))])
        return zlib.crc32(text.encode()) % len(self._decision_locks)

    def _decide_alone(self, scope: AdmissionScope, namespace: str, labels: Mapping[str, str] | None) -> None:
        """Hold this workload's decision lock until the admission ends (:class:`AdmissionScope`): a
        decision then sees every pod the earlier ones admitted (in flight, they are in the overlay)."""
        if not scope.acquire(self._decision_locks[self.decision_stripe(namespace, labels)]):
            log.warning(
                "another admission of the workload held its pods past the deadline; deciding without waiting",
                extra={"namespace": namespace, "labels": dict(labels or {})},
            )

    def _list_pods(self, namespace: str, labels: Mapping[str, str] | None) -> list[dict[str, Any]]:
        """Pods for CEL: the cache (or the API server) and the overlay; inside an admission, read-your-writes
        (:mod:`celmut.kube.stored_pods`): what the API server had stored when the request arrived, then
        one decision at a time per workload."""
        scope = admission_scope()
        if scope is not None:
            before_blocking("reading the workload's pods from the API server")
        cache = self.caches.ready("v1", "pods")
        read = None
        if scope is not None:
            read = self._stored_read(scope, cache, namespace, labels)
            self._decide_alone(scope, namespace, labels)
            if read is not None:  # a newer list another decision read while this one waited
                read = self.stored_reads.latest(_read_key(cache, self.caches, namespace, labels), read)
        view = self._ledger_view(scope, namespace, labels) if scope is not None else None

        def count(cached: list[dict[str, Any]]) -> list[dict[str, Any]]:
            """The pods to count, from ``cached`` and the admitted pods at one moment (under the cache's
            lock when there is one: the claims reconciling learns are kept before the watch can store
            one of those pods and drop the entry that stands for it)."""
            entries = self.admitted.snapshot(namespace)
            if read is None:
                counted = cached + [entry.pod for entry in entries]
            else:
                selected = [e for e in entries if _labelled(e.pod, labels)]  # those the stored list can show
                result = reconcile(
                    cached, selected, read.pods, read.known, read.started, read.finished, version=read.version
                )
                self.admitted.settle(result)
                counted = result.pods
            if view is None or self.ledger is None:
                return counted
            # other processes' pods in flight: those no stored, cached or own admitted pod shows yet (a pod
            # another process decided about can reach this one through the next webhook of the chain)
            shown = (*cached, *(read.pods if read else ()), *(entry.pod for entry in entries))
            present = {decision_of(pod) for pod in shown} - {""}
            since = None if read is None else time.time() - (time.perf_counter() - read.started)
            others = self.ledger.in_flight(view, namespace, present, since)
            return counted + [pod for pod in others if _labelled(pod, labels)]

        if cache is not None:
            self._count_pods(cache)
            return cache.holding(namespace, labels, count)
        if read is None:
            before_blocking("listing pods from the API server")
            return count(self._list_from_server("v1", "pods", namespace, labels))
        return count([])

    def _ledger_view(
        self, scope: AdmissionScope, namespace: str, labels: Mapping[str, str] | None
    ) -> LedgerView | None:
        """The workload's ledger Lease for this evaluation (read once; its lock is held), and the
        decision's id stamped on the admitted pod (what another process matches its entry to)."""
        if self.ledger is None or not scope.decision_id:
            return None  # nothing to record: no Lease to read
        stripe = self.decision_stripe(namespace, labels)
        name = self.ledger.name(stripe)  # one view per Lease: two workloads of one Lease, one write
        if name not in scope.views:
            scope.views[name] = self.ledger.read(stripe)
        view: LedgerView | None = scope.views[name]
        if view is not None:
            scope.stamps[DECISION_ANNOTATION] = scope.decision_id
        return view

    def _stored_read(
        self, scope: AdmissionScope, cache: WatchedCache | None, namespace: str, labels: Mapping[str, str] | None
    ) -> StoredRead | None:
        """The workload's stored pods as listed after the request arrived (None: not readable)."""
        key = _read_key(cache, self.caches, namespace, labels)

        def known() -> frozenset[tuple[str, str]]:
            return frozenset(_name(pod) for pod in cache.items(namespace, labels)) if cache else frozenset()

        wait = 30.0 if scope.deadline is None else max(0.0, scope.deadline - time.monotonic())
        return self.stored_reads.read(key, scope.arrived, known, wait)

    def _list_from_server(
        self, api_version: str, resource: str, namespace: str, labels: Mapping[str, str] | None
    ) -> list[dict[str, Any]]:
        selector = ",".join(f"{k}={v}" for k, v in (labels or {}).items())
        try:
            items: list[dict[str, Any]] = self.caches.cluster.list_all(
                api_version, resource, namespace, label_selector=selector
            )["items"]
        except ClusterError as ex:
            raise LookupFailed(f"listing {resource} in {namespace or 'all namespaces'}: {ex}") from None
        return items

    # --- ResourceLookup -------------------------------------------------------------------------

    def get(self, api_version: str, resource: str, namespace: str, name: str) -> dict[str, Any]:
        cache = self.caches.ready(api_version, resource)
        if cache is not None:
            obj = cache.get(namespace, name)
            if obj is None:
                raise ResourceNotFound(f'{kinds.qualified_resource(api_version, resource)} "{name}" not found')
            return obj
        before_blocking(f"reading {resource} from the API server")
        return read_object(self.caches.cluster, api_version, resource, namespace, name)

    def list(
        self, api_version: str, resource: str, namespace: str, labels: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        if api_version == "v1" and resource == "pods":
            items = self._list_pods(namespace, labels)
        else:
            cache = self.caches.ready(api_version, resource)
            if cache is not None:
                items = cache.items(namespace, labels)
            else:
                before_blocking(f"listing {resource} from the API server")
                items = self._list_from_server(api_version, resource, namespace, labels)
        if labels:
            items = [i for i in items if _labelled(i, labels)]
        return {
            "apiVersion": api_version,
            "kind": f"{kinds.kind_for(api_version, resource)}List",
            "metadata": {},
            "items": items,
        }

    def post(self, api_version: str, resource: str, namespace: str, data: dict[str, Any]) -> dict[str, Any]:
        before_blocking(f"creating {resource}")
        try:
            created: dict[str, Any] = self.caches.cluster.create(api_version, resource, namespace, data)
            return created
        except Conflict as ex:
            raise ResourceConflict(ex.message) from None
        except ClusterError as ex:
            raise LookupFailed(f"creating {resource} in {namespace}: {ex}") from None

    def resource_for_kind(self, api_version: str, kind: str) -> str | None:
        return kinds.resource_for(api_version, kind) if kind else None
