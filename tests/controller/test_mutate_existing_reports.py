"""Issue 28: the targets the controller's mutateExisting patches get a report result, as Kyverno's
``pkg/background/mpol/processor.go`` ``audit`` writes one on each target it updates (built by
``pkg/utils/report/results.go`` ``MutationEngineResponseToReportResults``: the ``patched-target``
property) — chainsaw ``mutating-policies/reporting/mutate-existing`` and ``existing-admission-flow``, where
the trigger is a Namespace and the targets its ConfigMaps, so no background scan of the policy ever
looks at the target: the result must outlive the policy's full scans, and go with the target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from celmut.controller.report_loop import ReportingConfig
from tests.controller.support import configmap, running, write_policies
from tests.controller.test_policy_reports import install_report_crds, report_of
from tests.fakekube import FakeApiServer
from tests.waiting import HANG_SECONDS, eventually

NAMESPACE_TRIGGER_POLICY: dict[str, Any] = {
    "apiVersion": "policies.kyverno.io/v1",
    "kind": "MutatingPolicy",
    "metadata": {"name": "label-team-configmaps"},
    "spec": {
        "evaluation": {"mutateExisting": {"enabled": True}},
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["namespaces"],
                }
            ]
        },
        "targetMatchConstraints": {
            "namespaceSelector": {"matchLabels": {"test": "enabled"}},
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["configmaps"],
                }
            ],
        },
        "mutations": [
            {
                "patchType": "ApplyConfiguration",
                "applyConfiguration": {
                    "expression": 'Object{metadata: Object.metadata{labels: Object.metadata.labels{foo: "bar"}}}'
                },
            }
        ],
    },
}


@pytest.mark.fakekube(garbage_collection=True)
def test_a_target_patched_by_mutate_existing_is_reported_with_the_patched_target(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake = fake_apiserver
    install_report_crds(fake)
    fake.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    fake.store.create(configmap("cm", "team"))
    policies = write_policies(tmp_path / "p", NAMESPACE_TRIGGER_POLICY)
    with running(fake, tmp_path, policies, reports=ReportingConfig(interval=0.05)) as controller:
        namespace = fake.store.get("namespaces", "team")
        namespace["metadata"]["labels"] = {"test": "enabled"}
        fake.store.update(namespace)  # the trigger: its ConfigMaps are now targets
        report = eventually(lambda: report_of(fake, "cm", "team"))
        assert fake.store.get("configmaps", "cm", "team")["metadata"]["labels"] == {"foo": "bar"}
        [result] = report["results"]
        assert {k: v for k, v in result.items() if k != "timestamp"} == {
            "message": "success",
            "policy": "label-team-configmaps",
            "properties": {
                "patched-target": "/v1, Kind=ConfigMap Name=cm Namespace=team",
                "process": "background scan",
            },
            "result": "pass",
            "scored": True,
            "source": "KyvernoMutatingPolicy",
        }
        assert report["scope"]["name"] == "cm" and report["metadata"]["ownerReferences"][0]["name"] == "cm"

        # a full scan of the policy (it names namespaces, not configmaps) keeps the target's result
        assert controller.reports is not None
        before = len(fake.requests_matching("DELETE", "policyreports"))
        controller.reports.scan_due()
        eventually(lambda: not controller.reports.scan_pending())  # type: ignore[union-attr]
        controller.reports.scan_due()
        eventually(lambda: not controller.reports.scan_pending())  # type: ignore[union-attr]
        assert report_of(fake, "cm", "team") is not None
        assert len(fake.requests_matching("DELETE", "policyreports")) == before

        fake.store.delete("configmaps", "cm", "team")  # the report goes with its target (ownerReference)
        eventually(lambda: not fake.store.list("policyreports", "team"))


@pytest.mark.fakekube(garbage_collection=True)
def test_a_target_an_earlier_run_patched_keeps_its_result_through_the_next_runs_scans(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """A restarted controller (or a new leader) takes the stored reports over: the targets the earlier run
    patched are not patched again (nothing changes), and its full scans of the policy — which name the
    trigger's kind, not the target's — must not drop their results (issue 35: each report once per change)."""
    fake = fake_apiserver
    install_report_crds(fake)
    fake.store.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {"test": "enabled"}}}
    )
    fake.store.create(configmap("cm", "team"))
    policies = write_policies(tmp_path / "p", NAMESPACE_TRIGGER_POLICY)
    settings: dict[str, Any] = {"reports": ReportingConfig(interval=0.05)}
    with running(fake, tmp_path, policies, **settings):
        eventually(lambda: report_of(fake, "cm", "team"))  # the start scan patched it and reported it
    fake.clear_requests()
    with running(fake, tmp_path, policies, identity="second", **settings) as controller:
        assert controller.reports is not None
        for _ in range(2):
            controller.reports.scan_due()
            eventually(lambda: not controller.reports.scan_pending())  # type: ignore[union-attr]
        assert controller.wait_idle(HANG_SECONDS)
        [result] = (report_of(fake, "cm", "team") or {})["results"]
        assert result["properties"]["patched-target"] == "/v1, Kind=ConfigMap Name=cm Namespace=team"
        report_writes = [
            r for r in fake.requests if "policyreports" in r.path and r.method in ("PUT", "POST", "DELETE")
        ]
        assert report_writes == []
