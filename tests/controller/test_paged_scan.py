"""A ``--dry-run`` scan reads pods a page at a time (issue 16, item 5): ``limit``/``continue``
lists, each page processed before the next is read, and no whole-pod watch or cache, so memory does
not grow with the cluster. Every pod is still reported, exactly as before."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from celmut.controller.report import ReportWriter
from celmut.controller.run import Controller, ControllerConfig
from celmut.main import main
from celmut.service.settings import ServiceSettings
from tests.controller.test_evictions import drift_policy, replica
from tests.fakekube import FakeApiServer

from .support import add_label, configmap, connect, policy, write_policies

PODS = 23
PAGE = 10


def test_a_dry_run_scan_pages_through_pods_and_reports_each_once(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    for index in range(PODS):
        fake_apiserver.store.create(replica(f"web-{index:02d}"))
    policies = write_policies(tmp_path / "policies", drift_policy("immediate"))
    config = ControllerConfig(
        ServiceSettings(policy_paths=(str(policies),)),
        dry_run=True,
        scan_interval=0,
        page_size=PAGE,
        allow_immediate_restart=True,
    )
    controller = Controller(config, connect(fake_apiserver, tmp_path))
    fake_apiserver.clear_requests()
    try:
        report = controller.run_once()
    finally:
        controller.stop()
    outcomes = report.outcomes()
    assert sorted(o.key.name for o in outcomes) == [f"web-{i:02d}" for i in range(PODS)]
    assert {o.action for o in outcomes} == {"would-evict"}  # as the cached scan reported (restart: immediate)
    pod_requests = fake_apiserver.requests_matching("GET", r"/api/v1/pods$")
    lists = [r for r in pod_requests if "watch" not in r.query]
    assert [r.query.get("limit") for r in lists] == [[str(PAGE)]] * 3  # 23 pods: 10 + 10 + 3
    assert "continue" not in lists[0].query and all("continue" in r.query for r in lists[1:])
    whole_watches = [r for r in pod_requests if "watch" in r.query and "PartialObjectMetadata" not in r.accept]
    assert whole_watches == []  # no whole-pod cache
    assert not [r for r in fake_apiserver.requests if r.method in ("POST", "PUT", "PATCH", "DELETE")]


class PageAwareStream(io.StringIO):
    """A report stream that notes, for each target written, how many pod pages had been read."""

    def __init__(self, fake_apiserver: FakeApiServer) -> None:
        super().__init__()
        self.fake_apiserver = fake_apiserver
        self.pages_read_at: list[int] = []

    def write(self, text: str) -> int:
        if '"target"' in text:
            self.pages_read_at.append(len(page_lists(self.fake_apiserver)))
        return super().write(text)


def page_lists(fake_apiserver: FakeApiServer) -> list[Any]:
    pod_requests = fake_apiserver.requests_matching("GET", r"/api/v1/pods$")
    return [r for r in pod_requests if r.query.get("limit") == [str(PAGE)] and "watch" not in r.query]


def test_a_dry_run_report_is_streamed_as_each_page_finishes(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """Memory stays flat in the number of pods: each target is written before the next page is read,
    and the report keeps only counts; the streamed document is the report users parse."""
    for index in range(PODS):
        fake_apiserver.store.create(replica(f"web-{index:02d}"))
    policies = write_policies(tmp_path / "policies", drift_policy("immediate"))
    config = ControllerConfig(
        ServiceSettings(policy_paths=(str(policies),)),
        dry_run=True,
        scan_interval=0,
        page_size=PAGE,
        allow_immediate_restart=True,
    )
    controller = Controller(config, connect(fake_apiserver, tmp_path))
    fake_apiserver.clear_requests()
    stream = PageAwareStream(fake_apiserver)
    writer = ReportWriter(stream)
    try:
        report = controller.run_once(writer=writer)
    finally:
        controller.stop()
    writer.close()
    assert stream.pages_read_at == [1] * 10 + [2] * 10 + [3] * 3  # page 1's targets written before page 2 is read
    assert report.outcomes() == []  # nothing kept per target
    assert report.summary() == {"would-evict": PODS}
    document = json.loads(stream.getvalue())
    assert document["summary"] == {"would-evict": PODS}
    assert [t["target"]["name"] for t in document["targets"]] == [f"web-{i:02d}" for i in range(PODS)]
    assert all(t["action"] == "would-evict" and t["needsRestart"] for t in document["targets"])
    assert len(stream.getvalue().splitlines()) == PODS + 3  # one target per line


def test_an_empty_streamed_report_is_a_valid_document() -> None:
    stream = io.StringIO()
    ReportWriter(stream).close()
    assert json.loads(stream.getvalue()) == {"targets": [], "summary": {}}


def test_a_failed_dry_run_leaves_no_half_report(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """The streamed report is renamed into place only when the pass completes: the configmaps'
    outcomes were written when the pods' list failed (an expired continue token answers 410 Gone,
    apiserver storage/errors.go NewResourceExpired), and neither a report nor its partial file stays."""
    fake_apiserver.store.create(configmap("one"))
    fake_apiserver.store.create(replica("web-00"))
    policies = write_policies(tmp_path / "policies", policy("scanned", add_label("scanned")), drift_policy("immediate"))
    fake_apiserver.fail_next("GET", r"/api/v1/pods$", 410, times=None, reason="Expired", message="too old")
    out = tmp_path / "out"
    out.mkdir()
    kubeconfig = fake_apiserver.kubeconfig(tmp_path / "kubeconfig")
    report = str(out / "report.json")
    code = main(
        [
            "controller",
            "--dry-run",
            "--allow-immediate-restart",
            "--kubeconfig",
            str(kubeconfig),
            "--policies",
            str(policies),
            "--report",
            report,
        ]
    )
    assert code == 2
    assert list(out.iterdir()) == []
