"""The per-policy series (celmut/server/policy_metrics.py) expose exactly what prometheus_client's own
Counter and Histogram expose for the same observations: ``/metrics`` did not change when the webhook
stopped taking a prometheus lock per policy per request."""

from __future__ import annotations

import re

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client import metrics as prometheus_metrics

from celmut.runtime import AdmissionResult, PolicyOutcome
from celmut.server.metrics import _LATENCY_BUCKETS, Metrics

# every status, the two skip causes, values on, between and beyond the bucket bounds
OUTCOMES = [
    PolicyOutcome("add-team", "MutatingPolicy", "applied", seconds=0.0005),
    PolicyOutcome("add-team", "MutatingPolicy", "applied", seconds=0.00051),
    PolicyOutcome("limits", "MutatingPolicy", "unchanged", seconds=0.0),
    PolicyOutcome("flaky", "MutatingPolicy", "error", failure_policy="Ignore", seconds=12.5),
    PolicyOutcome("must-work", "MutatingPolicy", "error", failure_policy="Fail", seconds=10.0),
    PolicyOutcome("only-prod", "MutatingPolicy", "skipped", cause="matchCondition"),
    PolicyOutcome("other-kinds", "MutatingPolicy", "skipped", cause="matchConstraints"),
    PolicyOutcome("exempt", "MutatingPolicy", "excepted", cause="exception"),
    PolicyOutcome("add-team", "MutatingPolicy", "applied", seconds=0.003),
]


def _prometheus_clients_exposition() -> bytes:
    """What the webhook exposed with prometheus_client's own metrics (before the change): two admissions
(the second without policies) and a request refused before any admission."""
    registry = CollectorRegistry()
    requests = Counter(
        "celmut_admission_requests",
        "Admission requests by operation and result",
        ["operation", "result"],
        registry=registry,
    )
    requests.labels("CREATE", "mutated").inc()
    requests.labels("", "too_large").inc()
    requests.labels("CREATE", "mutated").inc()
    durations = Histogram(
        "celmut_admission_duration_seconds",
        "Time to answer an admission request",
        buckets=_LATENCY_BUCKETS,
        registry=registry,
    )
    durations.observe(0.002)
    durations.observe(0.0005)  # on a bucket's bound
    latency = Histogram(
        "celmut_policy_duration_seconds",
        "Time spent in one policy for one request",
        ["policy"],
        buckets=_LATENCY_BUCKETS,
        registry=registry,
    )
    errors = Counter(
        "celmut_policy_errors", "Policy evaluation errors", ["policy", "failure_policy"], registry=registry
    )
    mutations = Counter(
        "celmut_mutations",
        "Policies that matched a request, by policy and outcome: applied, unchanged, excepted "
        "(a PolicyException), skipped (a matchCondition is false), error",
        ["policy", "outcome"],
        registry=registry,
    )
    for policy in OUTCOMES:
        if policy.status in ("applied", "unchanged", "error"):
            latency.labels(policy.policy).observe(policy.seconds)
        if policy.status != "skipped" or policy.cause == "matchCondition":
            mutations.labels(policy.policy, policy.status).inc()
        if policy.status == "error":
            errors.labels(policy.policy, policy.failure_policy).inc()
    return generate_latest(registry)


def _celmuts_exposition() -> bytes:
    metrics = Metrics()
    result = AdmissionResult(
        allowed=True, original=None, object=None, patch=[{"op": "add", "path": "/x", "value": 1}], outcomes=OUTCOMES
    )
    metrics.observe("CREATE", result, 0.002)
    metrics.rejected("too_large")
    metrics.observe("CREATE", AdmissionResult(True, None, None, result.patch, []), 0.0005)
    return generate_latest(metrics.registry)


def _comparable(exposition: bytes, families: tuple[str, ...]) -> str:
    """The lines of the given families, creation timestamps replaced (they are wall-clock times)."""
    lines = [line for line in exposition.decode().splitlines() if any(f in line for f in families)]
    return "\n".join(re.sub(r"(_created(\{.*\})?) \S+$", r"\1 <time>", line) for line in lines)


FAMILIES = ("celmut_admission_", "celmut_policy_duration_seconds", "celmut_policy_errors", "celmut_mutations")


@pytest.mark.parametrize("created", [True, False], ids=["with _created series", "disable_created_metrics()"])
def test_the_per_policy_series_expose_what_prometheus_client_exposes(created: bool) -> None:
    if not created:
        prometheus_metrics.disable_created_metrics()
    try:
        expected = _comparable(_prometheus_clients_exposition(), FAMILIES)
        actual = _comparable(_celmuts_exposition(), FAMILIES)
    finally:
        prometheus_metrics.enable_created_metrics()
    assert "celmut_policy_duration_seconds_bucket" in expected and ('le="+Inf"' in expected)
    assert ("_created" in expected) is created
    assert actual == expected
