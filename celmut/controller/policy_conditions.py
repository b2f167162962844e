"""A condition of the controller's own on the policies that cannot fully take effect, and a Warning Event.

Two things a policy needs may be missing in the cluster: a resource its rules name is not served (a CRD
not installed: :mod:`celmut.controller.webhook_rules`), or celmut's controller may not list and watch one
(RBAC: :mod:`celmut.controller.unreadable`). Each gets its own condition type in the policy's
``status.conditionStatus.conditions`` (Kyverno's kinds; Kyverno writes the other fields), set while the
problem lasts and removed when it is gone, and a Warning Event once per change of its message — the
leader's job, as every status the controller writes.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from celmut.kube.client import Cluster, ClusterError, NotFound
from celmut.kube.events import post_event
from celmut.kube.policy_status import update_status

if TYPE_CHECKING:
    from celmut.kube.policy_source import ClusterPolicySource

log = logging.getLogger("celmut.controller")

Obj = dict[str, Any]
PolicyKey = tuple[str, str, str]  # (kind, namespace, name)
RESOURCES = {"MutatingPolicy": "mutatingpolicies", "NamespacedMutatingPolicy": "namespacedmutatingpolicies"}


class PolicyConditions:
    """Writes one condition type (False, ``reason``) on the cluster policies given a message, and takes it
    away from the others; each change of message once (and a Warning Event named ``event_reason``)."""

    def __init__(self, cluster: Cluster, condition_type: str, reason: str, event_reason: str) -> None:
        self.cluster = cluster
        self.condition_type = condition_type
        self.reason = reason
        self.event_reason = event_reason
        self._reported: dict[PolicyKey, str] = {}  # policy -> message reported (once per change)

    def report(self, messages: Mapping[PolicyKey, str], source: ClusterPolicySource | None) -> None:
        """``messages``: the policies with the problem, and what to say; every other policy has none."""
        if source is None:
            return
        ownership = source.ownership
        for kind, resource in RESOURCES.items():
            for obj in source.objects_of(kind):
                if ownership is not None and ownership.belongs_to_another(kind, obj):
                    continue  # another celmut install's policy: its conditions are that install's to write
                meta = obj.get("metadata") or {}
                key = (kind, str(meta.get("namespace") or ""), str(meta.get("name")))
                message = messages.get(key, "")
                if self._reported.get(key, "") == message:
                    continue
                compute = functools.partial(self._patch, message=message)
                try:
                    update_status(self.cluster, obj, resource, compute)
                    if message:
                        post_event(
                            self.cluster,
                            {**obj, "kind": kind},
                            reason=self.event_reason,
                            message=message,
                            component="celmut-controller",
                            warning=True,
                        )
                except NotFound:
                    continue
                except ClusterError as ex:
                    log.warning(
                        "could not write a policy's condition",
                        extra={"policy": key[2], "condition": self.condition_type, "error": str(ex)},
                    )
                    continue
                self._reported[key] = message

    def _patch(self, current: Obj, message: str) -> Obj | None:
        status = current.get("status") or {}
        holder = status.get("conditionStatus") or {}
        conditions = [c for c in holder.get("conditions") or [] if isinstance(c, dict)]
        mine = next((c for c in conditions if c.get("type") == self.condition_type), None)
        others = [c for c in conditions if c is not mine]
        if not message:
            return None if mine is None else {"status": {"conditionStatus": {"conditions": others}}}
        if mine is not None and mine.get("message") == message:
            return None
        condition = {
            "type": self.condition_type,
            "status": "False",
            "reason": self.reason,
            "message": message,
            "observedGeneration": (current.get("metadata") or {}).get("generation", 0),
            "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        return {"status": {"conditionStatus": {"conditions": [*others, condition]}}}
