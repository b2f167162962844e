"""What a span records of an admission or a reconcile, and the one adapter from the runtime's results.

:func:`evaluated_policies` turns what the runtime returns today (``AdmissionResult`` outcomes) into the
per-policy spans of :mod:`celmut.service.tracing`; re-point it when the runtime reports per-policy
results otherwise. No OpenTelemetry import here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from celmut.runtime.results import AdmissionResult

# Skipped before evaluation: no span (the policy was not evaluated for this request).
NOT_EVALUATED = frozenset({"matchConstraints", "namespace", "controlledReplicaSet", "backgroundRequest", "noBinding"})


@dataclass(frozen=True)
class PolicyRun:
    """One policy evaluated for a request, as a span shows it."""

    name: str
    kind: str
    result: str  # applied | unchanged | skipped | excepted | error
    patch_operations: int
    seconds: float
    reason: str = ""


def evaluated_policies(result: AdmissionResult) -> list[PolicyRun]:
    """The policies the runtime evaluated for one request, in order (the adapter to re-point)."""
    runs: list[PolicyRun] = []
    for outcome in result.outcomes:
        if outcome.status == "skipped" and outcome.cause in NOT_EVALUATED:
            continue
        runs.append(
            PolicyRun(outcome.policy, outcome.kind, outcome.status, len(outcome.patch), outcome.seconds, outcome.reason)
        )
    return runs


@dataclass(frozen=True)
class AdmissionRecord:
    """What one admission span says (filled only when tracing is on)."""

    headers: Mapping[str, str]  # traceparent / tracestate of the request
    started_ns: int  # the request's arrival (epoch ns)
    evaluated_ns: int  # when the policies started to run
    ended_ns: int
    attributes: Mapping[str, str | int | bool]
    policies: Sequence[PolicyRun]
    allowed: bool
