"""``evaluation.mutateExisting``: which existing objects a policy mutates, and how (semantics §8).

A pure function over a trigger (or none) and a view of the cluster (:class:`ResourceLookup`):

* **Admission trigger** — the policy's ``matchConstraints`` and ``matchConditions`` must match the
  trigger (dry-run triggers queue nothing).
* **Policy event or periodic scan** (no trigger) — a pass over every target; with an expression
  target, one pass per existing trigger object that matches ``matchConstraints`` and
  ``matchConditions`` (evaluated with a synthetic UPDATE request of the trigger).
* **Targets** — ``targetMatchConstraints.expression`` (evaluated with the trigger as ``object`` — for a
  DELETE, the deleted object, as Kyverno builds the trigger from ``request.oldObject``:
  ``pkg/background/common/resource.go`` ``GetResource``; returns an object or a list in ``items``),
  else the resources listed by
  ``targetMatchConstraints`` resource rules, else by ``matchConstraints``; operations and
  excludeResourceRules are ignored, resourceNames, namespaceSelector and objectSelector apply, and a
  NamespacedMutatingPolicy only sees its namespace.
* **Per target** — exceptions, then ``targetMatchConditions`` (``object`` is the target), then the
  mutations. The policy's own ``matchConditions`` are checked on the trigger; on a pass without one, a
  target the policy's own ``matchConstraints`` listed *is* what the policy matches, so its
  ``matchConditions`` are evaluated on it first — where Kyverno skips them (kyverno/kyverno#17411, open):
  a StorageClass policy conditioned on ``object.metadata.name in ["standard"]`` labels only ``standard``.
  ``request`` is the trigger's request, or a synthetic UPDATE of the target. Targets that would not
  change are reported as such.
* **Errors** — targets that cannot be resolved (the expression fails, a listing fails) are never
  silently dropped: they come back as a :class:`Target` with ``error`` set (named by its trigger), and
  :func:`mutate_target` turns it into an ``error`` outcome, so every surface reports it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from celmut import cel
from celmut.compile.compiled import CompiledPolicy
from celmut.errors import CelmutError
from celmut.policy.match import MatchResources, ResourceRule
from celmut.runtime import matching, selectors
from celmut.runtime.engine import AdmissionEngine
from celmut.runtime.evaluate import MUTATE_EXISTING, MUTATE_LISTED
from celmut.runtime.patch import diff
from celmut.runtime.request import AdmissionInput
from celmut.runtime.results import MutationStep, PolicyOutcome

__all__ = [
    "MutationStep",
    "Target",
    "TargetListing",
    "TargetResult",
    "accepts",
    "lists_targets",
    "mutate_existing",
    "mutate_target",
    "resolve_targets",
    "target_listings",
    "trigger_selects",
    "unresolved_target",
]


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
    steps: list[MutationStep] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.patch)

    @property
    def reference(self) -> str:
        meta = self.target.get("metadata") or {}
        name = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
        return f"{self.target.get('kind')} {name}"


@dataclass(frozen=True)
class Target:
    """An object one mutateExisting policy should mutate, and the trigger that led to it."""

    policy: CompiledPolicy
    obj: dict[str, Any]
    sub_resource: str = ""
    trigger: AdmissionInput | None = None
    error: str = ""  # the targets could not be resolved: ``obj`` is the trigger, this says why
    error_path: str = ""  # the field whose evaluation failed

    @property
    def trigger_label(self) -> str:
        if self.trigger is None:
            return ""
        return f"{self.trigger.namespace}/{self.trigger.name}" if self.trigger.namespace else self.trigger.name


def mutate_existing(
    engine: AdmissionEngine, *, trigger: AdmissionInput | None = None, policies: Iterable[CompiledPolicy] | None = None
) -> list[TargetResult]:
    """Targets and their mutated forms for every mutateExisting policy in ``engine``."""
    return [mutate_target(engine, target) for target in resolve_targets(engine, trigger=trigger, policies=policies)]


def resolve_targets(
    engine: AdmissionEngine, *, trigger: AdmissionInput | None = None, policies: Iterable[CompiledPolicy] | None = None
) -> list[Target]:
    """The targets of every mutateExisting policy for one trigger (or, with none, a scan)."""
    targets: list[Target] = []
    for policy in policies if policies is not None else engine.policies:
        if not policy.mutate_existing or policy.autogen:
            continue
        if trigger is not None:
            if trigger.dry_run or not policy.admission:
                continue
            if _trigger_matches(engine, policy, trigger, check_operation=True):
                targets += _targets(engine, policy, trigger)
        elif policy.target is not None and policy.target.expression is not None:
            try:
                triggers = _list_matching(engine, policy, policy.match)
            except _Unresolved as problem:
                targets.append(_failed(policy, None, problem))
                continue
            for existing in triggers:
                synthetic = AdmissionInput.from_object(
                    existing, "UPDATE", old_object=existing, kind_table=engine.options.schemas.kinds
                )
                if _trigger_matches(engine, policy, synthetic, check_operation=False):
                    targets += _targets(engine, policy, synthetic)
        else:
            targets += _targets(engine, policy, None)
    return targets


def mutate_target(
    engine: AdmissionEngine, target: Target, obj: dict[str, Any] | None = None, *, input_size: int | None = None
) -> TargetResult:
    """Run the policy's mutations on the target (or on ``obj``, a fresher copy of it).

    ``input_size`` (bytes), when the caller knows it, saves measuring the object again for each policy.
    """
    name = target.policy.display_name
    if target.error:
        policy = target.policy
        failed = PolicyOutcome(
            name, policy.kind, "error", target.error, target.error_path, policy.failure_policy, cause="error"
        )
        return TargetResult(name, target.obj, None, [], failed, target.sub_resource, target.trigger_label)
    current = target.obj if obj is None else obj
    request = target.trigger
    if request is None:
        request = AdmissionInput.from_object(
            current, "UPDATE", old_object=current, kind_table=engine.options.schemas.kinds
        )
        request.input_size = input_size
    evaluator = engine.evaluator
    stage = MUTATE_LISTED if target.trigger is None and _lists_itself(target.policy) else MUTATE_EXISTING
    outcome, mutated, steps = evaluator.mutate_target(target.policy, evaluator.context(request), current, stage)
    patch = diff(current, mutated) if mutated is not None and mutated is not current else []
    return TargetResult(name, current, mutated, patch, outcome, target.sub_resource, target.trigger_label, steps)


def _lists_itself(policy: CompiledPolicy) -> bool:
    """Whether the policy's targets are what its own matchConstraints match (no targetMatchConstraints)."""
    target = policy.target
    return target is None or (target.match is None and target.expression is None)


def _trigger_matches(
    engine: AdmissionEngine, policy: CompiledPolicy, request: AdmissionInput, *, check_operation: bool
) -> bool:
    context = engine.evaluator.context(request)
    if policy.kind == "NamespacedMutatingPolicy" and request.namespace != policy.namespace:
        return False
    if matching.match_reason(policy.match, request, context.namespace_labels(), check_operation=check_operation):
        return False
    return engine.evaluator.conditions_hold(policy, context)


class _Unresolved(CelmutError):
    """Targets of one policy could not be resolved (carried into a :class:`Target` with ``error``)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def _targets(engine: AdmissionEngine, policy: CompiledPolicy, trigger: AdmissionInput | None) -> list[Target]:
    problems: list[_Unresolved] = []
    try:
        found = [Target(policy, obj, sub, trigger) for obj, sub in _target_objects(engine, policy, trigger, problems)]
    except _Unresolved as unresolved:
        found, problems = [], [unresolved]
    return found + [_failed(policy, trigger, problem) for problem in problems]


def _failed(policy: CompiledPolicy, trigger: AdmissionInput | None, problem: _Unresolved) -> Target:
    return unresolved_target(policy, trigger, problem.path, problem.message)


def unresolved_target(policy: CompiledPolicy, trigger: AdmissionInput | None, path: str, message: str) -> Target:
    """A target standing for targets that could not be resolved (``message`` says why, ``path`` names the
    field): the trigger (or the policy, in a scan)."""
    subject = trigger.subject if trigger is not None else {"kind": policy.kind, "metadata": {"name": policy.name}}
    return Target(policy, subject, "", trigger, message, path)


def _target_objects(
    engine: AdmissionEngine, policy: CompiledPolicy, trigger: AdmissionInput | None, problems: list[_Unresolved]
) -> list[tuple[dict[str, Any], str]]:
    target = policy.target
    if target is not None and target.expression is not None:
        if trigger is None:
            return []
        context = engine.evaluator.context(trigger)
        activation = context.activation(policy, trigger.subject)  # DELETE: the deleted object (Kyverno)
        try:
            value = target.expression.program.evaluate(activation)
        except cel.CelError as ex:
            raise _Unresolved(target.expression.path, ex.message) from None
        value = cel.to_plain(value)
        items = value.get("items") if isinstance(value, dict) else None
        if not isinstance(items, list):
            items = [value]
        found = [item for item in items if isinstance(item, dict) and item]
        return [(item, _route(engine, target.match, item)) for item in found]
    on_target = target is not None and target.match is not None
    match = target.match if target is not None and target.match is not None else policy.match
    where = "spec.targetMatchConstraints" if on_target else "spec.matchConstraints"
    return _list_matching_with_sub(engine, policy, match, problems, where)


def _route(engine: AdmissionEngine, match: MatchResources | None, item: dict[str, Any]) -> str:
    """The subresource an expression's target is written through: that of the first of
    ``targetMatchConstraints``' resource rules naming its group, version and resource (``pods/resize``),
    else none — Kyverno's ``resolveTargetRoute`` (``pkg/background/mpol/processor.go``)."""
    if match is None:
        return ""
    api_version = str(item.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    plural = engine.options.schemas.kinds.resource_for(api_version, str(item.get("kind") or ""))
    for rule in match.resource_rules:
        if not any(g in ("*", group) for g in rule.api_groups):
            continue
        if not any(v in ("*", version) for v in rule.api_versions):
            continue
        for pattern in rule.resources:
            resource, _, sub_resource = pattern.partition("/")
            if resource in ("*", plural):
                return sub_resource
    return ""


def _list_matching(engine: AdmissionEngine, policy: CompiledPolicy, match: MatchResources) -> list[dict[str, Any]]:
    problems: list[_Unresolved] = []
    found = [obj for obj, _ in _list_matching_with_sub(engine, policy, match, problems, "spec.matchConstraints")]
    if problems:
        raise problems[0]
    return found


@dataclass(frozen=True)
class TargetListing:
    """One list a mutateExisting policy's targets come from: a resource (in a namespace, or all), the
    rule naming it (its resourceNames) and the constraints its items must meet (namespaceSelector,
    objectSelector). :func:`accepts` tells whether a listed item is a target."""

    policy: CompiledPolicy
    api_version: str
    resource: str
    sub_resource: str
    namespace: str  # "" : every namespace
    rule: ResourceRule
    match: MatchResources
    where: str  # the field the constraints come from, for errors


def lists_targets(policy: CompiledPolicy) -> bool:
    """Whether the policy's targets are listed by resource rules (not returned by an expression)."""
    return policy.mutate_existing and not policy.autogen and (policy.target is None or policy.target.expression is None)


def target_listings(
    policy: CompiledPolicy, match: MatchResources | None = None, where: str = ""
) -> list[TargetListing]:
    """The lists the targets of ``policy`` come from (none for targets returned by an expression):
    ``targetMatchConstraints``' resource rules, else ``matchConstraints``' (``match``: these instead).
    Wildcards are left out: listing them needs API discovery."""
    if match is None:
        if policy.target is not None and policy.target.expression is not None:
            return []
        on_target = policy.target is not None and policy.target.match is not None
        match = policy.target.match if policy.target is not None and policy.target.match is not None else policy.match
        where = "spec.targetMatchConstraints" if on_target else "spec.matchConstraints"
    namespace = policy.namespace if policy.kind == "NamespacedMutatingPolicy" else ""
    listings = []
    for rule in match.resource_rules:
        for group in rule.api_groups:
            for version in rule.api_versions:
                for resource_pattern in rule.resources:
                    resource, _, sub_resource = resource_pattern.partition("/")
                    if "*" in (group, version, resource):
                        continue  # wildcards need API discovery; list explicit resources instead
                    api_version = f"{group}/{version}" if group else version
                    listings.append(
                        TargetListing(policy, api_version, resource, sub_resource, namespace, rule, match, where)
                    )
    return listings


def accepts(engine: AdmissionEngine, listing: TargetListing, item: dict[str, Any]) -> bool:
    """Whether a listed ``item`` (with its apiVersion and kind) is a target: its rule's resourceNames,
    then the namespaceSelector and objectSelector of the constraints."""
    meta = item.get("metadata") or {}
    if listing.rule.resource_names and meta.get("name") not in listing.rule.resource_names:
        return False
    if not selectors.matches(listing.match.object_selector, selectors.labels_of(item)):
        return False
    if listing.match.namespace_selector.is_empty:
        return True
    resources = engine.options.services.resources
    request = AdmissionInput.from_object(item, "UPDATE", old_object=item, kind_table=engine.options.schemas.kinds)
    labels = matching.namespace_labels(request, _namespace(resources, request.namespace))
    return matching.namespace_selector_matches(listing.match, request, labels)


def trigger_selects(engine: AdmissionEngine, policy: CompiledPolicy, trigger: AdmissionInput) -> bool:
    """Whether an admission ``trigger`` sets off ``policy``'s mutateExisting (dry runs never do)."""
    if trigger.dry_run or not policy.admission or not policy.mutate_existing or policy.autogen:
        return False
    return _trigger_matches(engine, policy, trigger, check_operation=True)


def _list_matching_with_sub(
    engine: AdmissionEngine,
    policy: CompiledPolicy,
    match: MatchResources,
    problems: list[_Unresolved] | None = None,
    where: str = "spec.matchConstraints",
) -> list[tuple[dict[str, Any], str]]:
    resources = engine.options.services.resources
    if resources is None:
        return []
    found: list[tuple[dict[str, Any], str]] = []
    seen: set[tuple[str, str, str, str]] = set()
    for listing in target_listings(policy, match, where):
        api_version, resource = listing.api_version, listing.resource
        try:
            listed = resources.list(api_version, resource, listing.namespace)
        except cel.CelError as ex:  # reported with the policy: its targets are incomplete
            if problems is not None:
                problems.append(_Unresolved(where, f"listing {resource}.{api_version}: {ex.message}"))
            continue
        for item in listed.get("items", []):
            meta = item.get("metadata") or {}
            key = (api_version, resource, str(meta.get("namespace", "")), str(meta.get("name", "")))
            if key in seen:
                continue
            kind = item.get("kind") or engine.options.schemas.kinds.kind_for(api_version, resource)
            item = {"apiVersion": api_version, "kind": kind, **item}
            if not accepts(engine, listing, item):
                continue
            seen.add(key)
            found.append((item, listing.sub_resource))
    return found


def _namespace(resources: Any, name: str) -> Any:
    if not name:
        return None
    try:
        return resources.get("v1", "namespaces", "", name)
    except cel.CelError:
        return None
