"""``PolicyViolation`` Events for what the background scan finds failing, as Kyverno posts them.

Kyverno's reports controller turns each failing result of a background scan into two Warning Events
(kyverno/kyverno ``pkg/webhooks/utils/event.go`` ``GenerateEvents``, ``pkg/event``: reason
``PolicyViolation``, reporting component ``kyverno-scan``): one on the policy (a cluster-scoped
policy's in ``default``) and one on the resource, so ``kubectl describe`` of either shows it (chainsaw
``mutating-policies/reporting/events-violation``). celmut posts the same pair (no policy Event for a
policy read from a file: it is no cluster object), from its own component ``celmut-scan``, once each
time a (resource, policy) result *becomes* a ``fail`` — not on every rescan, so a periodic scan of an
unchanged cluster posts nothing — and at most ``limit`` pairs a pass (the rest wait for the next one).

That is ``--events per-object``. By default (``aggregated``) a scan that finds 5,000 pods of a namespace
failing a policy does not post 10,000 Events: the policy's side is folded into one Event per policy and
namespace, whose ``count`` says how many resources there newly fail it and whose message names the latest
(:class:`~celmut.kube.events.EventAggregator`, client-go's EventCorrelator), and the resources' side is
left to their reports (``kubectl get polr``).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from celmut.kube.client import Cluster, ClusterError
from celmut.kube.events import EventAggregator, post_event

log = logging.getLogger("celmut.reports")

COMPONENT = "celmut-scan"  # Kyverno's is kyverno-scan
REASON = "PolicyViolation"
# the policy as Kyverno's events name it (its typed client: v1beta1, whatever version it was written at)
POLICY_API_VERSION = "policies.kyverno.io/v1beta1"


@dataclass(frozen=True)
class Violation:
    policy: dict[str, Any]  # the policy object (metadata as stored)
    resource: dict[str, Any]
    policy_key: str  # the report's ``policy``: name or namespace/name
    message: str


def _policy_ref(policy: dict[str, Any]) -> dict[str, Any]:
    """The policy as the Event's involvedObject: Kyverno's kinds at v1beta1, a MAP as it is."""
    api_version = str(policy.get("apiVersion") or "")
    if api_version.startswith("policies.kyverno.io/"):
        api_version = POLICY_API_VERSION
    return {**policy, "apiVersion": api_version}


class ViolationEvents:
    """The violations found since the last pass, posted by the reporting thread."""

    def __init__(self, cluster: Cluster, limit: int = 100, *, per_object: bool = True) -> None:
        self.cluster = cluster
        self.limit = limit
        self.per_object = per_object
        self.aggregator = EventAggregator(cluster, COMPONENT)
        self._pending: list[Violation] = []
        self._lock = threading.Lock()

    def add(self, violation: Violation) -> None:
        if not self.per_object:
            if not violation.policy:
                return
            resource_meta = violation.resource.get("metadata") or {}
            where = "/".join(p for p in (resource_meta.get("namespace"), resource_meta.get("name")) if p)
            self.aggregator.add(
                _policy_ref(violation.policy),
                reason=REASON,
                message=f"{violation.resource.get('kind')} {where}: {violation.message}",
                group=str(resource_meta.get("namespace") or ""),
                related=violation.resource,
                warning=True,
            )
            return
        with self._lock:
            self._pending.append(violation)

    def pending(self) -> int:
        if not self.per_object:
            return self.aggregator.pending()
        with self._lock:
            return len(self._pending)

    def post(self, *, final: bool = False) -> int:
        """Post up to ``limit`` pairs (aggregated: the folded Events due); how many Events were written. An
        Event is best effort: a refused one is logged and not retried (the report holds the result either way)."""
        if not self.per_object:
            return self.aggregator.flush(final=final)
        cluster = self.cluster
        with self._lock:
            batch, self._pending = self._pending[: self.limit], self._pending[self.limit :]
        posted = 0
        for violation in batch:
            resource_meta = violation.resource.get("metadata") or {}
            where = "/".join(p for p in (resource_meta.get("namespace"), resource_meta.get("name")) if p)
            subjects = [(violation.resource, f"policy {violation.policy_key} fail: {violation.message}")]
            if (violation.policy.get("metadata") or {}).get("uid"):  # a cluster object (not one read from a file)
                policy_message = f"{violation.resource.get('kind')} {where}: {violation.message}"
                subjects.insert(0, (_policy_ref(violation.policy), policy_message))
            for subject, message in subjects:
                try:
                    post_event(cluster, subject, reason=REASON, message=message, component=COMPONENT, warning=True)
                    posted += 1
                except ClusterError as ex:
                    log.warning("could not post a policy violation event", extra={"error": str(ex)})
        return posted
