"""The controller's reconciles as OpenTelemetry spans (:mod:`celmut.service.tracing`; off by default).

A reconcile's :class:`~celmut.controller.reconcile.Outcome` says which policies changed the target
(with their operations) and which failed; each becomes a child span of the ``reconcile`` span.
"""

from __future__ import annotations

import logging
import time

from celmut.controller.reconcile import Outcome
from celmut.service.trace_records import PolicyRun
from celmut.service.tracing import Tracing

log = logging.getLogger("celmut.controller")


def policy_runs(outcome: Outcome) -> list[PolicyRun]:
    """The policies the outcome names, in order: those that changed the target, then those that failed."""
    operations: dict[str, int] = {}
    for change in outcome.changes:
        operations[change.policy] = operations.get(change.policy, 0) + len(change.patch)
    runs = [PolicyRun(name, "", "applied", count, 0.0) for name, count in operations.items()]
    runs += [PolicyRun(name, "", "error", 0, 0.0, outcome.message) for name in outcome.failed]
    return runs


def record(tracing: Tracing, outcome: Outcome, started_ns: int) -> None:
    """Record one reconcile; a tracing failure is logged, never raised into the worker."""
    key = outcome.key
    attributes: dict[str, str | int | bool] = {
        "celmut.reconcile.target": str(key),
        "celmut.reconcile.api_version": key.api_version,
        "celmut.reconcile.resource": key.resource,
        "k8s.namespace.name": key.namespace,
        "k8s.object.name": key.name,
        "celmut.reconcile.action": outcome.action,
        "celmut.reconcile.patch_operations": len(outcome.patch),
    }
    if outcome.message:
        attributes["celmut.reconcile.message"] = outcome.message
    try:
        tracing.reconcile(started_ns, time.time_ns(), attributes, policy_runs(outcome))
    except Exception:
        log.exception("could not record the reconcile's trace", extra={"target": str(key)})
