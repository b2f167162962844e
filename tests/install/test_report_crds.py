"""The wgpolicyk8s.io report CRDs celmut ships accept, field for field, the reports celmut writes and
the ones Kyverno's chainsaw tests assert (mutating-policies/reporting/*/report*.yaml), and are named as
Kyverno's are (``kubectl get polr`` / ``cpolr``)."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.install.report_crds import report_crds
from celmut.runtime.report_objects import ResourceRef, build_report
from celmut.runtime.report_results import ReportResult

from .structural import validate

CRDS = {crd.kind: crd.to_dict() for crd in report_crds()}

RESULTS = [
    ReportResult(
        policy="add-labels",
        result="fail",
        message="mutation is not applied",
        source="KyvernoMutatingPolicy",
        properties=(("process", "background scan"),),
        timestamp=1700000000,
    ),
    ReportResult(
        policy="team-a/x",
        result="skip",
        message="rule is skipped due to policy exception: ns/e",
        source="KyvernoMutatingPolicy",
        rule="exception",
        properties=(("exceptions", "e"),),
        category="Best Practices",
        severity="medium",
        timestamp=1,
    ),
    ReportResult(policy="map", result="warn", message="m", source="MutatingAdmissionPolicy", rule="map", scored=False),
]


@pytest.mark.parametrize(
    ("kind", "ref"),
    [
        ("PolicyReport", ResourceRef("apps/v1", "Deployment", "default", "web", "u-1")),
        ("ClusterPolicyReport", ResourceRef("v1", "Namespace", "", "team-a", "u-2")),
    ],
)
def test_what_celmut_writes_is_valid_against_the_crd(kind: str, ref: ResourceRef) -> None:
    report = build_report(ref, RESULTS, prefix="celmut-")
    assert report["kind"] == kind
    assert validate(CRDS[kind], report) == []


def test_kyvernos_chainsaw_report_is_valid_against_the_crd() -> None:
    """mutating-policies/reporting/with-exception-skip-result/report-skip-assert.yaml, with its timestamps."""
    kyverno: dict[str, Any] = {
        "apiVersion": "wgpolicyk8s.io/v1alpha2",
        "kind": "PolicyReport",
        "metadata": {"name": "uid", "namespace": "mpol-exceptions-regular"},
        "results": [
            {
                "message": "rule is skipped due to policy exception: mpol-exceptions-regular/check-name",
                "policy": "add-deployment-labels",
                "properties": {"exceptions": "check-name", "process": "background scan"},
                "result": "skip",
                "rule": "exception",
                "scored": True,
                "source": "KyvernoMutatingPolicy",
                "timestamp": {"nanos": 0, "seconds": 1700000000},
            }
        ],
        "scope": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "namespace": "mpol-exceptions-regular"},
        "summary": {"error": 0, "fail": 0, "pass": 0, "skip": 1, "warn": 0},
    }
    assert validate(CRDS["PolicyReport"], kyverno) == []


def test_a_result_outside_the_enum_is_refused() -> None:
    report = build_report(ResourceRef("v1", "ConfigMap", "default", "cm", "u"), RESULTS)
    report["results"][0]["result"] = "maybe"
    assert validate(CRDS["PolicyReport"], report) != []


def test_names_and_short_names_are_kyvernos() -> None:
    names = {kind: crd["spec"]["names"] for kind, crd in CRDS.items()}
    assert (names["PolicyReport"]["plural"], names["PolicyReport"]["shortNames"]) == ("policyreports", ["polr"])
    assert (names["ClusterPolicyReport"]["plural"], names["ClusterPolicyReport"]["shortNames"]) == (
        "clusterpolicyreports",
        ["cpolr"],
    )
    assert CRDS["ClusterPolicyReport"]["spec"]["scope"] == "Cluster"
    assert CRDS["PolicyReport"]["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
