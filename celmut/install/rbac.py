"""The RBAC rules of the webhook and the controller: least privilege, each rule with its reason.

The Helm chart (``templates/rbac.yaml``) holds the same rules; a test renders both and compares.
"""

from __future__ import annotations

from typing import Any

from celmut.limits import DECISION_LEDGER_STRIPES

Rule = dict[str, Any]

READ = ["get", "list", "watch"]


def _rule(groups: str, resources: list[str], verbs: list[str], names: list[str] | None = None) -> Rule:
    rule: Rule = {"apiGroups": [groups], "resources": resources}
    if names:
        rule["resourceNames"] = names
    rule["verbs"] = verbs
    return rule


def shared_rules() -> list[Rule]:
    """What both components need: the reads of policy compilation and CEL lookups, and reporting."""
    return [
        # The policy kinds and presets celmut compiles (watched: changes apply at once).
        _rule("policies.kyverno.io", ["mutatingpolicies", "namespacedmutatingpolicies", "policyexceptions"], READ),
        _rule("admissionregistration.k8s.io", ["mutatingadmissionpolicies", "mutatingadmissionpolicybindings"], READ),
        _rule("pod-mutations.cast.ai", ["podmutations"], READ),
        _rule("presets.celmut.io", ["gpuslicings"], READ),
        _rule("pinning.celmut.io", ["podpinningplans"], READ),
        # CRDs: the schemas of custom resources, which ApplyConfiguration merges follow, and whose
        # policies.kyverno.io CRDs tell whether Kyverno is installed.
        _rule("apiextensions.k8s.io", ["customresourcedefinitions"], READ),
        # Kyverno's webhook configurations (label webhook.kyverno.io/managed-by=kyverno): whether Kyverno
        # serves MutatingPolicies, which decides the ones celmut serves (--policy-selector auto).
        _rule("admissionregistration.k8s.io", ["mutatingwebhookconfigurations"], ["list", "watch"]),
        # Kyverno's GlobalContextEntries, the data globalContext.Get reads (what each entry itself reads
        # is granted by the chart's globalContext.readRules).
        _rule("kyverno.io", ["globalcontextentries"], READ),
        # Namespace labels, pods (exact spot splits count a workload's pods), pinning-plan ConfigMaps.
        _rule("", ["namespaces", "pods", "configmaps"], READ),
        # A pod's workload: ReplicaSet -> Deployment, Job -> CronJob, StatefulSet and DaemonSet owners.
        _rule("apps", ["replicasets", "deployments", "statefulsets", "daemonsets"], READ),
        _rule("batch", ["jobs", "cronjobs"], READ),
        # The celmut.io/Compiled condition on each policy, and a Warning Event when it does not compile.
        _rule("policies.kyverno.io", ["mutatingpolicies/status", "namespacedmutatingpolicies/status"], ["patch"]),
        _rule("admissionregistration.k8s.io", ["mutatingadmissionpolicies/status"], ["patch"]),
        _rule("pod-mutations.cast.ai", ["podmutations/status"], ["patch"]),
        _rule("presets.celmut.io", ["gpuslicings/status"], ["patch"]),
        _rule("pinning.celmut.io", ["podpinningplans/status"], ["patch"]),
        # Events: a Warning Event when a policy does not compile; the webhook's admission errors, one Event
        # per (resource, policy) updated as they recur, which the controller's leader watches for reports;
        # the controller's Events, whose counts are patched as client-go's EventCorrelator patches them.
        _rule("", ["events"], ["create", "get", "update", "patch", "list", "watch"]),
        # The CEL authorizer of MutatingAdmissionPolicies: each check is a SubjectAccessReview.
        _rule("authorization.k8s.io", ["subjectaccessreviews"], ["create"]),
    ]


def controller_cluster_rules(
    webhook_configuration: str, *, self_managed_tls: bool, managed_rules: bool = False
) -> list[Rule]:
    rules = [
        *shared_rules(),
        # Running pods: the in-place changes Kubernetes allows, and replacement through the Eviction
        # API (PodDisruptionBudgets apply).
        _rule("", ["pods"], ["patch"]),
        _rule("", ["pods/eviction"], ["create"]),
        # Running pods' container resources, resized in place through pods/resize (Kubernetes 1.33+) when a
        # mutateExisting policy's targetMatchConstraints name that subresource.
        _rule("", ["pods/resize"], ["patch"]),
        # DaemonSet pod templates: the spot presets' toleration on DaemonSets that existed before them.
        _rule("apps", ["daemonsets"], ["patch"]),
        # GlobalContextEntry status (Ready, lastRefreshTime), written by the leader while Kyverno is absent.
        _rule("kyverno.io", ["globalcontextentries/status"], ["patch"]),
        # The MutatingAdmissionPolicies and bindings generated for spec.autogen.mutatingAdmissionPolicy.
        _rule(
            "admissionregistration.k8s.io",
            ["mutatingadmissionpolicies", "mutatingadmissionpolicybindings"],
            ["create", "update", "delete"],
        ),
        # Background PolicyReports: one per resource the policies match, replaced when results change.
        _rule(
            "wgpolicyk8s.io",
            ["policyreports", "clusterpolicyreports"],
            ["get", "list", "watch", "create", "update", "delete"],
        ),
    ]
    if self_managed_tls:  # the CA bundle of celmut's own webhook configuration
        rules.append(
            _rule(
                "admissionregistration.k8s.io",
                ["mutatingwebhookconfigurations"],
                ["get", "patch"],
                [webhook_configuration],
            )
        )
    if managed_rules:  # the configuration written from the policies, owned by the controller's ClusterRole
        rules += [
            _rule("admissionregistration.k8s.io", ["mutatingwebhookconfigurations"], ["create"]),
            _rule(
                "admissionregistration.k8s.io",
                ["mutatingwebhookconfigurations"],
                ["get", "update"],
                [webhook_configuration],
            ),
            _rule("rbac.authorization.k8s.io", ["clusterroles"], ["get"], [f"{webhook_configuration}-controller"]),
        ]
    return rules


def controller_namespace_rules(lease: str, secrets: list[str], *, self_managed_tls: bool) -> list[Rule]:
    """In celmut's namespace: the leader Lease and the TLS Secrets (create cannot be limited to names)."""
    rules = [
        _rule("coordination.k8s.io", ["leases"], ["create"]),
        _rule("coordination.k8s.io", ["leases"], ["get", "update"], [lease]),
    ]
    if self_managed_tls:
        rules += [_rule("", ["secrets"], ["create"]), _rule("", ["secrets"], ["get", "update"], secrets)]
    return rules


def webhook_namespace_rules(ledger_prefix: str) -> list[Rule]:
    """In celmut's namespace: the decision ledger's Leases, which make split decisions exact across the
    webhook's replicas and workers (:mod:`celmut.kube.decision_ledger`; create cannot be limited to names)."""
    names = [f"{ledger_prefix}-{stripe:02d}" for stripe in range(DECISION_LEDGER_STRIPES)]
    return [
        _rule("coordination.k8s.io", ["leases"], ["create"]),
        _rule("coordination.k8s.io", ["leases"], ["get", "update"], names),
    ]


def kyverno_exception_rules() -> list[Rule]:
    """In the namespace of the PolicyExceptions the controller keeps for Kyverno (one per policy celmut
    serves, so that Kyverno skips it); reading them is a shared rule."""
    return [_rule("policies.kyverno.io", ["policyexceptions"], ["create", "update", "delete"])]


def policy_validation_rules(name: str) -> list[Rule]:
    """The controller's ClusterRole ``name`` for the policy validating webhook (``policyValidation``): the
    ValidatingWebhookConfiguration ``name`` it keeps (create cannot be limited to a name; the CA bundle is
    patched into it by the TLS upkeep), and this ClusterRole itself, read for its uid: it owns the
    configuration, so deleting it (uninstall, the feature turned off) garbage-collects the configuration."""
    return [
        _rule("admissionregistration.k8s.io", ["validatingwebhookconfigurations"], ["create"]),
        _rule("admissionregistration.k8s.io", ["validatingwebhookconfigurations"], ["get", "update", "patch"], [name]),
        _rule("rbac.authorization.k8s.io", ["clusterroles"], ["get"], [name]),
    ]
