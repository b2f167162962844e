"""Prometheus metrics of the webhook (names prefixed ``celmut_``), in a registry per server.

With ``serve --workers N`` each worker process counts in memory-mapped files of one shared directory
(prometheus_client's multiprocess mode) and ``/metrics``, answered by whichever worker the scrape
reaches, shows the whole server: counters and histograms summed over the workers, gauges (the same
policies and caches in every worker) their maximum over the live ones. The series every admission
updates (:mod:`celmut.server.policy_metrics`) are counted in memory instead and written to the same
directory every second: another worker's admissions show up to a second late.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest, values
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from celmut.runtime import AdmissionResult
from celmut.server.policy_metrics import PolicySeries, SharedPolicySeries

MULTIPROCESS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's own name for it

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def share_between_workers(directory: str) -> None:
    """Make the metrics created from now on in this process (a forked worker) count in ``directory``."""
    os.environ[MULTIPROCESS_DIR_VARIABLE] = directory
    values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]


def worker_stopped(pid: int, directory: str) -> None:
    """Drop a stopped worker's gauges from the shared view (its counts stay in the sums)."""
    mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]


class Metrics:
    """The webhook's metrics; ``shared_directory`` (after :func:`share_between_workers`) for a worker."""

    def __init__(self, shared_directory: str | None = None) -> None:
        self.shared_directory = shared_directory
        self.registry = CollectorRegistry()
        # the requests' and the policies' series, ~20 updates per admission: plain numbers under one lock
        # (the exposition of prometheus_client's Counter and Histogram); across worker processes, the same
        # numbers flushed to a file per worker and summed on a scrape
        self.policies = (
            PolicySeries(_LATENCY_BUCKETS)
            if self.shared_directory is None
            else SharedPolicySeries(_LATENCY_BUCKETS, self.shared_directory)
        )
        self.registry.register(self.policies)
        self.policies_loaded = Gauge(
            "celmut_policies_loaded", "Policies in service", registry=self.registry, multiprocess_mode="livemax"
        )
        self.policies_invalid = Gauge(
            "celmut_policies_invalid",
            "Policy documents rejected by the last reload",
            registry=self.registry,
            multiprocess_mode="livemax",
        )
        self.rescheduled = Counter(
            "celmut_admissions_rescheduled",
            "Admissions moved from the event loop to a worker thread (their time slice ended, or they "
            "had to wait for I/O)",
            registry=self.registry,
        )
        self.cache_objects = Gauge(
            "celmut_cache_objects",
            "Objects held by each cluster cache (projection: metadata or whole)",
            ["resource", "projection"],
            registry=self.registry,
            multiprocess_mode="livemax",
        )
        self.cache_overflowed = Gauge(
            "celmut_cache_overflowed",
            "1 when a cache reached its object limit (lookups then go to the API server)",
            ["resource", "projection"],
            registry=self.registry,
            multiprocess_mode="livemax",
        )
        self.split_reevaluations = Counter(
            "celmut_split_decision_reevaluations",
            "Admissions evaluated again because another webhook process decided about the same workload "
            "meanwhile (the decision ledger's Lease changed under them)",
            registry=self.registry,
        )
        self.reloads = Counter("celmut_policy_reloads", "Policy reloads by result", ["result"], registry=self.registry)
        self.policy_validations = Counter(
            "celmut_policy_validations",
            "Policy objects the policy validating webhook answered for, by kind and result (allowed, refused)",
            ["kind", "result"],
            registry=self.registry,
        )
        self.error_events = Counter(
            "celmut_report_error_events",
            "Writes of the PolicyError Events that carry admission errors to the reports: created, updated, error",
            ["action"],
            registry=self.registry,
        )

    def caches(self, sizes: list[tuple[str, bool, int, bool]]) -> None:
        for resource, metadata_only, objects, overflowed in sizes:
            projection = "metadata" if metadata_only else "whole"
            self.cache_objects.labels(resource, projection).set(objects)
            self.cache_overflowed.labels(resource, projection).set(1 if overflowed else 0)

    def observe(self, operation: str, result: AdmissionResult, seconds: float) -> None:
        if not result.allowed:
            outcome = "denied"
        elif result.patch:
            outcome = "mutated"
        else:
            outcome = "unchanged"
        self.policies.record(operation, outcome, seconds, result.outcomes)

    def policy_validated(self, kind: str, allowed: bool) -> None:
        """One answer of the policy validating webhook (``/validate/policies``)."""
        self.policy_validations.labels(kind, "allowed" if allowed else "refused").inc()

    def rejected(self, reason: str) -> None:
        self.policies.request("", reason)

    def render(self) -> bytes:
        if self.shared_directory is None:
            return generate_latest(self.registry)
        every_worker = CollectorRegistry()
        MultiProcessCollector(every_worker, self.shared_directory)  # type: ignore[no-untyped-call]
        every_worker.register(self.policies)  # its files, summed (SharedPolicySeries.collect)
        return generate_latest(every_worker)

    def flush(self) -> None:
        """Worker processes: make this worker's admission and per-policy counts visible to the others' scrapes."""
        if isinstance(self.policies, SharedPolicySeries):
            self.policies.flush()
