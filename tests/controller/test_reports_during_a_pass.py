"""The background reports of pods a mutation pass patches: each pod evaluated once and reported in one
write, after its patch — not scanned before it (a result the patch makes stale at once), rescanned after
and written twice. A full scan due while the pass runs waits for it (``MAX_POSTPONE`` at most); the pods
the watch brings back patched are evaluated as they arrive, with the ``patched-target`` result of the
mutateExisting policy in the same write, and the scan that follows — once the watch has brought every
patch — evaluates none of them again. Run it on a loaded machine to see the races it pins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celmut.controller.report_loop import ReportingConfig
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually

from .support import RULE_PODS, add_label, policy, running, write_policies
from .test_controller_scale import NAMESPACES, label_pods, patched, seed
from .test_policy_reports import install_report_crds

PODS_PER_NAMESPACE = 10
PODS = PODS_PER_NAMESPACE * len(NAMESPACES)


def report_writes(server: FakeApiServer) -> int:
    return sum(len(server.requests_matching(method, r"/policyreports")) for method in ("POST", "PUT"))


def evaluations(controller: Any) -> float:
    """Evaluations of ``pod-team`` on the pods: its ``fail`` results (every pod lacks its label; the
    mutateExisting policy's results on the targets it patched are ``pass``)."""
    return sum(
        sample.value
        for metric in controller.metrics.registry.collect()
        if metric.name == "celmut_policy_report_results"
        for sample in metric.samples
        if sample.name.endswith("_total") and sample.labels.get("result") == "fail"
    )


def test_pods_a_pass_patches_are_evaluated_once_and_reported_in_one_write(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    install_report_crds(fake_apiserver)
    seed(fake_apiserver, PODS_PER_NAMESPACE)
    scanned = policy("pod-team", add_label("team", "a"), rule=RULE_PODS, admission=True, mutate_existing=False)
    policies = write_policies(tmp_path / "policies", label_pods("one"), scanned)
    writes = fake_apiserver.hold("PATCH", r"/pods/")  # the pass is under way when the reports start
    reports = ReportingConfig(interval=0.05)
    with writes, running(fake_apiserver, tmp_path, policies, workers=2, page_size=5, reports=reports) as controller:
        assert controller.reports is not None
        rescanned = controller.reports.scanner.rescanned
        eventually(lambda: rescanned.tracking, timeout=30, what="the reports' full scan waiting for the pass")
        assert evaluations(controller) == 0  # no pod evaluated before its patch
        writes.release()
        eventually(lambda: patched(fake_apiserver, "one") == PODS, timeout=60, what="every pod patched")
        eventually(lambda: not rescanned.tracking, timeout=30, what="the full scan done")
        eventually(lambda: report_writes(fake_apiserver) >= PODS, timeout=30, what="every pod reported")
        eventually(lambda: controller.reports is not None and not controller.reports.scan_pending(), timeout=30)
        eventually(lambda: controller.reports is not None and controller.reports.writer.pending() == 0, timeout=30)
        assert evaluations(controller) == PODS  # each pod once, after its patch
    # one write per pod, the scan's result and the patched target's together (before: two, a POST before the
    # patch and a PUT after it), whatever the threads' timing: the watch may bring a patch before the worker
    # that sent it hands over its patched-target result, or passes after it (test_report_scan_races.py)
    assert report_writes(fake_apiserver) == PODS
    for report in fake_apiserver.store.list("policyreports"):
        assert sorted(r["policy"] for r in report["results"]) == ["label-pods", "pod-team"]
