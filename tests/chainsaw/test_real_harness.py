"""The harness that runs Kyverno's chainsaw cases on a real, shared API server (tests/chainsaw/real_cluster.py),
run here against the fake API server so CI keeps it working: a case passes through it as it does on the
real control plane, leaves nothing behind, and never writes, deletes or registers anything that reaches
objects outside its run (what makes it safe on a cluster other people use)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes.dynamic import DynamicClient

from celmut.kube import certs
from celmut.runtime.report_objects import ResourceRef, build_report
from celmut.runtime.report_results import ReportResult
from tests.chainsaw.real_cluster import real_run
from tests.chainsaw.shared_cluster import ForeignObject, RunScope
from tests.fakekube import FakeApiServer

MANAGED = ("validatingwebhookconfigurations", "mutatingwebhookconfigurations", "clusterroles")


def _pki(directory: Path) -> Path:
    """What the control plane's pki holds for webhooks: ``ca.crt``, ``webhook.crt``/``webhook.key`` for 127.0.0.1."""
    directory.mkdir()
    ca = certs.new_ca()
    serving = certs.issue(ca, ["127.0.0.1"])
    (directory / "ca.crt").write_bytes(ca.cert_pem)
    (directory / "webhook.crt").write_bytes(serving.cert_pem)
    (directory / "webhook.key").write_bytes(serving.key_pem)
    return directory


def _names(fake: FakeApiServer, resource: str) -> set[str]:
    return {o["metadata"]["name"] for o in fake.store.list(resource)}


@pytest.mark.fakekube(webhooks=True, native_map=True, garbage_collection=True)
def test_a_case_passes_through_the_harness_and_leaves_nothing_behind(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    before = {resource: _names(fake_apiserver, resource) for resource in (*MANAGED, "namespaces")}
    kubeconfig = fake_apiserver.kubeconfig(tmp_path / "kubeconfig")
    with real_run(kubeconfig, _pki(tmp_path / "pki")) as run:
        # a Kyverno PolicyViolation Event on the policy and on the ConfigMap: the webhook, the controller's
        # background scan and Events, and the policy validating webhook all in the loop
        assert run.case("mutating-policies/reporting/events-violation")[0] == "passed"
        assert run.case("mutating-policies/existing/reject-all-modes-disabled")[0] == "passed"
    after = {resource: _names(fake_apiserver, resource) for resource in (*MANAGED, "namespaces")}
    assert after == before
    # the policy and report CRDs it installed, removed once nothing of theirs was left
    assert not fake_apiserver.store.list("customresourcedefinitions")
    assert not [e for e in fake_apiserver.store.list("events") if e["metadata"]["namespace"] == "default"]


def _scope(fake: FakeApiServer) -> RunScope:
    return RunScope(DynamicClient(fake.api_client()))


@pytest.mark.fakekube
def test_an_object_of_a_tests_name_that_is_not_the_runs_is_never_touched(fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "isolated-ns"}})
    scope = _scope(fake_apiserver)
    with pytest.raises(ForeignObject, match="Namespace isolated-ns exists and is not this run's"):
        scope.prepare({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "isolated-ns"}})
    ours: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh-ns"}}
    scope.prepare(ours)
    assert ours["metadata"]["labels"] == {"celmut-chainsaw": scope.value}


@pytest.mark.fakekube
def test_a_runs_policies_select_only_the_runs_objects(fake_apiserver: FakeApiServer) -> None:
    scope = _scope(fake_apiserver)
    policy: dict[str, Any] = {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": "p"},
        "spec": {
            "matchConstraints": {
                "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
                "objectSelector": {"matchLabels": {"app": "x"}},
            },
            "targetMatchConstraints": {
                "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["secrets"]}]
            },
        },
    }
    scope.prepare(policy)
    run_label = {"key": "celmut-chainsaw", "operator": "In", "values": [scope.value]}
    assert policy["spec"]["matchConstraints"]["objectSelector"] == {
        "matchLabels": {"app": "x"},
        "matchExpressions": [run_label],
    }
    assert policy["spec"]["targetMatchConstraints"]["objectSelector"] == {"matchExpressions": [run_label]}


@pytest.mark.fakekube(webhooks=True, native_map=True, garbage_collection=True)
def test_a_case_does_not_start_while_another_celmuts_reports_are_there(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """A celmut controller adopts every report labelled managed-by celmut and drops the results of policies
    it does not serve: a run's would rewrite another engineer's reports."""
    kubeconfig = fake_apiserver.kubeconfig(tmp_path / "kubeconfig")
    with real_run(kubeconfig, _pki(tmp_path / "pki")) as run:
        theirs = fake_apiserver.store.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "theirs", "namespace": "default"}}
        )
        ref = ResourceRef("v1", "ConfigMap", "default", "theirs", theirs["metadata"]["uid"])
        their_result = ReportResult("their-policy", "pass", "success", "KyvernoMutatingPolicy", timestamp=1)
        fake_apiserver.store.create(build_report(ref, [their_result]))
        outcome, detail = run.case("mutating-policies/reporting/events-violation")
        assert (outcome, detail) == (
            "failed",
            f"shared cluster: another celmut's objects are on the cluster (PolicyReport default/{ref.uid}), which "
            "a celmut of this run would take over: not run now",
        )
        stored = fake_apiserver.store.get("wgpolicyk8s.io/v1alpha2/policyreports", ref.uid, namespace="default")
        assert stored["results"] == [their_result.to_dict()]
        fake_apiserver.store.delete("configmaps", "theirs", namespace="default")
