"""What the controller says, as Events, about the targets its mutateExisting policies changed or failed on.

As Kyverno's background controller does for a MutatingPolicy (kyverno/kyverno ``pkg/background/mpol/
processor.go`` ``audit``, which posts ``pkg/webhooks/utils/event.go`` ``GenerateEvents``):

* a policy that changed the target: a Normal ``PolicyApplied`` Event on the policy, action ``Resource
  Mutated``, the target as ``related`` — ``<Kind> <namespace>/<name> is successfully mutated`` (``pkg/event/
  events.go`` ``NewPolicyAppliedEvent``), followed here by the mutations and fields it changed (on the
  target itself for a policy read from a file). Omitted by default, as Kyverno's chart omits them
  (``--omitEvents``);
* a policy that failed on it: a Warning ``PolicyViolation`` pair (:mod:`celmut.controller.violation_events`),
  status ``error``.

An eviction (a PodMutation with ``restartPolicy: immediate``) is always an ``Evicted`` Event on the pod.
The :class:`~celmut.kube.event_recorder.EventRecorder` writes them, bounded (``--events``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from celmut.compile.compiled import CompiledPolicy
from celmut.controller.violation_events import Violation, policy_reference, subject, violation_events
from celmut.kube.event_recorder import EventInfo, EventRecorder
from celmut.kube.events import MAX_MESSAGE, reference
from celmut.runtime.provenance import AppliedMutation, changes_of, describe

APPLIED = "PolicyApplied"
MUTATED = "Resource Mutated"  # Kyverno's action


def policy_object(policy: CompiledPolicy) -> dict[str, Any]:
    """The policy as stored (its identity when it came from the cluster; no uid when read from a file)."""
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


class MutationEvents:
    """The Events of one reconcile pass, handed to the controller's :class:`EventRecorder`."""

    def __init__(self, recorder: EventRecorder, component: str) -> None:
        self.recorder = recorder
        self.component = component

    def changed(
        self,
        obj: dict[str, Any],
        changes: list[Any],  # reconcile.Change: policy (display name), mutation, patch
        policies: Mapping[str, CompiledPolicy],
    ) -> None:
        """``PolicyApplied`` on each policy that changed ``obj`` — on ``obj`` itself for a policy read from a
        file, which is no object to post about."""
        for name in sorted({c.policy for c in changes}):
            policy = policies.get(name)
            if policy is None:
                continue
            stored = policy_object(policy)
            head = f"{subject(obj)} is successfully mutated: "
            mine = [c for c in changes if c.policy == name]
            message = head + _fields(mine, MAX_MESSAGE - len(head) - 40)  # room for an aggregate prefix
            on_policy = EventInfo.about(
                policy_reference(stored),
                reason=APPLIED,
                message=message,
                component=self.component,
                action=MUTATED,
                related=obj,
                warning=False,
                aggregate_only=not stored["metadata"].get("uid"),  # a file's policy: folded only (aggregated)
            )
            self.recorder.add(on_policy)
            if on_policy.aggregate_only:  # per-object: on the target itself, there being no policy object
                on_target = dataclasses.replace(on_policy, regarding=reference(obj), related=None, aggregate_only=False)
                self.recorder.add(on_target)

    def failed(self, obj: dict[str, Any], policy: CompiledPolicy, message: str) -> None:
        """A ``PolicyViolation`` pair for a policy whose evaluation on ``obj`` failed (status ``error``)."""
        violation = Violation(policy_object(policy), obj, policy.display_name, message, status="error")
        self.recorder.add(*violation_events(violation, self.component))

    def evicted(self, pod: dict[str, Any], changes: list[Any]) -> None:
        """An eviction is always an Event on the pod, naming the policies and fields that needed it."""
        names = ", ".join(sorted({c.policy for c in changes}))
        head = f"evicted to apply celmut policy {names}: "
        self.recorder.add(
            EventInfo.about(
                pod,
                reason="Evicted",
                message=head + _fields(changes, MAX_MESSAGE - len(head)),
                component=self.component,
                action="Evicted",
                warning=False,
            ),
            always=True,
        )
