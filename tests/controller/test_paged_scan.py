"""A ``--dry-run`` scan reads pods a page at a time (issue 16, item 5): ``limit``/``continue``
lists, each page processed before the next is read, and no whole-pod watch or cache, so memory does
not grow with the cluster. Every pod is still reported, exactly as before."""

from __future__ import annotations

from pathlib import Path

from celmut.controller.run import Controller, ControllerConfig
from tests.controller.test_evictions import drift_policy, replica
from tests.fakekube import FakeApiServer

from .support import connect, write_policies

PODS = 23
PAGE = 10


def test_a_dry_run_scan_pages_through_pods_and_reports_each_once(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    for index in range(PODS):
        fake_apiserver.store.create(replica(f"web-{index:02d}"))
    policies = write_policies(tmp_path / "policies", drift_policy("immediate"))
    config = ControllerConfig(policy_paths=[str(policies)], dry_run=True, scan_interval=0, page_size=PAGE)
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
