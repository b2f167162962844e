"""``evaluation.mutateExisting``: which existing objects a policy mutates, and how (semantics §8).

A pure function over a trigger (or none) and a view of the cluster (:class:`ResourceLookup`):

* **Admission trigger** — the policy's ``matchConstraints`` and ``matchConditions`` must match the
  trigger (dry-run triggers queue nothing).
* **Policy event or periodic scan** (no trigger) — a pass over every target; with an expression
  target, one pass per existing trigger object that matches ``matchConstraints`` and
  ``matchConditions`` (evaluated with a synthetic UPDATE request of the trigger).
* **Targets** — ``targetMatchConstraints.expression`` (evaluated with the trigger as ``object``;
  returns an object or a list in ``items``), else the resources listed by
  ``targetMatchConstraints`` resource rules, else by ``matchConstraints``; operations and
  excludeResourceRules are ignored, resourceNames, namespaceSelector and objectSelector apply, and a
  NamespacedMutatingPolicy only sees its namespace.
* **Per target** — exceptions, then ``targetMatchConditions`` (``object`` is the target), then the
  mutations. The policy's own ``matchConditions`` are not re-checked. ``request`` is the trigger's
  request, or a synthetic UPDATE of the target. Targets that would not change are reported as such.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from celmut import cel, kinds
from celmut.compile.compiled import CompiledPolicy
from celmut.policy.match import MatchResources
from celmut.runtime import matching, selectors
from celmut.runtime.engine import Engine, PolicyFailure, RequestContext
from celmut.runtime.patch import diff
from celmut.runtime.request import AdmissionInput
from celmut.runtime.results import PolicyOutcome


@dataclass
class TargetResult:
    """One target of one mutateExisting policy: its current and mutated forms."""

    policy: str
    target: dict[str, Any]
    mutated: dict[str, Any] | None
    patch: list[dict[str, Any]]
    outcome: PolicyOutcome
    sub_resource: str = ""
    trigger: str = ""  # namespace/name of the trigger, when there is one

    @property
    def changed(self) -> bool:
        return bool(self.patch)

    @property
    def reference(self) -> str:
        meta = self.target.get("metadata") or {}
        name = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
        return f"{self.target.get('kind')} {name}"


@dataclass
class _Trigger:
    request: AdmissionInput
    label: str = ""
    variables_request: dict[str, Any] = field(default_factory=dict)


def mutate_existing(
    engine: Engine, *, trigger: AdmissionInput | None = None, policies: Iterable[CompiledPolicy] | None = None
) -> list[TargetResult]:
    """Targets and their mutated forms for every mutateExisting policy in ``engine``."""
    results: list[TargetResult] = []
    for policy in policies if policies is not None else engine.policies:
        if not policy.mutate_existing or policy.autogen:
            continue
        if trigger is not None:
            if trigger.dry_run or not policy.admission:
                continue
            if _trigger_matches(engine, policy, trigger, check_operation=True):
                results += _run_for_trigger(engine, policy, trigger)
        elif policy.target is not None and policy.target.expression is not None:
            for existing in _list_matching(engine, policy, policy.match):
                synthetic = AdmissionInput.from_object(existing, "UPDATE", old_object=existing)
                if _trigger_matches(engine, policy, synthetic, check_operation=False):
                    results += _run_for_trigger(engine, policy, synthetic)
        else:
            results += _run_for_trigger(engine, policy, None)
    return results


def _trigger_matches(engine: Engine, policy: CompiledPolicy, request: AdmissionInput, *, check_operation: bool) -> bool:
    context = _context(engine, request)
    if policy.kind == "NamespacedMutatingPolicy" and request.namespace != policy.namespace:
        return False
    if matching.match_reason(policy.match, request, context.namespace_labels(), check_operation=check_operation):
        return False
    activation = context.activation(policy, request.object)
    try:
        return not engine.check_conditions(policy.match_conditions, activation)
    except PolicyFailure:
        return False


def _context(engine: Engine, request: AdmissionInput) -> RequestContext:
    return RequestContext(engine, request, cel.Budget.with_timeout(engine.options.timeout_seconds))


def _run_for_trigger(engine: Engine, policy: CompiledPolicy, trigger: AdmissionInput | None) -> list[TargetResult]:
    label = ""
    if trigger is not None:
        label = f"{trigger.namespace}/{trigger.name}" if trigger.namespace else trigger.name
    results: list[TargetResult] = []
    for target, sub_resource in _targets(engine, policy, trigger):
        request = trigger or AdmissionInput.from_object(target, "UPDATE", old_object=target)
        outcome, mutated = _mutate_target(engine, policy, request, target)
        patch = diff(target, mutated) if mutated is not None and mutated is not target else []
        results.append(TargetResult(policy.display_name, target, mutated, patch, outcome, sub_resource, label))
    return results


def _targets(
    engine: Engine, policy: CompiledPolicy, trigger: AdmissionInput | None
) -> list[tuple[dict[str, Any], str]]:
    target = policy.target
    if target is not None and target.expression is not None:
        if trigger is None:
            return []
        context = _context(engine, trigger)
        activation = context.activation(policy, trigger.object)
        try:
            value = target.expression.program.evaluate(activation)
        except cel.CelError:
            return []
        value = cel.to_plain(value)
        items = value.get("items") if isinstance(value, dict) and isinstance(value.get("items"), list) else [value]
        return [(item, "") for item in items if isinstance(item, dict) and item]
    match = target.match if target is not None and target.match is not None else policy.match
    return [(obj, sub) for obj, sub in _list_matching_with_sub(engine, policy, match)]


def _list_matching(engine: Engine, policy: CompiledPolicy, match: MatchResources) -> list[dict[str, Any]]:
    return [obj for obj, _ in _list_matching_with_sub(engine, policy, match)]


def _list_matching_with_sub(
    engine: Engine, policy: CompiledPolicy, match: MatchResources
) -> list[tuple[dict[str, Any], str]]:
    resources = engine.options.services.resources
    if resources is None:
        return []
    namespace = policy.namespace if policy.kind == "NamespacedMutatingPolicy" else ""
    found: list[tuple[dict[str, Any], str]] = []
    seen: set[tuple[str, str, str, str]] = set()
    for rule in match.resource_rules:
        for group in rule.api_groups:
            for version in rule.api_versions:
                for resource_pattern in rule.resources:
                    resource, _, sub_resource = resource_pattern.partition("/")
                    if "*" in (group, version, resource):
                        continue  # wildcards need API discovery; list explicit resources instead
                    api_version = f"{group}/{version}" if group else version
                    try:
                        listed = resources.list(api_version, resource, namespace)
                    except cel.CelError:
                        continue
                    for item in listed.get("items", []):
                        meta = item.get("metadata") or {}
                        key = (api_version, resource, str(meta.get("namespace", "")), str(meta.get("name", "")))
                        if key in seen:
                            continue
                        if rule.resource_names and meta.get("name") not in rule.resource_names:
                            continue
                        kind = item.get("kind") or kinds.kind_for(api_version, resource)
                        item = {"apiVersion": api_version, "kind": kind, **item}
                        request = AdmissionInput.from_object(item, "UPDATE", old_object=item)
                        labels = matching.namespace_labels(request, _namespace(resources, request.namespace))
                        if not matching.namespace_selector_matches(match, request, labels):
                            continue
                        if not selectors.matches(match.object_selector, selectors.labels_of(item)):
                            continue
                        seen.add(key)
                        found.append((item, sub_resource))
    return found


def _namespace(resources: Any, name: str) -> Any:
    if not name:
        return None
    try:
        return resources.get("v1", "namespaces", "", name)
    except cel.CelError:
        return None


def _mutate_target(
    engine: Engine, policy: CompiledPolicy, request: AdmissionInput, target: dict[str, Any]
) -> tuple[PolicyOutcome, dict[str, Any] | None]:
    context = _context(engine, request)
    name = policy.display_name
    try:
        exceptions = engine.match_exceptions(policy, context, target)
        if exceptions.skipped_by is not None:
            return PolicyOutcome(name, policy.kind, "excepted", f"PolicyException {exceptions.skipped_by}"), None
        activation = context.activation(policy, target, exceptions=exceptions.variable())
        skip = engine.check_conditions(policy.target_match_conditions, activation)
        if skip:
            return PolicyOutcome(
                name, policy.kind, "skipped", skip.replace("matchCondition", "targetMatchCondition")
            ), None
        result = target
        for mutation in policy.mutations:
            result = engine.apply_mutation(policy, mutation, activation, result)
    except PolicyFailure as failure:
        return PolicyOutcome(name, policy.kind, "error", failure.message, failure.path, policy.failure_policy), None
    if result is target or result == target:
        return PolicyOutcome(name, policy.kind, "unchanged"), result
    return PolicyOutcome(name, policy.kind, "applied", before=target, after=result), result
