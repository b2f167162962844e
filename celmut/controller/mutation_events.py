"""What the controller says, as Events, about the targets it changed.

By default (``--events aggregated``) one ``Mutated`` Event per policy and namespace of the targets, on the
policy, folded as client-go's EventCorrelator folds similar events (:class:`~celmut.kube.events.EventAggregator`):
its ``count`` says how many targets the policy changed there, its message names the latest one and the
fields it changed, ``related`` points at it. Kyverno's mutateExisting emits a ``PolicyApplied`` Event on
the policy per target (``pkg/event/events.go`` ``NewPolicyAppliedEvent``) and its chart omits them by
default (``features.omitEvents.eventTypes: [PolicyApplied, PolicySkipped]``): a pass over 100,000 pods is
one Event per policy and namespace here, not 100,000. ``--events per-object`` posts one Event on each
changed target instead, naming every policy that changed it (issue 18's provenance Event).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from celmut.compile.compiled import CompiledPolicy
from celmut.kube.client import Cluster, ClusterError
from celmut.kube.events import MAX_MESSAGE, EventAggregator, post_event
from celmut.runtime.provenance import AppliedMutation, changes_of, describe

log = logging.getLogger("celmut.controller")

AGGREGATED = "aggregated"
PER_OBJECT = "per-object"
EVENT_MODES = (AGGREGATED, PER_OBJECT)


def policy_reference(policy: CompiledPolicy) -> dict[str, Any]:
    """The policy as an Event's involvedObject (its stored identity when it came from the cluster)."""
    raw = getattr(policy.definition, "raw", None) or {}
    metadata = raw.get("metadata") or {}
    return {
        "apiVersion": raw.get("apiVersion") or "policies.kyverno.io/v1",
        "kind": policy.kind,
        "metadata": {
            "name": policy.name,
            "namespace": policy.namespace,
            **({"uid": metadata["uid"]} if metadata.get("uid") else {}),
        },
    }


def _fields(changes: Iterable[Any], room: int) -> str:
    return describe((AppliedMutation(c.policy, "", c.mutation, None, changes_of(c.patch)) for c in changes), room)


def _subject(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    where = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
    return f"{obj.get('kind')} {where}"


class MutationEvents:
    """Records each change the controller made (``changed``); :meth:`flush` writes the folded Events."""

    def __init__(self, cluster: Cluster, component: str, *, mode: str = AGGREGATED) -> None:
        self.cluster = cluster
        self.component = component
        self.per_object = mode == PER_OBJECT
        self.aggregator = EventAggregator(cluster, component)

    def changed(
        self,
        obj: dict[str, Any],
        changes: list[Any],  # reconcile.Change: policy (display name), mutation, patch
        policies: Mapping[str, CompiledPolicy],
        *,
        reason: str = "Mutated",
        verb: str = "mutated by",
        per_object: bool = False,  # this one on the object whatever the mode (an eviction: one pod at a time)
    ) -> None:
        if self.per_object or per_object:
            names = ", ".join(sorted({c.policy for c in changes}))
            head = f"{verb} celmut policy {names}: "
            message = head + _fields(changes, MAX_MESSAGE - len(head))
            try:
                post_event(self.cluster, obj, reason=reason, message=message, component=self.component)
            except ClusterError as ex:  # an Event is best effort
                log.warning("could not record an event", extra={"error": str(ex)})
            return
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        for name in sorted({c.policy for c in changes}):
            policy = policies.get(name)
            if policy is None:
                continue
            head = f"{_subject(obj)} {verb} celmut policy {name}: "
            mine = [c for c in changes if c.policy == name]
            message = head + _fields(mine, MAX_MESSAGE - len(head) - 40)  # room for the aggregate prefix
            self.aggregator.add(policy_reference(policy), reason=reason, message=message, group=namespace, related=obj)

    def flush(self, *, final: bool = False) -> int:
        """Write the folded Events that are due (all with ``final``); the number of writes."""
        return 0 if self.per_object else self.aggregator.flush(final=final)
