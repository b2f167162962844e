"""The controller's reporting thread: background scans in, coalesced report writes out, metrics.

Every ``interval`` seconds the leader scans what is due — the policies that are new or changed, or all
of them on the periodic scan, and the resources that changed since the last pass (each once) — then
writes the reports whose results changed, at most ``max_writes`` a pass (the rest wait for the next).
So a burst of changes to one resource is one write, and a scan that finds what the last one found is
none. Standbys write nothing. ``celmut_policy_report_*`` metrics: writes by action, write errors,
results by outcome, reports waiting to be written.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge

from celmut.controller.reconcile import DRIFT, Outcome, TargetKey
from celmut.controller.reporting import BackgroundReports
from celmut.controller.violation_events import ViolationEvents
from celmut.controller.workqueue import TokenBucket
from celmut.kube.admission_errors import SELECTOR, parse_event
from celmut.kube.cache import WatchedCache
from celmut.kube.client import Cluster, ClusterError, NotFound
from celmut.kube.event_recorder import EventRecorder
from celmut.kube.lookup import CacheSet
from celmut.kube.report_writer import FlushStats, ReportWriter, report_pages
from celmut.runtime import AdmissionEngine
from celmut.runtime.report_objects import MAX_RESULTS

log = logging.getLogger("celmut.reports")

#: Kyverno present: celmut's reports are named ``celmut-<uid>`` next to Kyverno's ``<uid>``.
PREFIX_NEXT_TO_KYVERNO = "celmut-"
ABSENT_RECHECK = 30  # passes between two looks for report CRDs that were not served
MAX_POSTPONE = 600.0  # seconds a due full scan waits at most for a mutation pass to end


@dataclass
class ReportingConfig:
    """``--background-reports`` and its knobs (the chart's ``reports.*`` values)."""

    background: bool = True  # write background-scan reports (Kyverno's features.backgroundScan / reporting)
    admission: bool = True  # report admission-only policies from admissions (Kyverno's features.admissionReports)
    interval: float = 2.0  # seconds between passes (how long changes coalesce)
    max_writes: int = 200  # report writes per pass
    max_results: int = MAX_RESULTS  # results per report
    violation_events: bool = True  # PolicyViolation Events when a scan finds a resource failing a policy


class ReportMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.writes = Counter(
            "celmut_policy_report_writes",
            "Policy report writes by action: created, updated, deleted",
            ["action"],
            registry=registry,
        )
        self.write_errors = Counter(
            "celmut_policy_report_write_errors",
            "Policy report writes the API server refused, by status",
            ["status"],
            registry=registry,
        )
        self.results = Counter(
            "celmut_policy_report_results",
            "Report results computed, by result and process",
            ["result", "process"],
            registry=registry,
        )
        self.pending = Gauge(
            "celmut_policy_report_pending", "Reports whose results changed and are not written yet", registry=registry
        )

    def on_write(self, action: str, result: str) -> None:
        if action == "error":
            self.write_errors.labels(result).inc()
        else:
            self.writes.labels(action).inc()


class ReportLoop:
    """Owns the writer and the background scanner; ``run`` is the reporting thread."""

    def __init__(
        self,
        cluster: Cluster,
        caches: CacheSet,
        config: ReportingConfig,
        registry: CollectorRegistry,
        *,
        is_leader: Callable[[], bool],
        kyverno_present: Callable[[], bool] = lambda: False,
        events: EventRecorder | None = None,  # the controller's Events: PolicyViolation for what a scan finds failing
        writes: TokenBucket | None = None,  # the controller's write budget (--rate), shared with its patches
        writers: int = 1,  # threads writing reports at once
        mutating: Callable[[], bool] = lambda: False,  # the controller is patching existing objects (a pass)
        clock: Callable[[], float] = time.monotonic,
        # the existing policies other celmut installs serve (their results are theirs); None: celmut alone
        others: Callable[[], frozenset[str] | None] = lambda: None,
    ) -> None:
        self.others = others
        self.mutating = mutating
        self.clock = clock
        self._postponed_since: float | None = None
        self.writes = writes
        self.writers = writers
        self.config = config
        self.cluster = cluster
        self.metrics = ReportMetrics(registry)
        self.kyverno_present = kyverno_present
        self.writer = ReportWriter(
            cluster, prefix=self._prefix(), limit=config.max_results, on_write=self.metrics.on_write
        )
        self.metrics.pending.set_function(self.writer.pending)
        self.violations = ViolationEvents(events) if config.violation_events and events is not None else None
        self.scanner = BackgroundReports(
            caches,
            self.writer,
            on_result=lambda result, process: self.metrics.results.labels(result, process).inc(),
            background=config.background,
            admission=config.admission,
            violations=self.violations,
        )
        self.is_leader = is_leader
        self._due: set[str] | None = set()  # policy keys to scan; None: all
        self._scanning = False  # a pass took a due scan and has not finished writing what it found
        self._unwritten = False  # a pass scanned, and left the writes to the writing thread
        self._adopted = False
        self._absent_passes = 0  # passes since the report CRDs were found not served
        self._lock = threading.Lock()
        self._error_events: WatchedCache | None = None  # the webhook's admission errors (leader only)

    def _prefix(self) -> str:
        return PREFIX_NEXT_TO_KYVERNO if self.kyverno_present() else ""

    def policies_loaded(self, engine: AdmissionEngine) -> None:
        """After each reload: the new or changed policies are scanned on the next pass."""
        changed = self.scanner.load(engine, self.others())
        if changed:
            self.scan_due(changed)

    def scan_due(self, keys: list[str] | None = None) -> None:
        """Scan ``keys`` (all when None) on the next pass."""
        with self._lock:
            if keys is None or self._due is None:
                self._due = None
            else:
                self._due.update(keys)

    def scan_pending(self) -> bool:
        """A scan is due, or running: the pass that took it has not yet written what it found (or, when a
        thread of its own writes, the writes it left have not all returned)."""
        with self._lock:
            if self._due is None or bool(self._due) or self._scanning:
                return True
            unwritten = self._unwritten
        if unwritten and self.writer.pending() == 0:
            with self._lock:
                self._unwritten = False
            return False
        return unwritten

    def pass_once(self, *, write: bool = True) -> FlushStats:
        """One pass: adopt the stored reports (first time), scan what is due, write what changed (unless
        ``write`` is False: the writing thread does, :meth:`write_once`)."""
        if not self._adopted:
            if self._absent_passes % ABSENT_RECHECK:  # the report CRDs were not served: look again later
                self._absent_passes += 1
                return FlushStats()
            try:
                for page in report_pages(self.cluster):
                    self.writer.adopt(page)
                    self.scanner.adopted(page)
            except NotFound:
                if not self._absent_passes:
                    log.warning("no policy reports: the wgpolicyk8s.io CRDs are not installed")
                self._absent_passes += 1
                return FlushStats()
            except ClusterError as ex:
                log.warning("cannot list policy reports", extra={"error": str(ex)})
                return FlushStats()
            self._absent_passes = 0
            self._adopted = True
            self.writer.keep_policies(self.scanner.keys(), self.others())  # reports of policies deleted meanwhile
            self.scan_due()
        self.writer.set_prefix(self._prefix())
        postpone = self._postpone_scan()
        with self._lock:
            due, self._due = (set(), self._due) if postpone else (self._due, set())
            self._scanning = due is None or bool(due)
        try:
            if due is None or due:
                _, unfinished = self.scanner.scan(None if due is None else sorted(due))
                if unfinished:  # a resource not listed yet (or forbidden): scanned again next pass
                    self.scan_due(unfinished)
            self.scanner.rescan_changed()
            self._admission_errors()
            stats = self.write_once(limited=True) if write else FlushStats()
        finally:
            with self._lock:
                self._unwritten = self._unwritten or (self._scanning and not write)
                self._scanning = False
        return stats

    def _postpone_scan(self) -> bool:
        """Whether a due full scan waits: while the controller's mutation pass patches existing objects (at
        most :data:`MAX_POSTPONE` seconds), what the scan would evaluate now is about to change. The objects
        it patches are evaluated as the watch delivers them, once, after their patch, and the scan that
        follows does not evaluate them again (:class:`~celmut.controller.report_state.Rescanned`): it also
        waits for the watch to bring the last of them, however far it lags behind the workers."""
        with self._lock:
            due = self._due is None or bool(self._due)
        if not due or not (self.mutating() or self.scanner.awaiting_rescans()):
            self._postponed_since = None
            return False
        now = self.clock()
        if self._postponed_since is None:
            self._postponed_since = now
            self.scanner.rescanned.start()
        if now - self._postponed_since < MAX_POSTPONE:
            return True
        self._postponed_since = None
        return False

    def write_once(self, *, stop: threading.Event | None = None, limited: bool = False) -> FlushStats:
        """Write the reports whose results changed, each write paced by the controller's write budget
        (``--rate``, by ``writers`` threads; ``limited``: at most ``max_writes``)."""
        pace = None
        if self.writes is not None:
            bucket, halt = self.writes, stop or threading.Event()
            pace = functools.partial(bucket.take, halt)
        cap = self.config.max_writes if limited else None
        return self.writer.flush(cap, pace=pace, concurrency=self.writers)

    def _admission_errors(self) -> None:
        """The webhook's admission errors, from the Events it writes (a label-selected watch)."""
        if not self.config.admission:
            return
        if self._error_events is None:
            self._error_events = WatchedCache(self.cluster, "v1", "events", label_selector=SELECTOR).start()
            self._error_events.wait_synced(5.0)
        errors = [e for e in map(parse_event, self._error_events.items()) if e is not None]
        if errors:
            self.scanner.admission_errors(sorted(errors, key=lambda e: e.time))

    def patch_started(self, key: TargetKey) -> None:
        """A worker starts on a mutateExisting target (see :meth:`BackgroundReports.patch_started`)."""
        self.scanner.patch_started((key.api_version, key.resource, key.namespace, key.name))

    def patch_finished(self, outcome: Outcome) -> None:
        """A worker is done with a target: if it patched it, the target's report gets the policies'
        results (kept, like every result, until the next pass writes them)."""
        key = outcome.key
        patched = outcome.action in ("patched", "evicted") and outcome.written is not None
        policies = {c.policy for c in outcome.changes if c.mutation != DRIFT} if patched else set()
        self.scanner.patch_finished(
            (key.api_version, key.resource, key.namespace, key.name),
            outcome.written if policies else None,
            key.resource,
            policies,
        )

    def stop(self) -> None:
        if self._error_events is not None:
            self._error_events.stop()

    def run(self, stop: threading.Event) -> None:
        """The reporting thread (leader only): scans every ``interval``; a second thread writes what they
        found, paced, while the next scans run (a scan of 100,000 pods does not hold the writes back)."""
        writing = threading.Thread(target=self._write_loop, args=(stop,), name="celmut-report-writes", daemon=True)
        writing.start()
        while not stop.wait(self.config.interval):
            if not self.is_leader():
                self._adopted = False  # a new leader starts from what is stored
                continue
            try:
                self.pass_once(write=False)
            except Exception:  # keep reporting alive whatever one pass does; logged with its stack
                log.exception("policy report pass failed")
        writing.join(timeout=5)
        self.stop()

    def _write_loop(self, stop: threading.Event) -> None:
        while not stop.wait(self.config.interval):
            if not self.is_leader() or not self._adopted:
                continue
            try:
                self.write_once(stop=stop)
            except Exception:  # keep writing whatever one flush does; logged with its stack
                log.exception("policy report writes failed")
