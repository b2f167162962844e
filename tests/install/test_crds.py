"""The CRDs in crds/ and in the chart: generated from celmut/install, valid apiextensions.k8s.io/v1
objects with structural schemas, named as celmut watches them, and accepting what celmut accepts
while rejecting what it would refuse."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from celmut.install.crds import all_crds, generated_files
from celmut.install.report_crds import GROUP as REPORTS_GROUP
from celmut.kube import global_context_entries as gctx
from celmut.kube.policy_source import POLICY_KINDS
from tests.kube.conftest import pods_create

from .structural import structural_problems, validate

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = "1.30"  # the oldest minor celmut supports with every kind it reads
ALL_CRDS = {crd.kind: crd.to_dict() for crd in all_crds()}
#: The policy kinds celmut reads (the report kinds it writes are tested in test_report_crds.py).
CRDS = {kind: crd for kind, crd in ALL_CRDS.items() if crd["spec"]["group"] != REPORTS_GROUP}


def test_the_crd_files_are_what_celmut_install_generates() -> None:
    stale = [
        str(p.relative_to(ROOT)) for p, text in generated_files(ROOT).items() if not p.exists() or p.read_text() != text
    ]
    assert not stale, f"regenerate with `make crds`: {stale}"
    shipped = {p.name for p in (ROOT / "crds").glob("*.yaml")}
    assert shipped == {crd.file_name for crd in all_crds()}, "crds/ holds a file celmut does not generate"


@pytest.mark.parametrize("kind", sorted(ALL_CRDS))
def test_each_crd_is_a_valid_apiextensions_v1_object(kind: str) -> None:
    kubernetes_validate.validate(ALL_CRDS[kind], KUBERNETES, strict=True)


@pytest.mark.parametrize("kind", sorted(ALL_CRDS))
def test_each_schema_is_structural(kind: str) -> None:
    for version in ALL_CRDS[kind]["spec"]["versions"]:
        assert structural_problems(version["schema"]["openAPIV3Schema"]) == [], version["name"]


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_each_crd_has_one_storage_version_and_a_status_subresource_where_celmut_writes_conditions(kind: str) -> None:
    crd = CRDS[kind]
    versions = crd["spec"]["versions"]
    assert [v["storage"] for v in versions].count(True) == 1
    if kind == "GlobalContextEntry":  # not a policy: celmut.kube.global_context writes its status
        assert all("subresources" in version for version in versions)
        return
    watched = next(spec for spec in POLICY_KINDS if spec.kind == kind)
    for version in versions:
        assert ("subresources" in version) == bool(watched.conditions_at), version["name"]


def test_plural_names_versions_and_scopes_match_what_celmut_watches() -> None:
    watched = {spec.kind: spec for spec in POLICY_KINDS if spec.group and not spec.group.endswith("k8s.io")}
    assert set(watched) | {"GlobalContextEntry"} == set(CRDS)
    entry = CRDS["GlobalContextEntry"]["spec"]  # watched by celmut.kube.global_context, in a version served
    assert f"{entry['group']}/{entry['names']['plural']}" == f"{gctx.API_VERSION.split('/')[0]}/{gctx.RESOURCE}"
    assert gctx.API_VERSION.split("/")[1] in {v["name"] for v in entry["versions"]}
    for kind, spec in watched.items():
        crd = CRDS[kind]["spec"]
        assert (crd["group"], crd["names"]["plural"]) == (spec.group, spec.resource)
        assert {v["name"] for v in crd["versions"]} == set(spec.versions)
    scopes = {kind: CRDS[kind]["spec"]["scope"] for kind in CRDS}
    assert {k for k, scope in scopes.items() if scope == "Namespaced"} == {
        "NamespacedMutatingPolicy",
        "PolicyException",
        "PodPinningPlan",
    }


def test_kyverno_policies_store_v1beta1_as_kyverno_and_deprecate_v1alpha1() -> None:
    for kind in ("MutatingPolicy", "NamespacedMutatingPolicy", "PolicyException"):
        versions = {v["name"]: v for v in CRDS[kind]["spec"]["versions"]}
        assert versions["v1beta1"]["storage"] and versions["v1alpha1"].get("deprecated"), kind
        schemas = [v["schema"] for v in versions.values()]
        assert all(s == schemas[0] for s in schemas), f"{kind}: versions differ"


def test_podmutation_is_cluster_scoped_with_the_documented_short_names() -> None:
    names = CRDS["PodMutation"]["spec"]["names"]
    assert (CRDS["PodMutation"]["metadata"]["name"], names["shortNames"]) == (
        "podmutations.pod-mutations.cast.ai",
        ["pomu", "pomus"],
    )
    assert CRDS["PodMutation"]["spec"]["scope"] == "Cluster"


# --- documents the schemas accept and reject -----------------------------------------------------------

POD_MUTATION = {
    "apiVersion": "pod-mutations.cast.ai/v1",
    "kind": "PodMutation",
    "metadata": {"name": "web"},
    "spec": {
        # the reference's complete filterV2 example
        "filterV2": {
            "workload": {
                "namespaces": [{"type": "exact", "value": "production"}],
                "names": [{"type": "regex", "value": "^frontend-.*$"}],
                "kinds": [{"type": "exact", "value": "Deployment"}, {"type": "exact", "value": "StatefulSet"}],
                "excludeNames": [{"type": "exact", "value": "frontend-canary"}],
            },
            "pod": {
                "labels": {
                    "matchers": [
                        {
                            "keyMatcher": {"type": "exact", "value": "tier"},
                            "valueMatcher": {"type": "exact", "value": "web"},
                        }
                    ],
                    "operator": "and",
                },
                "excludeLabels": {
                    "matchers": [
                        {
                            "keyMatcher": {"type": "exact", "value": "skip-mutation"},
                            "valueMatcher": {"type": "exact", "value": "true"},
                        }
                    ],
                    "operator": "or",
                },
            },
        },
        # the reference's legacy filter example
        "filter": {
            "workload": {"namespaces": ["production"], "excludeKinds": ["DaemonSet"]},
            "pod": {"labelsFilter": [{"key": "environment", "value": "production"}], "labelsOperator": "and"},
        },
        "patchesV2": [
            {
                "operations": [
                    {"op": "add", "path": "/metadata/labels/environment", "value": "production"},
                    {"op": "move", "from": "/metadata/labels/agentpool", "path": "/metadata/labels/dedicated"},
                    {"op": "remove", "path": "/metadata/labels/deprecated-label"},
                    {"op": "add", "path": "/spec/tolerations/-", "value": {"key": "k", "operator": "Exists"}},
                ]
            }
        ],
        "patches": [{"op": "test", "path": "/metadata/annotations/cast.ai~1mutation", "value": None}],
        "restartPolicy": "deferred",
        "spotConfig": {"mode": "preferred-spot", "distributionPercentage": 80},
        "distributionGroups": [
            {"name": "a", "percentage": 30, "configuration": {"spotMode": "only-spot"}},
            {"name": "b", "percentage": 70, "configuration": {"patchesV2": [{"operations": []}]}},
        ],
    },
}
PIN_PLAN = {
    "apiVersion": "pinning.celmut.io/v1alpha1",
    "kind": "PodPinningPlan",
    "metadata": {"name": "plan", "namespace": "shop"},
    "spec": {
        "pins": [
            {"workload": {"kind": "StatefulSet", "name": "db"}, "ordinal": 0, "node": "node-a"},
            {"labelSelector": {"matchLabels": {"app": "cache"}}, "node": "node-b"},
        ]
    },
}
MUTATING_POLICY = {
    "apiVersion": "policies.kyverno.io/v1beta1",
    "kind": "MutatingPolicy",
    "metadata": {"name": "p"},
    "spec": {
        "matchConstraints": pods_create(),
        "targetMatchConstraints": {"expression": "resource.List('v1', 'configmaps', '').items"},
        "targetMatchConditions": [{"name": "named", "expression": "has(object.metadata.name)"}],
        "evaluation": {
            "mutateExisting": {"enabled": True},
            "skipBackgroundRequests": False,
            "useServerSideApply": True,
        },
        "auditAnnotations": [{"key": "k", "valueExpression": "'v'"}],
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}],
    },
    "status": {
        "conditionStatus": {
            "ready": True,
            "conditions": [
                {
                    "type": "celmut.io/Compiled",
                    "status": "True",
                    "reason": "Compiled",
                    "message": "the policy compiled and is in service",
                    "observedGeneration": 1,
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        }
    },
}
EXCEPTION = {
    "apiVersion": "policies.kyverno.io/v1",
    "kind": "PolicyException",
    "metadata": {"name": "e", "namespace": "shop"},
    "spec": {
        "policyRefs": [{"name": "p", "kind": "MutatingPolicy"}],
        "images": ["nginx:*"],
        "expiresAt": "2030-01-01T00:00:00Z",
    },
}
GPU = {
    "apiVersion": "presets.celmut.io/v1alpha1",
    "kind": "GpuSlicing",
    "metadata": {"name": "g"},
    "spec": {"workloadTypes": {"training": 8}},
}
ACCEPTED = {
    "PodMutation": POD_MUTATION,
    "PodPinningPlan": PIN_PLAN,
    "MutatingPolicy": MUTATING_POLICY,
    "PolicyException": EXCEPTION,
    "GpuSlicing": GPU,
}


def changed(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy with the value at a dotted ``path`` (list indexes as numbers) replaced, or removed (``...``)."""
    out = copy.deepcopy(document)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    holder: Any = out
    for part in parents:
        holder = holder[part]
    if value is ...:
        del holder[last]
    else:
        holder[last] = value
    return out


@pytest.mark.parametrize("kind", sorted(ACCEPTED))
def test_documented_examples_are_accepted(kind: str) -> None:
    assert validate(CRDS[kind], ACCEPTED[kind]) == []


REJECTED = [
    ("spot percentage above 100", "PodMutation", "spec.spotConfig.distributionPercentage", 101),
    ("negative group percentage", "PodMutation", "spec.distributionGroups.0.percentage", -1),
    ("unknown spot mode", "PodMutation", "spec.spotConfig.mode", "spot-please"),
    ("unknown matcher type", "PodMutation", "spec.filterV2.workload.names.0.type", "glob"),
    ("matcher without value", "PodMutation", "spec.filterV2.workload.names.0.value", ...),
    ("label matcher without valueMatcher", "PodMutation", "spec.filterV2.pod.labels.matchers.0.valueMatcher", ...),
    ("unknown label operator", "PodMutation", "spec.filterV2.pod.labels.operator", "xor"),
    ("add without value", "PodMutation", "spec.patchesV2.0.operations.0.value", ...),
    ("move without from", "PodMutation", "spec.patchesV2.0.operations.1.from", ...),
    ("path not a JSON Pointer", "PodMutation", "spec.patchesV2.0.operations.2.path", "metadata/labels/x"),
    ("bad ~ escape in a path", "PodMutation", "spec.patches.0.path", "/metadata/annotations/cast.ai~2x"),
    ("unknown operation", "PodMutation", "spec.patches.0.op", "merge"),
    ("group without configuration", "PodMutation", "spec.distributionGroups.0.configuration", ...),
    ("duplicate group names", "PodMutation", "spec.distributionGroups.1.name", "a"),
    ("unknown restart policy", "PodMutation", "spec.restartPolicy", "sometimes"),
    ("misspelt field", "PodMutation", "spec.spotconfig", {}),
    (
        "pin with workload and labelSelector",
        "PodPinningPlan",
        "spec.pins.1.workload",
        {"kind": "Deployment", "name": "w"},
    ),
    ("pin with neither workload nor labelSelector", "PodPinningPlan", "spec.pins.1.labelSelector", ...),
    ("ordinal on a Deployment pin", "PodPinningPlan", "spec.pins.0.workload.kind", "Deployment"),
    ("pin without node", "PodPinningPlan", "spec.pins.0.node", ...),
    ("plan without pins", "PodPinningPlan", "spec.pins", []),
    ("unknown workload kind", "PodPinningPlan", "spec.pins.0.workload.kind", "Rollout"),
    ("zero GPU slices", "GpuSlicing", "spec.workloadTypes.training", 0),
    ("shared resource without a domain", "GpuSlicing", "spec.sharedResource", "gpu-shared"),
    ("unknown failurePolicy", "MutatingPolicy", "spec.failurePolicy", "Sometimes"),
    ("mutation without patchType", "MutatingPolicy", "spec.mutations.0.patchType", ...),
    (
        "duplicate match condition names",
        "MutatingPolicy",
        "spec.targetMatchConditions",
        [{"name": "a", "expression": "true"}] * 2,
    ),
    ("condition status not True/False/Unknown", "MutatingPolicy", "status.conditionStatus.conditions.0.status", "Yes"),
    ("exception without policyRefs", "PolicyException", "spec.policyRefs", ...),
    ("policyRef without kind", "PolicyException", "spec.policyRefs.0.kind", ...),
]


@pytest.mark.parametrize(("what", "kind", "path", "value"), REJECTED, ids=[r[0] for r in REJECTED])
def test_the_schema_rejects(what: str, kind: str, path: str, value: Any) -> None:
    assert validate(CRDS[kind], changed(ACCEPTED[kind], path, value)) != [], what


def test_kyverno_schemas_accept_every_served_version() -> None:
    for version in ("v1alpha1", "v1beta1", "v1"):
        assert (
            validate(CRDS["MutatingPolicy"], {**MUTATING_POLICY, "apiVersion": f"policies.kyverno.io/{version}"}) == []
        )


def test_the_crd_files_load_as_the_objects_celmut_defines() -> None:
    for crd in all_crds():
        assert yaml.safe_load((ROOT / "crds" / crd.file_name).read_text()) == crd.to_dict()
