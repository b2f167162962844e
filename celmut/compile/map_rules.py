"""Why a MutatingPolicy gets no native MutatingAdmissionPolicy: the rules of :mod:`celmut.compile.to_map`.

Each rule names the upstream behaviour it follows (Kyverno's generator, the kube-apiserver) or the
celmut feature a MAP cannot carry; ``tests/compile/test_to_map.py`` has one row per rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from celmut.errors import CelmutError
from celmut.policy.mutating_policy import MutatingPolicy


@dataclass(frozen=True)
class Rule:
    """One reason a policy gets no MutatingAdmissionPolicy, and the upstream behaviour it follows."""

    key: str
    upstream: str


RULES: dict[str, Rule] = {
    rule.key: rule
    for rule in (
        Rule("namespaced", "kyverno mpol.go enqueueMP: a namespaced policy is never queued"),
        Rule("not-enabled", "kyverno generate-map.go mapFullSkipReason: GenerateMutatingAdmissionPolicyEnabled()"),
        Rule("json-mode", "kyverno generate-map.go mapGenerationSkipReason (json_mode_test.go)"),
        Rule(
            "server-side-apply", "kyverno generate-map.go mapFullSkipReason: EvaluationConfiguration.UseServerSideApply"
        ),
        Rule(
            "admission-disabled", "kyverno generate-map.go generates anyway; the API server applies a MAP at admission"
        ),
        Rule(
            "mutate-existing",
            "kyverno generate-map.go generates anyway; mpol/engine/reconciler.go then drops the policy",
        ),
        Rule("audit-annotations", "kyverno builder.go BuildMutatingAdmissionPolicy copies no auditAnnotations"),
        Rule("namespace-selector", "kyverno builder.go copies only matchConstraints.resourceRules"),
        Rule("object-selector", "kyverno builder.go copies only matchConstraints.resourceRules"),
        Rule("exclude-resource-rules", "kyverno builder.go copies only matchConstraints.resourceRules"),
        Rule(
            "match-policy",
            "kyverno builder.go copies only matchConstraints.resourceRules (matchPolicy defaults to Equivalent)",
        ),
        Rule(
            "partial-failure",
            "kube-apiserver admission/plugin/policy/mutating/dispatcher.go: Ignore skips only the failing "
            "mutation; a Kyverno MutatingPolicy drops its whole result",
        ),
        Rule("restart-policy", "celmut controller/triggers.py drift_policies: the controller replaces running pods"),
        Rule(
            "record-provenance", "celmut runtime/provenance.py: the webhook writes the celmut.io/mutated-by annotation"
        ),
        Rule(
            "variables-in-match-conditions",
            "kyverno/api MutatingPolicySpec.Variables: a native MutatingAdmissionPolicy does not support variables "
            "in match conditions",
        ),
        Rule(
            "kubernetes-cel",
            "kube-apiserver compiles a MAP in its own CEL environment (apiserver/pkg/cel/environment/base.go) and "
            "refuses it with 422; kyverno mpol/compiler/compiler.go compiles only in Kyverno's",
        ),
        Rule(
            "condition-names",
            "kyverno builder.go negateExceptionMatchConditions keeps each condition's name; the API server refuses "
            "duplicates (matchConditions is a listType=map)",
        ),
        Rule("too-many-conditions", "kube-apiserver admissionregistration validation: at most 64 matchConditions"),
        Rule("name-too-long", "kyverno pkg/admissionpolicy/AGENTS.md: MAP names are not shortened; 253 characters"),
    )
}


class NotConvertible(CelmutError):
    """A policy that gets no MutatingAdmissionPolicy: ``rule`` (a :data:`RULES` key) and why."""

    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(reason)
        self.rule = rule
        self.reason = reason


def skip_reason(policy: MutatingPolicy) -> tuple[str, str]:
    """(rule, Kyverno's status message) when the controller must not generate for ``policy``; ('', '')."""
    if policy.is_namespaced:
        return "namespaced", (
            "skip generating MutatingAdmissionPolicy: only cluster-scoped MutatingPolicies get one, as in Kyverno."
        )
    if not policy.autogen_admission_policy:
        return "not-enabled", "skip generating MutatingAdmissionPolicy: not enabled."
    if policy.evaluation.mode == "JSON":
        return "json-mode", "skip generating MutatingAdmissionPolicy: JSON evaluation mode has no admission equivalent."
    if policy.evaluation.use_server_side_apply:
        return "server-side-apply", (
            "skip generating MutatingAdmissionPolicy: useServerSideApply is enabled, which mutates atomic fields "
            "that a native MutatingAdmissionPolicy rejects."
        )
    return "", ""


KEPT = "; the policy stays in celmut's webhook"


def behaviour_rules(policy: MutatingPolicy) -> Iterable[tuple[str, str]]:
    """The fields a MutatingAdmissionPolicy cannot express: (rule, why) for each one set."""
    ev = policy.evaluation
    if not ev.admission:
        yield (
            "admission-disabled",
            (
                "spec.evaluation.admission.enabled is false: a MutatingAdmissionPolicy would apply the policy at "
                "admission, where it does not apply"
            ),
        )
    if ev.mutate_existing:
        yield (
            "mutate-existing",
            (
                "spec.evaluation.mutateExisting.enabled: a MutatingAdmissionPolicy acts only at admission, and the "
                "existing resources would no longer be mutated"
            ),
        )
    if policy.audit_annotations:
        yield "audit-annotations", "spec.auditAnnotations: a MutatingAdmissionPolicy has none, they would be lost"
    match = policy.match_constraints
    dropped = "Kyverno's generator copies only the resource rules, so the MutatingAdmissionPolicy would match "
    if not match.namespace_selector.is_empty:
        yield "namespace-selector", f"spec.matchConstraints.namespaceSelector: {dropped}every namespace"
    if not match.object_selector.is_empty:
        yield "object-selector", f"spec.matchConstraints.objectSelector: {dropped}every object"
    if match.exclude_resource_rules:
        yield "exclude-resource-rules", f"spec.matchConstraints.excludeResourceRules: {dropped}the excluded resources"
    if match.match_policy != "Equivalent":
        yield (
            "match-policy",
            f"spec.matchConstraints.matchPolicy {match.match_policy}: {dropped}equivalent versions too",
        )


def celmut_rules(policy: MutatingPolicy) -> Iterable[tuple[str, str]]:
    """What only celmut's webhook and controller do with the policy (checked after its CEL, which names
    the more fundamental obstacle first)."""
    if policy.failure_policy == "Ignore" and len(policy.mutations) > 1:
        yield (
            "partial-failure",
            (
                "failurePolicy Ignore with several mutations: the API server would keep the mutations before a failing "
                "one, where the MutatingPolicy applies all of them or none"
            ),
        )
    if policy.restart_policy == "immediate":
        yield (
            "restart-policy",
            (
                "celmut.io/restart-policy: immediate: celmut's controller replaces running pods for this policy, which "
                "it no longer serves once a MutatingAdmissionPolicy does"
            ),
        )
    if policy.record_provenance:
        yield (
            "record-provenance",
            ("celmut.io/record-provenance: only celmut's webhook records which policy changed a field"),
        )
