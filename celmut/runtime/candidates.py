"""Which policies a request can select at all, looked up instead of tried one by one.

A policy whose ``matchConstraints.resourceRules`` do not name a request's group, version, resource,
subresource and operation is skipped by :func:`celmut.runtime.matching.match_reason` whatever the
object says, so the engine does not need to visit it. :class:`PolicyIndex` answers, for a request
key ``(group, version, resource, subresource, operation)`` and a failurePolicy filter, the policies
that may select it, in evaluation order. The answer is computed with the same rule predicate the
matcher uses (:func:`~celmut.runtime.matching.rule_selects`: wildcards, ``*/*``, ``pods/*``,
``*/status``) the first time a key is seen and remembered, so a request costs one dictionary lookup
whatever the number of policies; keys come from the resources an API server serves (a bounded set),
and at most ``max_keys`` are remembered.
"""

from __future__ import annotations

from collections.abc import Sequence

from celmut.compile.compiled import CompiledException, CompiledPolicy
from celmut.policy.match import MatchResources
from celmut.runtime.matching import rule_selects
from celmut.runtime.request import AdmissionInput

RequestKey = tuple[str, str, str, str, str]  # group, version, resource, subresource, operation


def request_key(request: AdmissionInput) -> RequestKey:
    gvr = request.resource
    return gvr.group, gvr.version, gvr.resource, request.sub_resource, request.operation


def may_select(match: MatchResources, key: RequestKey) -> bool:
    """False only when no resource rule names this kind of request (no rules: every request)."""
    group, version, resource, sub_resource, operation = key
    return not match.resource_rules or any(
        rule_selects(rule, group, version, resource, sub_resource, operation) for rule in match.resource_rules
    )


def in_group(policy: CompiledPolicy, group: str | None) -> bool:
    """Whether a webhook group serves ``policy``: ``None`` every policy; ``"Fail"``/``"Ignore"`` the
    policies of that failurePolicy; ``"Fail@default"`` those of them without their own
    ``webhookConfiguration.timeoutSeconds``, ``"Fail@5"`` those with 5 (one webhook per failurePolicy and
    timeout: :mod:`celmut.install.managed_webhooks`)."""
    if group is None:
        return True
    failure_policy, _, timeout = group.partition("@")
    if policy.failure_policy != failure_policy:
        return False
    if not timeout:
        return True
    return str(policy.timeout_seconds) == timeout if policy.timeout_seconds is not None else timeout == "default"


def admits(policy: CompiledPolicy) -> bool:
    """Whether the policy runs at admission (a mutateExisting policy with targets never mutates its
    trigger: semantics §8)."""
    return policy.admission and not (policy.mutate_existing and policy.target is not None)


class PolicyIndex:
    """The policies (of those given, in their order) that may select a kind of request, per
    failurePolicy filter."""

    def __init__(self, policies: Sequence[CompiledPolicy], *, max_keys: int = 4096) -> None:
        self.policies = list(policies)
        self.max_keys = max_keys
        self._memo: dict[tuple[RequestKey, str | None], tuple[CompiledPolicy, ...]] = {}
        self._plans: dict[tuple[RequestKey, str | None], tuple[tuple[CompiledPolicy, bool], ...]] = {}

    def plan(self, key: RequestKey, failure_policy: str | None = None) -> tuple[tuple[CompiledPolicy, bool], ...]:
        """Every policy of the webhook group, in evaluation order, each with whether it may select
        this kind of request (what an engine that reports every policy's outcome walks)."""
        memo_key = (key, failure_policy)
        found = self._plans.get(memo_key)
        if found is None:
            found = tuple((p, may_select(p.match, key)) for p in self.policies if in_group(p, failure_policy))
            if len(self._plans) < self.max_keys:  # concurrent misses compute the same answer
                self._plans[memo_key] = found
        return found

    def candidates(self, key: RequestKey, failure_policy: str | None = None) -> tuple[CompiledPolicy, ...]:
        """In evaluation order; ``failure_policy`` keeps only the policies of that webhook group (:func:`in_group`)."""
        memo_key = (key, failure_policy)
        found = self._memo.get(memo_key)
        if found is None:
            found = tuple(p for p in self.policies if in_group(p, failure_policy) and may_select(p.match, key))
            if len(self._memo) < self.max_keys:  # concurrent misses compute the same answer
                self._memo[memo_key] = found
        return found


class ExceptionIndex:
    """The PolicyExceptions naming each policy (by name, and kind when the exception gives one)."""

    def __init__(self, exceptions: Sequence[CompiledException]) -> None:
        self._by_name: dict[str, list[CompiledException]] = {}
        for exception in exceptions:
            for name in dict.fromkeys(ref_name for ref_name, _ in exception.policy_refs):
                self._by_name.setdefault(name, []).append(exception)

    def __bool__(self) -> bool:
        """Whether any PolicyException names any policy (most clusters: none, and the hot path skips them)."""
        return bool(self._by_name)

    def naming(self, name: str, kind: str) -> list[CompiledException]:
        return [e for e in self._by_name.get(name, ()) if e.refers_to(name, kind)]
