"""Background PolicyReports through the fake API server (serving the wgpolicyk8s.io CRDs, with its
garbage collector): what Kyverno's chainsaw tests ``test/conformance/chainsaw/mutating-policies/
reporting/*`` assert of Kyverno, asserted of celmut.

* ``standard-background-policy-creation``: a pre-existing resource the policy would change is a
  ``fail`` / ``mutation is not applied``; one a matchCondition leaves out is a ``skip`` / ``skip``;
* ``mutate-existing-background-policy-report``: once mutateExisting applied the mutation it passes;
* ``with-exception-skip-result``: an exception turns it ``skip`` (rule ``exception``);
* deleting the policy removes its results (the report goes when none is left), deleting the resource
  deletes its report (ownerReference, the garbage collector).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.controller.support import add_label, configmap, policy, running, write_policies
from tests.fakekube import FakeApiServer
from tests.kube.crds import report_crds
from tests.waiting import eventually

POLR = "policyreports"


def _settings(**extra: Any) -> dict[str, Any]:
    from celmut.controller.report_loop import ReportingConfig

    return {"reports": ReportingConfig(interval=0.05), **extra}


def report_of(server: FakeApiServer, name: str, namespace: str = "default") -> dict[str, Any] | None:
    uid = server.store.get("configmaps", name, namespace)["metadata"]["uid"]
    if not server.store.exists(POLR, uid, namespace):
        return None
    return server.store.get(POLR, uid, namespace)


def results(server: FakeApiServer, name: str) -> list[tuple[str, str, str]]:
    report = report_of(server, name)
    return [(r["policy"], r["result"], r["message"]) for r in (report or {}).get("results", [])]


def install_report_crds(server: FakeApiServer) -> None:
    for crd in report_crds():
        server.store.create(crd)


LABEL = add_label("foo", "bar")


@pytest.mark.fakekube(garbage_collection=True)
def test_existing_resources_fail_pass_or_skip_as_kyverno_reports_them(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """chainsaw standard-background-policy-creation, field for field (report-assert.yaml)."""
    install_report_crds(fake_apiserver)
    fake_apiserver.store.create(configmap("mutated", foo="bar"))
    fake_apiserver.store.create(configmap("unmutated"))
    fake_apiserver.store.create(configmap("left-out", skip="yes"))
    pol = policy(
        "add-foo",
        LABEL,
        admission=True,
        mutate_existing=False,
        conditions=["!has(object.metadata.labels) || !('skip' in object.metadata.labels)"],
    )
    with running(fake_apiserver, tmp_path, write_policies(tmp_path / "p", pol), **_settings()):
        eventually(lambda: report_of(fake_apiserver, "left-out"))
        report = eventually(lambda: report_of(fake_apiserver, "unmutated"))
    cm = fake_apiserver.store.get("configmaps", "unmutated", "default")
    assert report["apiVersion"] == "wgpolicyk8s.io/v1alpha2" and report["kind"] == "PolicyReport"
    assert report["metadata"]["name"] == cm["metadata"]["uid"]  # Kyverno names it after the resource UID
    assert report["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "celmut"
    assert report["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "unmutated", "uid": cm["metadata"]["uid"]}
    ]
    assert report["scope"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "unmutated",
        "namespace": "default",
        "uid": cm["metadata"]["uid"],
    }
    assert report["summary"] == {"error": 0, "fail": 1, "pass": 0, "skip": 0, "warn": 0}
    [result] = report["results"]
    assert {k: v for k, v in result.items() if k != "timestamp"} == {
        "message": "mutation is not applied",
        "policy": "add-foo",
        "properties": {"process": "background scan"},
        "result": "fail",
        "scored": True,
        "source": "KyvernoMutatingPolicy",
    }
    assert result["timestamp"]["seconds"] > 0
    assert results(fake_apiserver, "mutated") == [("add-foo", "pass", "success")]
    assert results(fake_apiserver, "left-out") == [("add-foo", "skip", "skip")]


@pytest.mark.fakekube(garbage_collection=True)
def test_fail_becomes_pass_once_mutate_existing_applied_it(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """chainsaw mutate-existing-background-policy-report: the patched target passes."""
    install_report_crds(fake_apiserver)
    fake_apiserver.store.create(configmap("target"))
    pol = policy("add-foo", LABEL, admission=True, mutate_existing=True)
    with running(fake_apiserver, tmp_path, write_policies(tmp_path / "p", pol), **_settings()):
        eventually(lambda: fake_apiserver.store.get("configmaps", "target", "default")["metadata"].get("labels"))
        eventually(lambda: results(fake_apiserver, "target") == [("add-foo", "pass", "success")])


@pytest.mark.fakekube(garbage_collection=True)
def test_an_exception_skips_and_a_deleted_policy_takes_its_results_away(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """chainsaw with-exception-skip-result (report-skip-assert.yaml), then the policy goes."""
    install_report_crds(fake_apiserver)
    fake_apiserver.store.create(configmap("a"))
    fake_apiserver.store.create(configmap("b"))
    policies = write_policies(
        tmp_path / "p",
        policy("add-foo", LABEL, admission=True, mutate_existing=False),
        policy("add-baz", add_label("baz"), admission=True, mutate_existing=False),
    )
    with running(fake_apiserver, tmp_path, policies, **_settings()):
        eventually(lambda: len(results(fake_apiserver, "b")) == 2)
        assert results(fake_apiserver, "b") == [
            ("add-baz", "fail", "mutation is not applied"),
            ("add-foo", "fail", "mutation is not applied"),
        ]
        exception = {
            "apiVersion": "policies.kyverno.io/v1",
            "kind": "PolicyException",
            "metadata": {"name": "spare-b", "namespace": "default"},
            "spec": {
                "policyRefs": [{"name": "add-foo", "kind": "MutatingPolicy"}],
                "matchConditions": [{"name": "is-b", "expression": "object.metadata.name == 'b'"}],
            },
        }
        write_policies(policies, exception)
        eventually(
            lambda: (
                ("add-foo", "skip", "rule is skipped due to policy exception: default/spare-b")
                in results(fake_apiserver, "b")
            )
        )
        skipped = next(r for r in report_of(fake_apiserver, "b")["results"] if r["policy"] == "add-foo")  # type: ignore[index]
        assert skipped["rule"] == "exception"
        assert skipped["properties"] == {"exceptions": "spare-b", "process": "background scan"}
        assert report_of(fake_apiserver, "b")["summary"]["skip"] == 1  # type: ignore[index]
        assert results(fake_apiserver, "a") == [
            ("add-baz", "fail", "mutation is not applied"),
            ("add-foo", "fail", "mutation is not applied"),
        ]

        (policies / "add-baz.yaml").unlink()
        eventually(lambda: [r[0] for r in results(fake_apiserver, "a")] == ["add-foo"])
        (policies / "add-foo.yaml").unlink()
        eventually(lambda: report_of(fake_apiserver, "a") is None and report_of(fake_apiserver, "b") is None)


@pytest.mark.fakekube(garbage_collection=True)
def test_a_report_goes_with_its_resource_and_cluster_scoped_resources_get_cluster_reports(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    install_report_crds(fake_apiserver)
    fake_apiserver.store.create(configmap("doomed"))
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    rule_ns = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["namespaces"]}
    policies = write_policies(
        tmp_path / "p",
        policy("add-foo", LABEL, admission=True, mutate_existing=False),
        policy("label-ns", add_label("team"), rule=rule_ns, admission=True, mutate_existing=False),
    )
    with running(fake_apiserver, tmp_path, policies, **_settings()):
        uid = eventually(lambda: report_of(fake_apiserver, "doomed"))["metadata"]["name"]
        ns_uid = fake_apiserver.store.get("namespaces", "team-a")["metadata"]["uid"]
        cluster_report = eventually(
            lambda: (
                fake_apiserver.store.exists("clusterpolicyreports", ns_uid)
                and fake_apiserver.store.get("clusterpolicyreports", ns_uid)
            )
        )
        assert cluster_report["kind"] == "ClusterPolicyReport"
        assert "namespace" not in cluster_report["metadata"]
        assert cluster_report["scope"]["kind"] == "Namespace"
        fake_apiserver.store.delete("configmaps", "doomed", "default")
        assert not fake_apiserver.store.exists(POLR, uid, "default")  # the garbage collector took it
        time.sleep(0.3)  # a few passes: the writer does not write it back
        assert not fake_apiserver.store.exists(POLR, uid, "default")


def test_reports_disabled_by_label_or_background_off_are_not_written(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """The label reports.kyverno.io/disabled (any value: chainsaw generated-reporting-opt-in "disabled-wins"),
    and spec.evaluation.background.enabled: false (not scanned; nothing was admitted since the start)."""
    install_report_crds(fake_apiserver)
    fake_apiserver.store.create(configmap("cm"))
    quiet = policy("quiet", LABEL, admission=True, mutate_existing=False)
    quiet["metadata"]["labels"] = {"reports.kyverno.io/disabled": "false"}  # Kyverno: the label's presence
    no_background = policy("no-background", add_label("x"), admission=True, mutate_existing=False)
    no_background["spec"]["evaluation"]["background"] = {"enabled": False}
    loud = policy("loud", add_label("y"), admission=True, mutate_existing=False)
    with running(fake_apiserver, tmp_path, write_policies(tmp_path / "p", quiet, no_background, loud), **_settings()):
        eventually(lambda: results(fake_apiserver, "cm"))
        time.sleep(0.2)
        assert [r[0] for r in results(fake_apiserver, "cm")] == ["loud"]


def test_without_the_report_crds_nothing_is_written(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    fake_apiserver.store.create(configmap("cm"))
    pol = policy("add-foo", LABEL, admission=True, mutate_existing=False)
    with running(fake_apiserver, tmp_path, write_policies(tmp_path / "p", pol), **_settings()):
        time.sleep(0.5)
    assert not fake_apiserver.requests_matching("POST", r"wgpolicyk8s")
    assert not fake_apiserver.requests_matching("PUT", r"wgpolicyk8s")


def test_many_resources_and_policies_get_one_report_each_in_one_write_each(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """N resources x 5 policies: N reports (not 5 N), N writes; a rescan that finds the same writes none
    (benchmarks/report_bench.py measures the same at 1,000)."""
    install_report_crds(fake_apiserver)
    count = 150
    for i in range(count):
        fake_apiserver.store.create(configmap(f"cm-{i}", done="true"))
    policies = [policy(f"fail-{i}", add_label(f"l{i}"), admission=True, mutate_existing=False) for i in range(4)]
    policies.append(policy("pass", add_label("done"), admission=True, mutate_existing=False))
    with running(fake_apiserver, tmp_path, write_policies(tmp_path / "p", *policies), **_settings()) as controller:
        assert controller.reports is not None
        eventually(
            lambda: len(fake_apiserver.store.list(POLR, None)) == count and not controller.reports.writer.pending()
        )
        writes = [r for m in ("POST", "PUT", "DELETE") for r in fake_apiserver.requests_matching(m, "wgpolicyk8s")]
        assert len(writes) == count
        report = fake_apiserver.store.list(POLR, None)[0]
        assert report["summary"] == {"error": 0, "fail": 4, "pass": 1, "skip": 0, "warn": 0}
        metrics = controller.metrics.render().decode()
        assert f'celmut_policy_report_writes_total{{action="created"}} {float(count)}' in metrics
        assert (
            f'celmut_policy_report_results_total{{process="background scan",result="fail"}} {float(4 * count)}'
            in metrics
        )
        assert "celmut_policy_report_pending 0.0" in metrics
        fake_apiserver.clear_requests()
        controller.reports.scan_due()
        eventually(lambda: not controller.reports.scan_pending())
        time.sleep(0.3)
        assert not [r for m in ("POST", "PUT", "DELETE") for r in fake_apiserver.requests_matching(m, "wgpolicyk8s")]


def test_a_policy_without_background_processing_is_reported_from_admissions(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """chainsaw mutating-policies/reporting/admission (report.yaml): a ConfigMap created through the API
    server gets pass / success, process "admission review"; existing ones are not scanned."""
    install_report_crds(fake_apiserver)
    fake_apiserver.store.create(configmap("before"))
    admission_only = policy("add-foo", LABEL, admission=True, mutate_existing=False)
    admission_only["spec"]["evaluation"]["background"] = {"enabled": False}
    with running(fake_apiserver, tmp_path, write_policies(tmp_path / "p", admission_only), **_settings()) as controller:
        # the watch reports creations it sees after its first list; one inside the list is an existing
        # object (a controller started after an admission cannot tell), as "before" is
        eventually(lambda: controller.caches.synced_now("v1", "configmaps"))
        # as if the webhook had mutated it at admission (the fake API server calls no webhook here)
        fake_apiserver.store.create(configmap("created", foo="bar"))
        report = eventually(lambda: report_of(fake_apiserver, "created"))
        time.sleep(0.2)
        assert report_of(fake_apiserver, "before") is None
    [result] = report["results"]
    assert (result["result"], result["message"], result["properties"]) == (
        "pass",
        "success",
        {"process": "admission review"},
    )


def test_a_mutating_admission_policy_with_a_binding_is_reported_as_kyverno_reports_it(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """chainsaw mutating-admission-policy-reports/background/with-binding-pass (report-assert.yaml); its
    policy opts in with ``reports.kyverno.io/enabled: "true"`` — one that does not is not reported
    (generated-reporting-opt-in: native policies are reported only when opted in)."""
    install_report_crds(fake_apiserver)
    fake_apiserver.store.create(configmap("labelled", foo="bar"))
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}
    expression = 'Object{metadata: Object.metadata{labels: {"foo": "bar"}}}'
    not_opted_in = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "not-opted-in", "labels": {"reports.kyverno.io/enabled": "false"}},
        "spec": {
            "matchConstraints": {"resourceRules": [rule]},
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}],
        },
    }
    not_opted_in_binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": "not-opted-in-binding"},
        "spec": {"policyName": "not-opted-in"},
    }
    admission_policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "add-label", "labels": {"reports.kyverno.io/enabled": "true"}},
        "spec": {
            "matchConstraints": {"resourceRules": [rule]},
            "reinvocationPolicy": "Never",
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": "add-label-binding"},
        "spec": {"policyName": "add-label"},
    }
    policies = write_policies(tmp_path / "p", not_opted_in, not_opted_in_binding, admission_policy, binding)
    with running(fake_apiserver, tmp_path, policies, **_settings()) as controller:
        report = eventually(lambda: report_of(fake_apiserver, "labelled"))
        assert controller.reports is not None and controller.reports.scanner.keys() == ["add-label"]
    [result] = report["results"]  # none of not-opted-in, whatever the order the two were scanned in
    assert {k: v for k, v in result.items() if k != "timestamp"} == {
        "message": "mutation is successfully applied",
        "policy": "add-label",
        "properties": {"mapBinding": "add-label-binding", "process": "background scan"},
        "result": "pass",
        "rule": "add-label",
        "scored": True,
        "source": "MutatingAdmissionPolicy",
    }


def test_only_the_leader_writes_reports_and_a_new_leader_adopts_them(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Two replicas: one report per resource, written by the leader; the standby that takes over adopts
    the stored reports (a rescan that finds the same writes nothing) and keeps them current."""
    install_report_crds(fake_apiserver)
    fake_apiserver.store.create(configmap("one"))
    policies = write_policies(tmp_path / "p", policy("add-foo", LABEL, admission=True, mutate_existing=False))
    election = {
        "leader_elect": True,
        "lease_namespace": "default",
        "lease_duration": 1.0,
        "renew_deadline": 0.6,
        "retry_period": 0.1,
    }
    with (
        running(fake_apiserver, tmp_path, policies, identity="a", **election, **_settings()) as first,
        running(fake_apiserver, tmp_path, policies, identity="b", **election, **_settings()) as second,
    ):
        eventually(lambda: first.is_leader() != second.is_leader())
        eventually(lambda: report_of(fake_apiserver, "one"))
        leader, standby = (first, second) if first.is_leader() else (second, first)
        assert (
            standby.reports is not None
            and standby.reports.writer.results(
                fake_apiserver.store.get("configmaps", "one", "default")["metadata"]["uid"]
            )
            == []
        )  # the standby computed and holds nothing
        assert leader.elector is not None
        leader.elector.stop(release=False)
        eventually(standby.is_leader)
        fake_apiserver.clear_requests()
        fake_apiserver.store.create(configmap("two"))
        eventually(lambda: report_of(fake_apiserver, "two"))
        time.sleep(0.3)
        written = [r.path for m in ("POST", "PUT") for r in fake_apiserver.requests_matching(m, "wgpolicyk8s")]
        assert len(written) == 1  # the new report only: "one" was adopted, not rewritten
    assert len(fake_apiserver.store.list(POLR, None)) == 2


def test_a_requested_scan_is_pending_until_what_it_found_is_written(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """``scan_pending()`` stays true while the pass that took the scan still writes (each write slowed to
    0.1 s here): what a caller waiting for it then reads is what the scan found, not the state before."""
    install_report_crds(fake_apiserver)
    pol = policy("add-foo", add_label("foo"), admission=True, mutate_existing=False)
    with running(fake_apiserver, tmp_path, write_policies(tmp_path / "p", pol), **_settings()) as controller:
        assert controller.reports is not None
        eventually(lambda: not controller.reports.scan_pending())  # type: ignore[union-attr]
        for name in ("a", "b", "c"):
            fake_apiserver.store.create(configmap(name))
        configmaps = controller.caches.cache("v1", "configmaps")
        eventually(lambda: configmaps is not None and len(configmaps.items()) == 3)  # the scan will see them
        fake_apiserver.set_latency(0.1)
        try:
            controller.reports.scan_due()
            eventually(lambda: not controller.reports.scan_pending())  # type: ignore[union-attr]
            assert len(fake_apiserver.store.list(POLR, "default")) == 3
        finally:
            fake_apiserver.set_latency(0)
