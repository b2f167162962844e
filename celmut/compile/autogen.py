"""Autogen of MutatingPolicies for pod controllers, exactly as Kyverno does it (semantics §7).

A policy is eligible with exactly one resource rule for core/v1 ``pods`` (no resourceNames), no
excludeResourceRules and no objectSelector labels or expressions. Controllers default to all six;
``controllers: []`` turns autogen off. Deployments, DaemonSets, ReplicaSets, StatefulSets and Jobs
share the ``defaults`` variant; CronJobs get the ``cronjobs`` variant.

Only matchConditions and ApplyConfiguration expressions are rewritten (:mod:`.autogen_rewrite`:
Kyverno's text replacements of field accesses, ``object.spec`` → ``object.spec.template.spec`` …,
and every ``Object`` type name moved under the template, where Kyverno is wrong: kyverno#17438).
JSONPatch expressions and variables are kept as written, so a pod JSONPatch also runs unchanged on
controllers (use ``controllers: []``).
"""

from __future__ import annotations

import dataclasses

from celmut.compile.autogen_rewrite import convert_expression
from celmut.policy.match import MatchResources, ResourceRule
from celmut.policy.mutating_policy import MutatingPolicy, Mutation, NamedExpression

_TARGETS = {  # controller → (group, version, resource, variant)
    "daemonsets": ("apps", "v1", "daemonsets", "defaults"),
    "deployments": ("apps", "v1", "deployments", "defaults"),
    "replicasets": ("apps", "v1", "replicasets", "defaults"),
    "statefulsets": ("apps", "v1", "statefulsets", "defaults"),
    "jobs": ("batch", "v1", "jobs", "defaults"),
    "cronjobs": ("batch", "v1", "cronjobs", "cronjobs"),
}


def can_autogen(match: MatchResources) -> bool:
    if not match.object_selector.is_empty or match.exclude_resource_rules or len(match.resource_rules) != 1:
        return False
    rule = match.resource_rules[0]
    return (
        not rule.resource_names
        and rule.api_groups == ("",)
        and rule.api_versions == ("v1",)
        and rule.resources == ("pods",)
    )


def autogen_variants(policy: MutatingPolicy) -> dict[str, MutatingPolicy]:
    """The ``defaults``/``cronjobs`` variants of an eligible policy (empty when not eligible)."""
    if not can_autogen(policy.match_constraints):
        return {}
    controllers = policy.autogen_controllers if policy.autogen_controllers is not None else tuple(_TARGETS)
    groups: dict[str, list[tuple[str, str, str]]] = {}
    for controller in controllers:
        group, version, resource, variant = _TARGETS[controller]
        groups.setdefault(variant, []).append((group, version, resource))
    operations = policy.match_constraints.resource_rules[0].operations
    variants: dict[str, MutatingPolicy] = {}
    for variant in sorted(groups):
        by_group_version: dict[tuple[str, str], set[str]] = {}
        for group, version, resource in groups[variant]:
            by_group_version.setdefault((group, version), set()).add(resource)
        rules = tuple(
            ResourceRule(api_groups=(g,), api_versions=(v,), resources=tuple(sorted(r)), operations=operations)
            for (g, v), r in sorted(by_group_version.items())
        )
        match = MatchResources(resource_rules=rules, namespace_selector=policy.match_constraints.namespace_selector)
        variants[variant] = dataclasses.replace(
            policy,
            match_constraints=match,
            match_conditions=tuple(
                NamedExpression(c.name, convert_expression(c.expression, variant), c.path)
                for c in policy.match_conditions
            ),
            mutations=tuple(
                Mutation(m.patch_type, convert_expression(m.expression, variant), m.path)
                if m.patch_type == "ApplyConfiguration"
                else m
                for m in policy.mutations
            ),
        )
    return variants
