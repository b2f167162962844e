"""Issue 20: celmut's policies.kyverno.io CRDs against Kyverno's generated ones (kyverno/api
``config/crds/policies.kyverno.io_*.yaml``, the markers of ``api/policies.kyverno.io/{v1,v1beta1,v1alpha1}``;
research notes /work/research/kyverno-map-generator.md Topic B). Each row is one difference there was,
the upstream source that decides it, and what celmut's CRD now does — so that a policy one accepts the
other accepts, and either tool can take over the other's CRD."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from celmut.install.kyverno_crds import kyverno_crds

from .structural import validate

Obj = dict[str, Any]
CRDS = {crd.kind: crd.to_dict() for crd in kyverno_crds()}
POLICY_KINDS = ("MutatingPolicy", "NamespacedMutatingPolicy")


def versions(kind: str) -> dict[str, Obj]:
    return {v["name"]: v for v in CRDS[kind]["spec"]["versions"]}


def schema_at(kind: str, *path: str) -> Obj:
    node = versions(kind)["v1"]["schema"]["openAPIV3Schema"]
    for key in path:
        node = node["properties"][key]
    return node


def policy(status: Obj) -> Obj:
    return {
        "apiVersion": "policies.kyverno.io/v1beta1",
        "kind": "MutatingPolicy",
        "metadata": {"name": "p"},
        "spec": {"mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}]},
        "status": status,
    }


def condition(message: str) -> Obj:
    return {
        "type": "Ready",
        "status": "True",
        "reason": "Succeeded",
        "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


AUTOGEN = {  # what Kyverno writes for a pod policy (pkg/cel/policies/mpol/autogen: one config per group)
    "autogen": {
        "configs": {
            "defaults": {
                "targets": [{"group": "apps", "version": "v1", "resource": "deployments", "kind": "Deployment"}],
                "spec": {
                    "matchConstraints": {
                        "resourceRules": [
                            {
                                "apiGroups": ["apps"],
                                "apiVersions": ["v1"],
                                "operations": ["CREATE"],
                                "resources": ["deployments"],
                            }
                        ]
                    },
                    "mutations": [
                        {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{}"}}
                    ],
                },
            }
        }
    }
}


def without_target_kind() -> Obj:
    status = copy.deepcopy(AUTOGEN)
    del status["autogen"]["configs"]["defaults"]["targets"][0]["kind"]
    return status


def storage_is_v1beta1(kind: str) -> bool:
    return [name for name, v in versions(kind).items() if v["storage"]] == ["v1beta1"]


# (difference, upstream source, what holds now)
PARITY: list[tuple[str, str, Callable[[], bool]]] = [
    (
        "storage version v1beta1 (was v1): a CRD either tool updates keeps storedVersions [v1beta1]",
        "kyverno/api api/policies.kyverno.io/v1beta1/mutating_policy.go +kubebuilder:storageversion",
        lambda: all(storage_is_v1beta1(kind) for kind in POLICY_KINDS),
    ),
    (
        "PolicyException storage version v1beta1 (was v1)",
        "kyverno/api api/policies.kyverno.io/v1beta1/policy_exception.go +kubebuilder:storageversion",
        lambda: storage_is_v1beta1("PolicyException"),
    ),
    (
        "selectableFields .spec.evaluation.mode on every version (was none): kubectl get --field-selector",
        "kyverno/api api/policies.kyverno.io/{v1,v1beta1,v1alpha1}/mutating_policy.go +kubebuilder:selectablefield",
        lambda: all(
            v.get("selectableFields") == [{"jsonPath": ".spec.evaluation.mode"}]
            for kind in POLICY_KINDS
            for v in versions(kind).values()
        ),
    ),
    (
        "evaluation.skipBackgroundRequests defaults to true in the stored object (was no default)",
        "kyverno/api EvaluationConfiguration.SkipBackgroundRequests +kubebuilder:default=true",
        lambda: schema_at("MutatingPolicy", "spec", "evaluation", "skipBackgroundRequests").get("default") is True,
    ),
    (
        "conditionStatus.conditions accepts two conditions of one type (was a list-map keyed by type)",
        "kyverno/api ConditionStatus.Conditions []metav1.Condition (no +listType)",
        lambda: (
            validate(
                CRDS["MutatingPolicy"],
                policy({"conditionStatus": {"conditions": [condition("kyverno"), condition("again")]}}),
            )
            == []
        ),
    ),
    (
        "status.autogen accepts what Kyverno writes (typed: configs.<group>.{spec, targets})",
        "kyverno/api api/policies.kyverno.io/v1alpha1 MutatingPolicyAutogen{Targets, Spec}",
        lambda: validate(CRDS["MutatingPolicy"], policy(AUTOGEN)) == [],
    ),
    (
        "status.autogen refuses a target without kind, as Kyverno's (was free-form, accepting anything)",
        "kyverno/api api/policies.kyverno.io/v1alpha1 Target{Version, Resource, Kind required}",
        lambda: validate(CRDS["MutatingPolicy"], policy(without_target_kind())) != [],
    ),
    (
        "auditAnnotations: atomic either way (an array without list-type is atomic), no difference",
        "kyverno/api MutatingPolicySpec.AuditAnnotations (no +listType)",
        lambda: (
            schema_at("MutatingPolicy", "spec", "auditAnnotations").get("x-kubernetes-list-type", "atomic") == "atomic"
        ),
    ),
    (
        "printer columns AGE (date) and READY (string of .status.conditionStatus.ready), unchanged",
        "kyverno/api mutating_policy.go +kubebuilder:printcolumn",
        lambda: all(
            [(c["name"], c["type"], c["jsonPath"]) for c in v["additionalPrinterColumns"]]
            == [("AGE", "date", ".metadata.creationTimestamp"), ("READY", "string", ".status.conditionStatus.ready")]
            for kind in POLICY_KINDS
            for v in versions(kind).values()
        ),
    ),
    (
        "v1alpha1 served but deprecated, v1 and v1beta1 served, one schema for all, unchanged",
        "kyverno/api api/policies.kyverno.io/v1alpha1 +kubebuilder:deprecatedversion",
        lambda: all(
            {n: (v["served"], v.get("deprecated", False)) for n, v in versions(kind).items()}
            == {"v1": (True, False), "v1beta1": (True, False), "v1alpha1": (True, True)}
            for kind in (*POLICY_KINDS, "PolicyException")
        ),
    ),
]


@pytest.mark.parametrize(("difference", "upstream", "holds"), PARITY, ids=[p[0].split(" (")[0] for p in PARITY])
def test_celmuts_kyverno_crds_accept_what_kyvernos_accept(
    difference: str, upstream: str, holds: Callable[[], bool]
) -> None:
    assert holds(), f"{difference} — {upstream}"
