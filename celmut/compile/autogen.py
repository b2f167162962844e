"""Autogen of MutatingPolicies for pod controllers, exactly as Kyverno does it (semantics §7).

A policy is eligible with exactly one resource rule for core/v1 ``pods`` (no resourceNames), no
excludeResourceRules and no objectSelector labels or expressions. Controllers default to all six;
``controllers: []`` turns autogen off. Deployments, DaemonSets, ReplicaSets, StatefulSets and Jobs
share the ``defaults`` variant; CronJobs get the ``cronjobs`` variant.

Only matchConditions and ApplyConfiguration expressions are rewritten, by Kyverno's plain text
replacements (``object.spec`` → ``object.spec.template.spec`` …) and, when an ApplyConfiguration
starts with ``Object{``, by wrapping it in the template path. JSONPatch expressions and variables are
kept as written, so a pod JSONPatch also runs unchanged on controllers (use ``controllers: []``).
"""

from __future__ import annotations

import dataclasses

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
_PATHS = {
    "defaults": ("spec.template.spec", "spec.template.metadata"),
    "cronjobs": ("spec.jobTemplate.spec.template.spec", "spec.jobTemplate.spec.template.metadata"),
}
_WRAPPERS = {
    "defaults": ("Object{spec: Object.spec{template: Object.spec.template{", "}}}"),
    "cronjobs": (
        "Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{spec: Object.spec.jobTemplate.spec"
        "{template: Object.spec.jobTemplate.spec.template{",
        "}}}}}",
    ),
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


def convert_expression(expression: str, variant: str) -> str:
    """Kyverno's convertPodToTemplateExpression."""
    spec_path, metadata_path = _PATHS[variant]
    for root in ("object", "Object"):
        expression = expression.replace(f"{root}.spec", f"{root}.{spec_path}")
    for root in ("object", "Object"):
        for field in ("labels", "annotations"):
            expression = expression.replace(f"{root}.metadata.{field}", f"{root}.{metadata_path}.{field}")
    stripped = expression.strip()
    if stripped.startswith("Object{"):
        content = stripped[len("Object{") :]
        depth, end = 1, 0
        for index, char in enumerate(content):
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    end = index
                    break
        if end > 0:
            opening, closing = _WRAPPERS[variant]
            return opening + content[:end] + closing + content[end + 1 :]
    return expression


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
