"""Policies that name a resource the controller may not list or watch say so (issue 38, item 5).

A watch that RBAC forbids (``403 Forbidden … cannot list resource``) holds up nothing: the cache gives up
waiting at once and retries with backoff (:mod:`celmut.kube.cache`), the reload goes on and every other
policy is registered and reconciled on time. What that resource's policies cannot do — background
reports on its objects, mutateExisting triggers and targets of that kind — the policies themselves say,
with the condition ``celmut.io/ResourcesReadable`` (False, ``Forbidden``) and a Warning Event
``ResourceNotReadable`` naming the resource and the chart value that grants it; both go once the
controller can read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from celmut import kinds
from celmut.controller.policy_conditions import PolicyConditions, PolicyKey
from celmut.controller.reported_policies import rule_resources, watched_resources
from celmut.controller.triggers import trigger_resources
from celmut.kube.client import Cluster

if TYPE_CHECKING:
    from celmut.compile.compiled import CompiledPolicy
    from celmut.kube.policy_source import ClusterPolicySource

CONDITION_TYPE = "celmut.io/ResourcesReadable"
GRANT = "controller.extraRules"  # the chart value adding RBAC rules to the controller's ClusterRole

Resource = tuple[str, str]  # (apiVersion, plural)


def named_resources(policy: CompiledPolicy) -> set[Resource]:
    """What the controller lists and watches for ``policy``: the resources its matchConstraints name
    (background reports, mutateExisting triggers) and its mutateExisting targets."""
    named = watched_resources(policy) | trigger_resources([policy])
    target = policy.target
    if target is not None and target.match is not None:
        named |= rule_resources(target.match.resource_rules)
    return named


def messages(policies: Iterable[CompiledPolicy], unreadable: Mapping[Resource, str]) -> dict[PolicyKey, str]:
    """The message for each policy naming a resource in ``unreadable`` (resource -> the API server's reason)."""
    out: dict[PolicyKey, str] = {}
    for policy in policies:
        denied = sorted(named_resources(policy) & unreadable.keys())
        if not denied:
            continue
        names = ", ".join(kinds.qualified_resource(*resource) for resource in denied)
        reasons = "; ".join(dict.fromkeys(unreadable[resource] for resource in denied))
        out[(policy.kind, policy.namespace, policy.name)] = (
            f"celmut's controller may not list and watch {names} ({reasons}): their background reports and "
            f"mutateExisting triggers and targets are skipped until it may; grant get, list and watch on them "
            f"with the chart's {GRANT}"
        )
    return out


class UnreadableResources:
    """The leader's condition and Event on the policies naming a resource the controller may not read."""

    def __init__(self, cluster: Cluster) -> None:
        self._conditions = PolicyConditions(cluster, CONDITION_TYPE, "Forbidden", "ResourceNotReadable")

    def report(
        self,
        policies: Sequence[CompiledPolicy],
        unreadable: Mapping[Resource, str],
        source: ClusterPolicySource | None,
    ) -> None:
        self._conditions.report(messages(policies, unreadable), source)
