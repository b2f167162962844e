"""What sends the controller work: watches on the resources that trigger mutateExisting policies, and
scans (at start, on a policy change, periodically, for a new leader) of every policy's targets."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from celmut.compile.compiled import CompiledPolicy
from celmut.controller.reconcile import LoadedPolicies, TargetKey, Work
from celmut.controller.status import ControllerMetrics
from celmut.controller.sweeps import Sweeper
from celmut.controller.triggers import OwnWrites, TriggerHandler, drift_policies, enqueue_scan, trigger_resources
from celmut.controller.unresolved import UnresolvedTargets
from celmut.kube.lookup import CacheSet
from celmut.runtime.mutate_existing import lists_targets

log = logging.getLogger("celmut.controller")


class TriggerWatch:
    """Turns stored changes and scans into queued work (``enqueue``), counting them in ``metrics``."""

    def __init__(
        self,
        caches: CacheSet,
        loaded: Callable[[], LoadedPolicies | None],
        enqueue: Callable[[TargetKey, Work], None],
        metrics: ControllerMetrics,
        own_writes: OwnWrites,
        unresolved_targets: UnresolvedTargets,
        processed: Callable[[], int],
        sweeper: Sweeper,
    ) -> None:
        self.caches = caches
        self.loaded = loaded
        self.enqueue = enqueue
        self.metrics = metrics
        self.own_writes = own_writes
        self.unresolved_targets = unresolved_targets
        self.processed = processed
        self.sweeper = sweeper
        sweeper.on_counted = self._counted
        self._watched: set[tuple[str, str]] = set()
        self.last_scan = (0, 0)  # (processed count when the last scan was queued, targets it queued)

    def watch(self, policies: list[CompiledPolicy]) -> None:
        """Watch every resource that triggers one of ``policies`` and is not watched yet."""
        for api_version, resource in sorted(trigger_resources(policies) - self._watched):
            self._watch_triggers(api_version, resource)

    def _watch_triggers(self, api_version: str, resource: str) -> None:
        cache = self.caches.cache(api_version, resource, wait=False)
        if cache is None:
            log.warning("cannot watch trigger resource", extra={"resource": f"{resource}.{api_version}"})
            return
        handler = TriggerHandler(
            api_version,
            resource,
            self.loaded,
            self._trigger,
            self.own_writes,
            functools.partial(self.caches.synced_now, api_version, resource),
            self.unresolved_targets,
            sweep=self.sweeper.submit,
        )
        self.own_writes.track(api_version, resource)
        cache.add_handler(handler)
        self._watched.add((api_version, resource))

    def _trigger(self, key: TargetKey, work: Work) -> None:
        self.metrics.triggers.inc()
        self.enqueue(key, work)

    def scan(self, names: list[str] | None = None, reason: str = "periodic", *, pods: bool = True) -> int:
        """Queue every target of the named policies (all when None): those an expression returns now,
        the listed ones (and, unless ``pods=False``, the pods drift policies re-admit) by a sweep. The
        number queued now; :meth:`scan_progress` counts the sweep's too."""
        loaded = self.loaded()
        if loaded is None:
            return 0
        policies = [p for p in loaded.all.policies if names is None or p.display_name in names]
        self.metrics.scans.labels(reason).inc()
        self.last_scan = (self.processed(), 0)
        count = enqueue_scan(loaded, self.enqueue, policies, self.unresolved_targets)
        self._counted(count)
        for policy in policies:
            if lists_targets(policy):
                self.sweeper.submit(policy, counted=True)
        if pods and loaded.drift is not None:
            self.sweeper.submit_drift(drift_policies(policies), counted=True)
        log.info("scan queued", extra={"reason": reason, "targets": count})
        return count

    def _counted(self, count: int) -> None:
        started_at, total = self.last_scan
        self.last_scan = (started_at, total + count)

    def scan_progress(self) -> tuple[int, int]:
        """(targets processed since the last scan was queued, targets it queued so far)."""
        started_at, total = self.last_scan
        return min(self.processed() - started_at, total), total
