"""mutateExisting policies whose targets could not be resolved: reported, never dropped silently.

A failing ``targetMatchConstraints.expression`` (or a listing of targets that failed) leaves nothing to
queue; :class:`UnresolvedTargets` makes it visible instead: a log line, the ``failed`` action in the
metrics and in the (dry-run) report, named by the trigger, and one Warning Event on the policy per
trigger and error (named after both, so a second report, by this run or another process, gets
``AlreadyExists``). Only the leader posts Events, and a dry run none.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable

from celmut.controller.reconcile import COMPONENT, LoadedPolicies, Outcome
from celmut.controller.report import Report
from celmut.controller.status import ControllerMetrics
from celmut.controller.triggers import target_key
from celmut.kube.client import Cluster, ClusterError, Conflict
from celmut.kube.events import post_event
from celmut.runtime.mutate_existing import Target, mutate_target

log = logging.getLogger("celmut.controller")


class UnresolvedTargets:
    def __init__(
        self,
        cluster: Cluster,
        loaded: Callable[[], LoadedPolicies | None],
        metrics: ControllerMetrics,
        report: Report,
        *,
        events: Callable[[], bool],
    ) -> None:
        """``events``: whether to post Events now (the leader, outside a dry run)."""
        self.cluster = cluster
        self.loaded = loaded
        self.metrics = metrics
        self.report = report
        self.events = events

    def __call__(self, target: Target) -> None:
        loaded = self.loaded()
        if loaded is None:
            return
        result = mutate_target(loaded.all, target)  # the error outcome of an unresolved target
        detail = f"{result.outcome.path}: {result.outcome.reason}"
        outcome = Outcome(target_key(target.obj), "failed", message=result.outcome.message)
        self.metrics.observe(outcome)
        self.report.record(outcome)
        log.warning("targets not resolved", extra={"trigger": result.reference, "error": outcome.message})
        if not self.events():
            return
        policy = target.policy
        about = {
            "apiVersion": "policies.kyverno.io/v1",
            "kind": policy.kind,
            "metadata": {"name": policy.name, "namespace": policy.namespace},
        }
        digest = hashlib.sha256(f"{result.reference}/{outcome.message}".encode()).hexdigest()[:16]
        message = f"{result.reference}: {detail}"
        try:
            post_event(
                self.cluster,
                about,
                reason="TargetsUnresolved",
                message=message,
                component=COMPONENT,
                warning=True,
                name=f"{policy.name}.celmut-{digest}",
            )
        except Conflict:
            pass  # reported already (this trigger and error, by another run or process)
        except ClusterError as ex:
            log.warning("could not record an event", extra={"error": str(ex)})
