"""The background controller: policies in, a de-duplicated work queue, workers that patch or evict.

:class:`Controller` wires parts with one job each: ``policy_upkeep.py`` (the policies in service, and
what the leader keeps for them), ``trigger_watch.py`` (watches and scans that queue work),
``workqueue.py``, ``workers.py`` over ``reconcile.py`` (patches, pod replacement), ``leader.py``,
and the status (``status.py`` metrics, ``report.py``).

Threads: the policy reload poll (a changed or new policy is scanned at once), the periodic scan,
watch threads (from :mod:`celmut.kube`) that turn stored changes into triggers, ``workers``
reconcile threads, leader election, the status endpoint and, when configured, the upkeep of the
webhook's TLS (:mod:`celmut.kube.tls_manager`). Only the leader writes: workers idle on
a standby, and a new leader starts with a full scan. ``--dry-run`` is one pass that writes nothing
and returns the report.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from celmut import heap
from celmut.controller.freshness import newest_known, with_newer_copy
from celmut.controller.generator import AdmissionPolicyGenerator
from celmut.controller.leader import LeaderElector
from celmut.controller.mutation_events import MutationEvents
from celmut.controller.policy_upkeep import PolicyUpkeep
from celmut.controller.policy_validation import PolicyValidationConfig, PolicyValidationWriter
from celmut.controller.reconcile import (
    COMPONENT,
    EvictionPacer,
    LoadedPolicies,
    Outcome,
    Reconciler,
    TargetKey,
    Work,
    merge_work,
)
from celmut.controller.report import Progress, Report, ReportWriter
from celmut.controller.report_loop import ReportingConfig, ReportLoop
from celmut.controller.reported_policies import admission_reported_resources
from celmut.controller.status import ControllerMetrics
from celmut.controller.sweeps import Sweeper
from celmut.controller.trigger_watch import TriggerWatch
from celmut.controller.triggers import OwnWrites, trigger_resources
from celmut.controller.unreadable import UnreadableResources
from celmut.controller.unresolved import UnresolvedTargets
from celmut.controller.webhook_rules import WebhookRulesConfig, WebhookRulesWriter
from celmut.controller.workers import Workers
from celmut.controller.workqueue import TokenBucket, WorkQueue
from celmut.kube.client import Cluster, NotFound
from celmut.kube.event_recorder import DEFAULT_OMITTED, MAX_QUEUED, PER_OBJECT, EventRecorder
from celmut.kube.global_context import GlobalContextStore
from celmut.kube.kyverno_exceptions import KyvernoExceptions
from celmut.kube.lookup import CacheSet, ClusterLookup
from celmut.kube.owners import OwnerOptOut
from celmut.kube.policy_source import ClusterPolicySource
from celmut.kube.registry import RegistryImages
from celmut.kube.tls_manager import TlsConfig, TlsManager
from celmut.runtime import AdmissionEngine
from celmut.service import tracing
from celmut.service.lookup_needs import METADATA_RESOURCES, looked_up, metadata_only_resources
from celmut.service.settings import ServiceSettings
from celmut.service.store import PolicyStore

log = logging.getLogger("celmut.controller")

RECENT_OUTCOMES = 1000  # targets whose last outcome a running controller keeps (the rest are counted)
TRIM_SECONDS = 30.0  # how often freed memory is given back to the system (heap.trim)


def workers_for(rate: float) -> int:
    """Reconcile threads for a write rate: a worker spends most of a pass waiting for its PATCH (a few
    milliseconds on a real API server), so a rate of 1,000/s needs ~20 requests in flight (client-go's model:
    QPS/Burst limit the client, the controller's concurrency is its workers). 2 at most rates below 100."""
    return max(2, min(32, math.ceil(rate / 50)))


def report_writers_for(rate: float) -> int:
    """Threads writing reports for a write rate: one per ~150 writes a second, at most 8."""
    return max(1, min(8, math.ceil(rate / 150)))


def default_identity() -> str:
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class ControllerConfig:
    """``celmut controller``'s settings: the ones every surface shares (``service``, with the
    engine's), and the controller's own: pacing, scans, leader election, what the leader keeps."""

    service: ServiceSettings = field(default_factory=ServiceSettings)
    dry_run: bool = False
    rate: float = 100.0  # writes per second (token bucket): patches and report writes together
    burst: int | None = None
    scan_interval: float = 3600.0  # seconds; 0 disables the periodic scan
    workers: int = 0  # reconcile threads; 0: sized from rate (workers_for)
    evictions_per_minute: float = 60.0
    eviction_settle_seconds: float = 300.0
    allow_immediate_restart: bool = False  # PodMutation restartPolicy immediate may evict (restart_policy.py)
    recheck_seconds: float = 10.0  # how soon a pod waiting for its workload's replacement is looked at again
    reload_interval: float = 2.0
    leader_elect: bool = False
    lease_namespace: str = "celmut"
    lease_name: str = "celmut-controller"
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    sync_timeout: float = 60.0
    tls: TlsConfig | None = None  # the webhook TLS the controller keeps valid (None: cert-manager or manual)
    kyverno_exceptions_namespace: str = ""  # where to keep the PolicyExceptions that make Kyverno skip them
    page_size: int = 500  # objects per list page of a sweep (targets, drifting pods: limit/continue)
    webhook_rules: WebhookRulesConfig | None = None  # the leader keeps the webhook configuration's rules
    policy_validation: PolicyValidationConfig | None = None  # the leader keeps the policy validating webhook
    reports: ReportingConfig = field(default_factory=ReportingConfig)  # background PolicyReports
    events: str = PER_OBJECT  # each Event on its own object (per-object, Kyverno's) or folded per policy (aggregated)
    omit_events: frozenset[str] = frozenset(DEFAULT_OMITTED)  # --omitEvents: Kyverno's reasons not posted
    max_queued_events: int = MAX_QUEUED  # --maxQueuedEvents: Events waiting beyond this are dropped


class Controller:
    """The controller's parts, wired: :class:`PolicyUpkeep` (the policies in service),
    :class:`TriggerWatch` (watches and scans that queue work), the :class:`WorkQueue`,
    :class:`Workers` over a :class:`Reconciler` (patches, and pod replacement paced by an
    :class:`EvictionPacer`), leader election, and the status (metrics and report)."""

    def __init__(self, config: ControllerConfig, cluster: Cluster) -> None:
        self.config = config
        self.cluster = cluster
        # Pods and their owners are kept as metadata (what lookups and selectors read) unless a policy needs
        # them whole; a running controller still watches them whole: its handlers evaluate what changed
        self.caches = CacheSet(
            cluster,
            max_caches=64,
            sync_timeout=config.sync_timeout,
            metadata_only=METADATA_RESOURCES,
            deliver_whole=not config.dry_run,
        )
        self.lookup = ClusterLookup(self.caches)
        # GlobalContextEntry data; their status is written by the leader while Kyverno is absent.
        self.global_context = GlobalContextStore(
            cluster, config.service.http_policy, write_status=self._owns_entry_status
        )
        self.images = RegistryImages(config.service.registry, cluster)
        self.metrics = ControllerMetrics()
        self.metrics.registry.register(self.global_context)
        # a --dry-run reports every target; a running controller the last few (memory: docs/operations/sizing.md)
        self.report = Report(keep=None if config.dry_run else RECENT_OUTCOMES)
        opt_out = OwnerOptOut(self.caches, config.service.opt_out_label)
        self.policies = PolicyUpkeep(
            config, cluster, self.lookup, opt_out, self.metrics, self.global_context, self.images
        )
        self.queue: WorkQueue[TargetKey, Work] = WorkQueue(merge_work)
        self.metrics.queue_depth.set_function(self.queue.depth)
        self.own_writes = OwnWrites()
        self.pacer = EvictionPacer(config.evictions_per_minute, config.eviction_settle_seconds)
        # --rate: one budget for the controller's writes (patches, report writes), as client-go's QPS limits a client
        self.writes = TokenBucket(config.rate, config.burst)
        self.worker_count = config.workers or workers_for(config.rate)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.elector = self._elector() if config.leader_elect and not config.dry_run else None
        # the Events of the scans and of mutateExisting, written on a thread of their own (none in a dry run)
        self.events = None if config.dry_run else self._event_recorder()
        self.reconciler = self._reconciler()
        self.workers = Workers(
            self.queue,
            self.reconciler,
            self.metrics,
            self.report,
            dry_run=config.dry_run,
            is_leader=self.is_leader,
            stop=self._stop,
        )
        self.unresolved_targets = UnresolvedTargets(
            cluster,
            lambda: self._loaded,
            self.metrics,
            self.report,
            events=lambda: not config.dry_run and self.is_leader(),
        )
        # targets listed by resource rules (and drifting pods), a page at a time, into a bounded queue
        self.sweeper = Sweeper(
            self.caches,
            cluster,
            lambda: self._loaded,
            self.enqueue,
            unresolved=self.unresolved_targets,
            page_size=config.page_size,
        )
        self.sweeper.room = lambda: self.queue.wait_for_room(self.queue_bound, self._stop)
        # a sweep lists after the writes of the work queued before it: its copies are not older than them
        self.sweeper.settle = lambda: self.queue.wait_for_earlier(self._stop)
        self.triggers = self._trigger_watch()
        # policies naming a resource the controller may not read (RBAC) say so (leader only)
        self.unreadable = UnreadableResources(cluster) if not config.dry_run else None
        # Self-managed webhook TLS: the leader keeps the webhook's certificates valid.
        self.tls = TlsManager(cluster, config.tls) if config.tls is not None and not config.dry_run else None
        self.tracing = tracing.from_environment("celmut-controller")  # None: off (OTEL_* variables)
        # Background PolicyReports (controller/report_loop.py): the leader scans and writes them.
        self.reports = self._report_loop()
        self.workers.tracing = self.tracing
        if self.reports is not None:  # Kyverno reports on the targets its mutateExisting patches
            self.workers.on_started = self.reports.patch_started
            self.workers.on_finished = self.reports.patch_finished

    def _trigger_watch(self) -> TriggerWatch:
        return TriggerWatch(
            self.caches,
            lambda: self._loaded,
            self.enqueue,
            self.metrics,
            self.own_writes,
            self.unresolved_targets,
            lambda: self.workers.processed,
            self.sweeper,
        )

    def _report_loop(self) -> ReportLoop | None:
        reports = self.config.reports
        if not (reports.background or reports.admission) or self.config.dry_run:
            return None
        return ReportLoop(
            self.cluster,
            self.caches,
            reports,
            self.metrics.registry,
            is_leader=self.is_leader,
            kyverno_present=self._kyverno_present,
            events=self.events,
            writes=self.writes,
            writers=report_writers_for(self.config.rate),
            mutating=lambda: self.sweeper.busy() or not self.queue.idle(),
            others=self._policies_of_other_installs,
        )

    def _policies_of_other_installs(self) -> frozenset[str] | None:
        """The report keys of the existing policies a fixed ``--policy-selector`` leaves to another celmut
        install (None while celmut is alone: no selector, or no cluster policies)."""
        source = self.policy_source
        ownership = source.ownership if source is not None else None
        if source is None or ownership is None or not ownership.shared:
            return None
        return ownership.keys_of_others(source.policies())

    def _elector(self) -> LeaderElector:
        config = self.config
        return LeaderElector(
            self.cluster,
            config.lease_namespace,
            config.lease_name,
            config.identity,
            lease_duration=config.lease_duration,
            renew_deadline=config.renew_deadline,
            retry_period=config.retry_period,
            on_change=self._leadership_changed,
        )

    def _event_recorder(self) -> EventRecorder:
        config = self.config
        return EventRecorder(
            self.cluster,
            mode=config.events,
            omitted=config.omit_events,
            max_queued=config.max_queued_events,
            on_result=lambda reason, result: self.metrics.events.labels(reason, result).inc(),
        )

    def _reconciler(self) -> Reconciler:
        config = self.config
        return Reconciler(
            self.cluster,
            lambda: self._loaded,
            self.current,
            dry_run=config.dry_run,
            writes=self.writes,
            evictions=self.pacer,
            recheck_seconds=config.recheck_seconds,
            is_leader=self.is_leader,
            own_writes=self.own_writes,
            stop=self._stop,
            events=MutationEvents(self.events, COMPONENT) if self.events is not None else None,
            newest=functools.partial(newest_known, self.caches),
        )

    # --- the parts' state, where callers (the command, status, tests) look for it -----------------

    @property
    def _loaded(self) -> LoadedPolicies | None:
        return self.policies.loaded

    @property
    def store(self) -> PolicyStore:
        return self.policies.store

    @property
    def policy_source(self) -> ClusterPolicySource | None:
        return self.policies.policy_source

    @property
    def kyverno_exceptions(self) -> KyvernoExceptions | None:
        return self.policies.kyverno_exceptions

    @property
    def generator(self) -> AdmissionPolicyGenerator | None:
        return self.policies.generator

    @property
    def webhook_rules(self) -> WebhookRulesWriter | None:
        return self.policies.webhook_rules

    def sync_webhook_rules(self) -> None:
        self.policies.sync_webhook_rules()

    @property
    def policy_validation(self) -> PolicyValidationWriter | None:
        return self.policies.policy_validation

    @property
    def processed(self) -> int:
        return self.workers.processed

    # --- state -----------------------------------------------------------------------------------

    def _owns_entry_status(self) -> bool:
        """Whether this instance writes GlobalContextEntry status: the leader, unless Kyverno (which
        writes it itself) is detected; never in a dry run, nor without the cluster's policies to tell."""
        ownership = self.policy_source.ownership if self.policy_source is not None else None
        return not self.config.dry_run and self.is_leader() and ownership is not None and not ownership.kyverno.detected

    def _kyverno_present(self) -> bool:
        ownership = self.policy_source.ownership if self.policy_source is not None else None
        return ownership is not None and ownership.kyverno.detected

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    @property
    def queue_bound(self) -> int:
        """Targets a sweep lets wait in the queue (with their objects) before it reads the next page."""
        return 2 * self.config.page_size

    def current(self, key: TargetKey) -> dict[str, Any] | None:
        """The freshest copy known of a target queued without one: a watched cache of whole objects,
        else a GET."""
        cache = self.caches.cache(key.api_version, key.resource)
        if cache is not None and not cache.absent and not cache.overflowed and not cache.metadata_only:
            return cache.get(key.namespace, key.name)
        try:
            return self.cluster.get(key.api_version, key.resource, key.namespace, key.name)
        except NotFound:
            return None

    def not_ready(self) -> str:
        if self.store.engine is None:
            return "policies not loaded"
        if self.policy_source is not None and not self.policy_source.synced():
            return "cluster policies not synced"
        if not self.caches.synced():
            return "watches not synced"
        return ""

    def enqueue(self, key: TargetKey, work: Work) -> None:
        self.queue.add(key, work)

    # --- policies and scans ----------------------------------------------------------------------

    def reload(self, *, force: bool = False) -> list[str]:
        """Reload policies; the names of policies that are new or changed (they are scanned)."""
        changed = self.policies.reload(self.is_leader, force=force)
        if changed is None:
            return []
        assert self._loaded is not None
        # before the reports and triggers watch (and create) the caches
        self.caches.set_metadata_only(self._metadata_resources(self._loaded.all))
        if self.reports is not None:
            self.reports.policies_loaded(self._loaded.all)
        self.triggers.watch(self._loaded.all.policies)
        return changed

    def _metadata_resources(self, engine: AdmissionEngine) -> frozenset[tuple[str, str]]:
        """What is cached as metadata: pods and owners, unless a lookup reads them whole, changes to them
        are triggers (an UPDATE's oldObject), or a policy is reported from their admissions (same)."""
        whole = trigger_resources(engine.policies)
        if self.reports is not None and not self.config.dry_run:
            whole |= admission_reported_resources(engine, self.config.reports)
        return metadata_only_resources(engine.policies) - whole

    def scan(self, names: list[str] | None = None, reason: str = "periodic", *, pods: bool = True) -> int:
        """Queue every target of the named policies (all when None); see :meth:`TriggerWatch.scan`."""
        return self.triggers.scan(names, reason, pods=pods)

    def scan_progress(self) -> tuple[int, int]:
        """(targets processed since the last scan was queued, targets it queued)."""
        return self.triggers.scan_progress()

    def report_unreadable(self) -> None:
        """The leader states on each policy whether the controller may read what it names."""
        loaded = self._loaded
        if self.unreadable is not None and loaded is not None and self.is_leader():
            self.unreadable.report(loaded.all.policies, self.caches.unreadable(), self.policy_source)

    def _leadership_changed(self, leading: bool) -> None:
        self.metrics.leader.set(1 if leading else 0)
        if leading:
            self.policies.sync_kyverno_exceptions()
            self.policies.sync_admission_policies()
            self.policies.sync_webhook_rules()
            self.policies.sync_policy_validation()
            self.scan(reason="leader")

    # --- workers ---------------------------------------------------------------------------------

    def process_one(self, timeout: float = 0.5) -> Outcome | None:
        return self.workers.process_one(timeout)

    def _reload_loop(self) -> None:
        next_scan = time.monotonic() + self.config.scan_interval if self.config.scan_interval > 0 else None
        next_trim = time.monotonic() + TRIM_SECONDS
        while not self._stop.wait(self.config.reload_interval):
            try:
                changed = self.reload()
                self.global_context.flush_status()  # entries' outcomes not written before (standby, start)
                self.report_unreadable()
                if changed and self.is_leader():
                    self.scan(changed, reason="policy")
                if next_scan is not None and time.monotonic() >= next_scan:
                    next_scan = time.monotonic() + self.config.scan_interval
                    if self.is_leader():
                        self.scan(reason="periodic")
                        if self.reports is not None:
                            self.reports.scan_due()
                self.reconciler.evaluations, evaluations = 0, self.reconciler.evaluations
                self.metrics.evaluations.inc(evaluations)
                if time.monotonic() >= next_trim:  # what a pass freed goes back to the system
                    next_trim = time.monotonic() + TRIM_SECONDS
                    heap.trim()
            except Exception:  # keep the controller alive whatever a reload does; logged with its stack
                log.exception("policy reload failed")

    # --- lifecycle -------------------------------------------------------------------------------

    def _start_watches(self) -> None:
        if self.policy_source is not None:
            self.policy_source.start()
            self.policy_source.wait_synced(self.config.sync_timeout)
        self.global_context.start().wait_ready(self.config.sync_timeout)  # entries' data before the first scan
        pods = self.caches.cache("v1", "pods", wait=False)
        if pods is not None:
            pods.add_handler(self.pacer.observe)
            pods.add_handler(self._newer_pod)

    def _newer_pod(self, event: str, pod: dict[str, Any], _old: dict[str, Any] | None = None) -> None:
        """Pod watch handler: work waiting for the pod takes the version just delivered (whole: the running
        controller's pods watch delivers whole objects even where it keeps their metadata only)."""
        if event != "DELETED":
            key = TargetKey.of("v1", "pods", pod)
            self.queue.update_waiting(key, functools.partial(with_newer_copy, obj=pod))

    def start(self) -> Controller:
        heap.tune()  # a controller is a long-running process holding large caches
        self._start_watches()
        self.reload(force=True)
        self.caches.cache("v1", "pods")  # wait for the first list before scanning
        outcome_errors = self.store.last_errors
        for error in outcome_errors:
            log.error("invalid policy: %s", error)
        if self.elector is not None:
            self.elector.start()
        else:
            self.metrics.leader.set(1)
            self.scan(reason="start")
        heap.settle()  # the listed objects and compiled policies are long-lived
        targets: list[Callable[[], None]] = [self._reload_loop, functools.partial(self.sweeper.run, self._stop)]
        targets += [self.workers.loop] * max(1, self.worker_count)
        if self.tls is not None:
            targets.append(functools.partial(self.tls.run, self._stop, self.is_leader))
        if self.reports is not None:
            targets.append(functools.partial(self.reports.run, self._stop))
        if self.events is not None:
            targets.append(functools.partial(self.events.run, self._stop))
        for index, target in enumerate(targets):
            thread = threading.Thread(target=target, name=f"celmut-controller-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        self.queue.shutdown()
        if self.events is not None:
            self.events.wake()  # its thread writes what is left (the counts of the last seconds), then ends
        if self.elector is not None:
            self.elector.stop()
        for thread in self._threads:
            thread.join(timeout=5)
        if self.tracing is not None:
            self.tracing.shutdown()
        if self.policy_source is not None:
            self.policy_source.stop()
        self.global_context.stop()
        self.caches.stop()

    def idle(self) -> bool:
        """No sweep waiting or running, the queue empty and no target being processed."""
        return not self.sweeper.busy() and self.queue.idle()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until :meth:`idle`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.idle():
                return True
            time.sleep(0.02)
        return self.idle()

    def run_once(self, progress: Progress | None = None, writer: ReportWriter | None = None) -> Report:
        """One full pass in this thread (``--dry-run``): scan, process every target, report — to
        ``writer`` as each target finishes when given (the report then keeps only counts), else kept
        in the returned report.

        Pods are not cached whole: they are listed a page at a time (``limit``/``continue``) and each
        page is processed before the next is read, so memory stays flat whatever the cluster's size;
        the lookups policies make (siblings, owners) use metadata-only caches where that is all they
        read (:mod:`celmut.service.lookup_needs`). mutateExisting targets listed by resource rules are
        read the same way (:mod:`celmut.controller.sweeps`)."""
        if writer is not None:
            self.report.stream_to(writer)
        if self.policy_source is not None:
            self.policy_source.start()
            self.policy_source.wait_synced(self.config.sync_timeout)
        self.global_context.start().wait_ready(self.config.sync_timeout)  # entries' data before the first scan
        self.reload(force=True)
        loaded = self._loaded
        if loaded is not None:
            for api_version, resource in sorted(looked_up(loaded.all.policies)):
                self.caches.cache(api_version, resource)  # listed now, not inside an evaluation's deadline
        self.scan(reason="once")
        done = 0

        def drain() -> bool:  # before each page a sweep reads: the queue is worked off, one page in memory
            nonlocal done
            done = self._drain(done, self.scan_progress()[1], progress)
            return True

        self.sweeper.room, self.sweeper.strict = drain, True
        self.sweeper.settle = drain  # this thread works off what a sweep would wait for
        self.sweeper.run_pending()
        drain()
        if progress is not None:
            progress.update(done, max(self.scan_progress()[1], done), final=True)
        return self.report

    def _drain(self, done: int, total: int, progress: Progress | None) -> int:
        while not self.queue.idle():
            if self.process_one(timeout=0.1) is not None:
                done += 1
                if progress is not None:
                    progress.update(done, max(total, done))
        return done
