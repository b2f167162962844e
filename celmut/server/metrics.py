"""Prometheus metrics of the webhook (names prefixed ``celmut_``), in a registry per server."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from celmut.runtime import AdmissionResult

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "celmut_admission_requests",
            "Admission requests by operation and result",
            ["operation", "result"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "celmut_admission_duration_seconds",
            "Time to answer an admission request",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.policy_latency = Histogram(
            "celmut_policy_duration_seconds",
            "Time spent in one policy for one request",
            ["policy"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.policy_errors = Counter(
            "celmut_policy_errors", "Policy evaluation errors", ["policy", "failure_policy"], registry=self.registry
        )
        self.mutations = Counter(
            "celmut_mutations",
            "Policies that matched a request, by policy and outcome: applied, unchanged, excepted "
            "(a PolicyException), skipped (a matchCondition is false), error",
            ["policy", "outcome"],
            registry=self.registry,
        )
        self._mutation_counts: dict[tuple[str, str], Counter] = {}
        self._policy_latencies: dict[str, Histogram] = {}
        self.policies_loaded = Gauge("celmut_policies_loaded", "Policies in service", registry=self.registry)
        self.policies_invalid = Gauge(
            "celmut_policies_invalid", "Policy documents rejected by the last reload", registry=self.registry
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
        )
        self.cache_overflowed = Gauge(
            "celmut_cache_overflowed",
            "1 when a cache reached its object limit (lookups then go to the API server)",
            ["resource", "projection"],
            registry=self.registry,
        )
        self.reloads = Counter("celmut_policy_reloads", "Policy reloads by result", ["result"], registry=self.registry)

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
        self.requests.labels(operation, outcome).inc()
        self.latency.observe(seconds)
        for policy in result.outcomes:
            if policy.status in ("applied", "unchanged", "error"):
                self._policy_latency(policy.policy).observe(policy.seconds)
            if policy.status != "skipped" or policy.cause == "matchCondition":
                self._mutation_count(policy.policy, policy.status).inc()
            if policy.status == "error":
                self.policy_errors.labels(policy.policy, policy.failure_policy).inc()

    def _mutation_count(self, policy: str, outcome: str) -> Counter:
        """The child of ``celmut_mutations_total`` (``labels()`` costs ~2 µs; a request counts ~10)."""
        key = (policy, outcome)
        child = self._mutation_counts.get(key)
        if child is None:  # two threads may both create it: labels() returns the same child
            child = self._mutation_counts[key] = self.mutations.labels(policy, outcome)
        return child

    def _policy_latency(self, policy: str) -> Histogram:
        """The child of ``celmut_policy_latency_seconds`` for a policy (cached like :meth:`_mutation_count`)."""
        child = self._policy_latencies.get(policy)
        if child is None:
            child = self._policy_latencies[policy] = self.policy_latency.labels(policy)
        return child

    def rejected(self, reason: str) -> None:
        self.requests.labels("", reason).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
