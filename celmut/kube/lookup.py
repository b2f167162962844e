"""CEL's view of the cluster (``resource.Get/List/Post``, namespaces, owners) from watched caches.

:class:`CacheSet` starts a cluster-wide cache for a resource the first time it is looked up and keeps
it (at most ``max_caches`` resources; beyond that lookups go to the API server directly).
:class:`ClusterLookup` implements :class:`celmut.cel.lookups.ResourceLookup` over it.

Pods the webhook has just admitted are not in the pod cache until the API server stores them and
the watch delivers them; :meth:`ClusterLookup.remember_admitted` keeps them in a short-lived overlay
so that decisions counting a workload's pods (exact spot splits, distribution groups) see them when
ten pods are created at once. Each pod is counted once: a pod passes through every webhook that
matches it (the chart registers ``/mutate/fail`` and ``/mutate/ignore``), each a separate call with
its own request uid and no pod name yet, so a call that changed nothing is not recorded (the call
that changes the pod is), and a call that received a copy this process recorded (the previous
webhook's output) replaces it. An overlay entry is dropped when the stored pod arrives in the cache
(same owner and decisions; or, for a decision another process made, an undecided copy of the same
owner), or after ``overlay_seconds``.

**The guarantee** (README, "Spot presets"): a split is exact when the deciding process has seen the
workload's earlier pods — always with one webhook process. Another process's pods are seen once the
API server stored them and this process's watch delivered them (milliseconds); the split of a
workload is off from ``floor(n × percent / 100)`` by at most the number of pods other processes
admitted that the deciding process had not seen (for a decision rule "spot while fewer than
floor(n × p) are": the last spot and the last on-demand decision each miss at most that many).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from celmut import kinds
from celmut.cel.lookups import LookupFailed, ResourceConflict, ResourceNotFound, before_blocking, may_block
from celmut.kube.cache import Handler, WatchedCache
from celmut.kube.client import Cluster, ClusterError, Conflict, NotFound

log = logging.getLogger("celmut.kube")

# The label each cache indexes: the spot presets list a workload's pods by pod-template-hash.
INDEXED_LABELS = {("v1", "pods"): "pod-template-hash"}
_OVERLAY_KEYS = ("celmut.io/placement", "celmut.io/distribution-group")


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
        self, api_version: str, resource: str, *, wait: bool = True, handlers: Sequence[Handler] = ()
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
                    metadata_only=projected,
                    deliver_whole=self.deliver_whole,
                    max_objects=self.max_metadata_objects if projected else self.max_objects,
                    index_label=INDEXED_LABELS.get(key, ""),
                )
                for handler in handlers:
                    cache.add_handler(handler)
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


def _owner_key(obj: Mapping[str, Any]) -> tuple[str, ...]:
    meta = obj.get("metadata") or {}
    owners = [r for r in meta.get("ownerReferences") or [] if r.get("controller")]
    owner = owners[0] if owners else {}
    annotations = meta.get("annotations") or {}
    return (
        str(meta.get("namespace") or ""),
        str(owner.get("kind", "")),
        str(owner.get("name", "")),
        *(str(annotations.get(k, "")) for k in _OVERLAY_KEYS),
    )


class ClusterLookup:
    """:class:`ResourceLookup` backed by watched caches, with an overlay of just-admitted pods."""

    def __init__(self, caches: CacheSet, *, overlay_seconds: float = 60.0) -> None:
        self.caches = caches
        self.overlay_seconds = overlay_seconds
        self._overlay: list[tuple[float, tuple[str, ...], dict[str, Any]]] = []
        self._overlay_lock = threading.Lock()
        self._counting_pods = False  # set once CEL lists pods: only then is the overlay worth keeping

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
        entry = (time.monotonic() + self.overlay_seconds, _owner_key(pod), pod)
        with self._overlay_lock:
            if received is not None:
                for index, (_, _, recorded) in enumerate(self._overlay):
                    if recorded == received:  # the same pod, from the previous webhook: keep one copy
                        self._overlay[index] = entry
                        return
            self._overlay.append(entry)

    def _pod_event(self, event: str, pod: dict[str, Any], _old: dict[str, Any] | None) -> None:
        if event != "ADDED":
            return
        key = _owner_key(pod)
        decided = any(key[3:])
        with self._overlay_lock:
            for index, (_, overlay_key, _) in enumerate(self._overlay):
                if overlay_key == key:
                    del self._overlay[index]
                    return
            for index, (_, overlay_key, _) in enumerate(self._overlay):
                # Another process decided this pod after this one recorded an earlier copy of it.
                if decided and overlay_key[:3] == key[:3] and not any(overlay_key[3:]):
                    del self._overlay[index]
                    return

    def _overlay_pods(self, namespace: str) -> list[dict[str, Any]]:
        now = time.monotonic()
        with self._overlay_lock:
            self._overlay = [entry for entry in self._overlay if entry[0] > now]
            return [pod for _, key, pod in self._overlay if not namespace or key[0] == namespace]

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
        cache = self.caches.ready(api_version, resource)
        if cache is not None:
            if api_version == "v1" and resource == "pods" and not self._counting_pods:
                with self._overlay_lock:
                    if not self._counting_pods:
                        cache.add_handler(self._pod_event)
                        self._counting_pods = True
            items = cache.items(namespace, labels)
        else:
            before_blocking(f"listing {resource} from the API server")
            selector = ",".join(f"{k}={v}" for k, v in (labels or {}).items())
            try:
                items = self.caches.cluster.list_all(api_version, resource, namespace, label_selector=selector)["items"]
            except ClusterError as ex:
                raise LookupFailed(f"listing {resource} in {namespace or 'all namespaces'}: {ex}") from None
        if api_version == "v1" and resource == "pods":
            items = items + self._overlay_pods(namespace)
        if labels:
            items = [
                i
                for i in items
                if all(((i.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in labels.items())
            ]
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
