"""Targets listed a page at a time: the passes over the targets that resource rules name.

A scan or a trigger of a mutateExisting policy whose targets are listed by resource rules (and a drift
pass over pods) does not read all its targets at once. It is *submitted* here; the sweeper lists each
resource once for every policy waiting to list it — from a synced whole-object cache when there is one,
else from the API server a page at a time (``limit``/``continue``, as ``--dry-run`` reads pods) — and
queues each target with its work and the object as listed, waiting (:attr:`Sweeper.room`) while the
queue is full. So the objects in memory are the page being read and the queue's bound, whatever the
cluster's size, and a worker patches the object as listed without reading it first
(:func:`celmut.controller.reconcile.listed_object`; a 409 re-reads it).

Sweeps waiting for the same policy are one: a later trigger replaces an earlier one's, as later work for
a policy replaces earlier work in the queue.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from celmut.compile.compiled import CompiledPolicy
from celmut.controller.reconcile import LoadedPolicies, TargetKey, Task, Work
from celmut.kube.client import Cluster, ClusterError
from celmut.kube.lookup import CacheSet
from celmut.runtime import AdmissionInput
from celmut.runtime.mutate_existing import Target, TargetListing, accepts, target_listings, unresolved_target

log = logging.getLogger("celmut.controller")

DRIFT = "\x00drift"  # the pending key of the drift pass over pods (no policy has this name)


@dataclass(frozen=True)
class _Pending:
    policies: tuple[CompiledPolicy, ...]  # one mutateExisting policy, or the drift policies
    trigger: AdmissionInput | None
    counted: bool  # a scan: its targets count towards the scan's progress


class Sweeper:
    """Lists the targets of submitted passes a page at a time and queues them (``enqueue``)."""

    def __init__(
        self,
        caches: CacheSet,
        cluster: Cluster,
        loaded: Callable[[], LoadedPolicies | None],
        enqueue: Callable[[TargetKey, Work], None],
        *,
        unresolved: Callable[[Target], None],
        page_size: int = 500,
    ) -> None:
        self.caches = caches
        self.cluster = cluster
        self.loaded = loaded
        self.enqueue = enqueue
        self.unresolved = unresolved
        self.page_size = page_size
        # called after each page is queued, before the next is read: waits until the queue has room (or
        # drains it, in a dry run); False stops the sweep (the controller is stopping)
        self.room: Callable[[], bool] = lambda: True
        self.on_counted: Callable[[int], None] = lambda count: None  # targets a scan's sweep queued
        # called before a sweep reads its first page: waits until the work queued before it was processed
        # (a listing is a snapshot; copies older than those passes' writes would be patched in vain); False
        # stops the sweep (the controller is stopping)
        self.settle: Callable[[], bool] = lambda: True
        self.strict = False  # a failed pods listing raises (a --dry-run pass); else logged (the next scan lists again)
        self._pending: dict[str, _Pending] = {}
        self._running = 0
        self._cond = threading.Condition()

    # --- submissions -----------------------------------------------------------------------------

    def submit(self, policy: CompiledPolicy, trigger: AdmissionInput | None = None, *, counted: bool = False) -> None:
        """List the targets of ``policy`` (its ``trigger``'s request, or none for a scan) and queue them."""
        with self._cond:
            self._pending[policy.display_name] = _Pending((policy,), trigger, counted)
            self._cond.notify_all()

    def submit_drift(self, policies: Iterable[CompiledPolicy], *, counted: bool = False) -> None:
        """Re-admit every pod with these admission policies (drift)."""
        chosen = tuple(policies)
        if chosen:
            with self._cond:
                self._pending[DRIFT] = _Pending(chosen, None, counted)
                self._cond.notify_all()

    def pending(self) -> int:
        """Sweeps submitted and not started yet."""
        with self._cond:
            return len(self._pending)

    def busy(self) -> bool:
        """A sweep is waiting or running."""
        with self._cond:
            return bool(self._pending) or self._running > 0

    # --- sweeping --------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """The sweeper thread: sweep what is submitted until ``stop``."""
        while not stop.is_set():
            with self._cond:
                self._cond.wait_for(lambda: bool(self._pending) or stop.is_set(), 0.5)
            try:
                self.run_pending()
            except Exception:  # keep sweeping whatever one sweep does; logged with its stack
                log.exception("target sweep failed")

    def run_pending(self) -> int:
        """Sweep everything submitted so far, in this thread; the number of targets queued."""
        with self._cond:
            pending, self._pending = self._pending, {}
            self._running += 1
        try:
            loaded = self.loaded()
            return self._sweep(loaded, list(pending.values())) if loaded is not None and pending else 0
        finally:
            with self._cond:
                self._running -= 1

    def _sweep(self, loaded: LoadedPolicies, pending: list[_Pending]) -> int:
        # every list, once, with what each item may become: (listing, trigger, counted) per policy
        lists: dict[tuple[str, str, str], list[tuple[TargetListing | None, _Pending]]] = {}
        for item in pending:
            if item.trigger is None and item.policies and not item.policies[0].mutate_existing:
                lists.setdefault(("v1", "pods", ""), []).append((None, item))  # drift: every pod
                continue
            for listing in target_listings(item.policies[0]):
                lists.setdefault((listing.api_version, listing.resource, listing.namespace), []).append((listing, item))
        queued = 0
        if lists and not self.settle():
            return queued
        for (api_version, resource, namespace), wanted in lists.items():
            try:
                for page in self._pages(api_version, resource, namespace):
                    queued += self._queue_page(loaded, api_version, resource, page, wanted)
                    if not self.room():  # before the next page is read
                        return queued
            except ClusterError as ex:
                if self.strict and any(listing is None for listing, _ in wanted):
                    raise  # a --dry-run pass cannot report every pod: it fails (no half report)
                log.warning("cannot list targets", extra={"resource": f"{resource}.{api_version}", "error": str(ex)})
                for failed, item in wanted:
                    if failed is not None:
                        message = f"listing {resource}.{api_version}: {ex}"
                        self.unresolved(unresolved_target(item.policies[0], item.trigger, failed.where, message))
        return queued

    def _queue_page(
        self,
        loaded: LoadedPolicies,
        api_version: str,
        resource: str,
        page: list[dict[str, Any]],
        wanted: list[tuple[TargetListing | None, _Pending]],
    ) -> int:
        queued = counted = 0
        kind = loaded.all.options.schemas.kinds.kind_for(api_version, resource)
        for obj in page:
            obj.setdefault("apiVersion", api_version)
            obj.setdefault("kind", kind)
            work: Work = {}
            scanned = False
            for listing, item in wanted:
                if listing is None:  # drift
                    work.update({p.display_name: Task(p, obj=obj) for p in item.policies})
                elif accepts(loaded.all, listing, obj):
                    policy = item.policies[0]
                    target = Target(policy, obj, listing.sub_resource, item.trigger)
                    work[policy.display_name] = Task(policy, target, obj=obj)
                else:
                    continue
                scanned = scanned or item.counted
            if work:
                self.enqueue(TargetKey.of(api_version, resource, obj), work)
                queued += 1
                counted += scanned
        if counted:
            self.on_counted(counted)
        return queued

    def _pages(self, api_version: str, resource: str, namespace: str) -> Iterator[list[dict[str, Any]]]:
        """The objects of a resource, a page at a time: a synced cache of whole objects, else the API server."""
        cache = self.caches.existing(api_version, resource)
        if cache is not None and not cache.metadata_only and cache.synced.is_set() and not cache.overflowed:
            items = cache.items(namespace)
            for start in range(0, len(items), self.page_size):
                yield items[start : start + self.page_size]
            return
        for page in self.cluster.pages(api_version, resource, namespace, limit=self.page_size):
            items = page.get("items") or []
            for item in items:
                (item.get("metadata") or {}).pop("managedFields", None)
            yield items
