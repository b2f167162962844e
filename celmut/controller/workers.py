"""The controller's workers: take a target off the queue, reconcile it, record the outcome, and
requeue, retry or forget it."""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from celmut.controller import traced
from celmut.controller.freshness import with_newer_copy
from celmut.controller.reconcile import Outcome, Reconciler, TargetKey, Work
from celmut.controller.report import Report
from celmut.controller.status import ControllerMetrics
from celmut.controller.workqueue import WorkQueue
from celmut.kube.client import ClusterError

if TYPE_CHECKING:
    from celmut.service.tracing import Tracing

log = logging.getLogger("celmut.controller")


class Workers:
    """Reconciles queued targets, one per call of :meth:`process_one`, from any number of threads."""

    def __init__(
        self,
        queue: WorkQueue[TargetKey, Work],
        reconciler: Reconciler,
        metrics: ControllerMetrics,
        report: Report,
        *,
        dry_run: bool,
        is_leader: Callable[[], bool],
        stop: threading.Event,
    ) -> None:
        self.queue = queue
        self.reconciler = reconciler
        self.metrics = metrics
        self.report = report
        self.dry_run = dry_run
        self.is_leader = is_leader
        self.stop = stop
        self.processed = 0
        self._lock = threading.Lock()
        self.tracing: Tracing | None = None  # a reconcile span per target when tracing is on
        # the reports: told of each target before its reconcile and after it, whatever it did
        self.on_started: Callable[[TargetKey], None] | None = None
        self.on_finished: Callable[[Outcome], None] | None = None

    def process_one(self, timeout: float = 0.5) -> Outcome | None:
        item = self.queue.get(timeout)
        if item is None:
            return None
        key, work = item
        try:
            return self._process(key, work)
        finally:
            # last, as client-go's ``defer queue.Done(key)``: idle() is not true before this target's counts,
            # report and retry are in place (a test waiting for idle then reads them)
            self.queue.done(key)

    def _process(self, key: TargetKey, work: Work) -> Outcome:
        started_ns = time.time_ns()
        if self.on_started is not None:
            self.on_started(key)
        outcome: Outcome | None = None
        try:
            outcome = self.reconciler.reconcile(key, work)
        except ClusterError as ex:
            outcome = Outcome(key, "failed", message=str(ex), retry_after=1.0)
        finally:
            if self.on_finished is not None:  # even when the reconcile raised: nothing stays held for it
                self.on_finished(outcome if outcome is not None else Outcome(key, "failed"))
        with self._lock:  # workers run in parallel threads
            self.processed += 1
        self.metrics.observe(outcome)
        self.report.record(outcome)
        if self.tracing is not None:
            traced.record(self.tracing, outcome, started_ns)
        if outcome.written is not None:  # work waiting for this target, or queued again, starts from this copy
            work = with_newer_copy(work, outcome.written)
            self.queue.update_waiting(key, functools.partial(with_newer_copy, obj=outcome.written))
        if outcome.action == "failed":
            log.warning("target not mutated", extra={"target": str(key), "error": outcome.message})
        elif outcome.action in ("patched", "evicted"):
            log.info(
                "target %s",
                outcome.action,
                extra={"target": str(key), "policies": sorted({c.policy for c in outcome.changes})},
            )
        if self.dry_run or outcome.retry_after is None:
            self.queue.forget(key)
        elif outcome.action == "failed":  # counted, with backoff, until max retries
            if not self.queue.retry(key, work):
                log.error("giving up on target", extra={"target": str(key), "error": outcome.message})
        else:  # waiting for a replacement pod, a budget, a leader: look again later, without giving up
            self.queue.add_after(key, work, outcome.retry_after)
        return outcome

    def loop(self) -> None:
        """A worker thread: process targets while leading, until stopped."""
        while not self.stop.is_set():
            if not self.is_leader():
                self.stop.wait(0.2)
                continue
            self.process_one()
