"""``PolicyViolation`` Events for what the background scan finds failing, as Kyverno posts them.

Kyverno's reports controller turns each failing result of a background scan into two Warning Events
(kyverno/kyverno ``pkg/controllers/report/utils/events.go`` ``generateFailEventsPerEr``, ``pkg/event/
events.go``: reason ``PolicyViolation``, action ``Resource Passed``, from ``kyverno-scan``): one on the
resource (``policy <name>/ fail: <message>`` — a MutatingPolicy's result has no rule name) and one on the
policy, in ``default`` for a cluster-wide policy (``<Kind> <namespace>/<name>: fail; <message>``, the
resource as ``related``), so ``kubectl describe`` of either shows it (chainsaw ``mutating-policies/
reporting/events-violation``). celmut posts the same pair from its own component ``celmut-scan`` (no
policy Event for a policy read from a file: it is no cluster object), once each time a (resource, policy)
result *becomes* a ``fail`` — a periodic scan of an unchanged cluster posts nothing; the report holds the
lasting result. The :class:`~celmut.kube.event_recorder.EventRecorder` keeps them bounded and, in its
``aggregated`` mode, folds the policy's side per namespace and leaves the resources' side to their reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from celmut.kube.event_recorder import EventInfo, EventRecorder

COMPONENT = "celmut-scan"  # Kyverno's is kyverno-scan
REASON = "PolicyViolation"
PASSED = "Resource Passed"  # Kyverno's action for a violation that did not block the resource
# the policy as Kyverno's events name it (its typed client: v1beta1, whatever version it was written at)
POLICY_API_VERSION = "policies.kyverno.io/v1beta1"


@dataclass(frozen=True)
class Violation:
    policy: dict[str, Any]  # the policy object (metadata as stored)
    resource: dict[str, Any]
    policy_key: str  # the report's ``policy``: name or namespace/name
    message: str
    status: str = "fail"  # the result: fail, or error (a mutateExisting target)


def policy_reference(policy: Mapping[str, Any]) -> dict[str, Any]:
    """The policy as an Event's involvedObject: Kyverno's kinds at v1beta1, a MAP as it is."""
    api_version = str(policy.get("apiVersion") or "")
    if api_version.startswith("policies.kyverno.io/"):
        api_version = POLICY_API_VERSION
    return {**policy, "apiVersion": api_version}


def subject(resource: Mapping[str, Any]) -> str:
    """``<Kind> <namespace>/<name>`` (``<Kind> <name>`` when cluster-scoped), as Kyverno's messages name it."""
    meta = resource.get("metadata") or {}
    where = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
    return f"{resource.get('kind')} {where}"


def violation_events(violation: Violation, component: str = COMPONENT) -> list[EventInfo]:
    """The pair Kyverno posts for one failing result: on the resource, then on the policy (for a policy read
    from a file, no cluster object, only folded in ``aggregated`` mode)."""
    policy_meta = violation.policy.get("metadata") or {}
    name = str(policy_meta.get("name") or violation.policy_key)
    status, message = violation.status, violation.message
    events = [
        EventInfo.about(
            violation.resource,
            reason=REASON,
            message=f"policy {name}/ {status}: {message}",  # NewResourceViolationEvent
            component=component,
            action=PASSED,
        )
    ]
    detail = f"; {message}" if message else ""
    events.append(
        EventInfo.about(
            policy_reference(violation.policy),
            reason=REASON,
            message=f"{subject(violation.resource)}: {status}{detail}",  # buildPolicyEventMessage
            component=component,
            action=PASSED,
            related=violation.resource,
            aggregate_only=not policy_meta.get("uid"),  # a file's policy: folded only (aggregated)
        )
    )
    return events


class ViolationEvents:
    """What the scan finds newly failing, handed to the controller's :class:`EventRecorder`."""

    def __init__(self, recorder: EventRecorder) -> None:
        self.recorder = recorder

    def add(self, violation: Violation) -> None:
        self.recorder.add(*violation_events(violation))

    def pending(self) -> int:
        return self.recorder.pending()
