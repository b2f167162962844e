"""Background reports while the cluster changes under a full scan, through the fake API server's watch.

A full scan reads a resource's objects a page at a time; after each page it evaluates what the watch
delivered meanwhile (``BackgroundReports.rescan_changed``), then drops the results of every resource
the scan did not see (they are gone). A resource created after its page was read is one the scan did
not list — and one it evaluated: its results must stay. Found as a flaky
``test_only_the_leader_writes_reports_and_a_new_leader_adopts_them``: a new leader's first scan ran
while the test created a ConfigMap, and the ConfigMap never got its report.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from celmut.controller import reporting
from celmut.controller.report_loop import ReportingConfig, ReportLoop
from celmut.controller.reporting import BackgroundReports
from celmut.kube.cache import WatchedCache
from celmut.kube.lookup import CacheSet
from celmut.kube.report_writer import ReportWriter
from celmut.runtime import AdmissionEngine
from tests.controller.support import add_label, configmap, connect, policy
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually
from tests.kube.crds import report_crds
from tests.runtime.helpers import compile_text
from tests.waiting import HANG_SECONDS

POLR = "policyreports"


def report_results(server: FakeApiServer, name: str) -> list[dict[str, Any]] | None:
    uid = server.store.get("configmaps", name, "default")["metadata"]["uid"]
    if not server.store.exists(POLR, uid, "default"):
        return None
    return list(server.store.get(POLR, uid, "default")["results"])


@dataclass
class Scanning:
    """A scanner of the reported policies on the fake API server's ConfigMaps, with its writer and caches;
    ``on_result`` (called as each result is found, inside the scan) is where a test changes the cluster."""

    reports: BackgroundReports
    writer: ReportWriter
    configmaps: WatchedCache
    on_result: Callable[[str, str], None] = lambda result, process: None


@contextmanager
def scanning(
    server: FakeApiServer, tmp_path: Path, *policy_names: str, metadata_only: bool = False
) -> Iterator[Scanning]:
    """ConfigMap policies adding a label (each a ``fail`` on a ConfigMap without it), loaded and watched
    (``metadata_only``: ConfigMaps cached as the controller caches pods, their metadata alone)."""
    for crd in report_crds():
        server.store.create(crd)
    cluster = connect(server, tmp_path)
    projected = frozenset({("v1", "configmaps")}) if metadata_only else frozenset()
    caches = CacheSet(cluster, metadata_only=projected, deliver_whole=metadata_only)
    writer = ReportWriter(cluster)
    documents = [policy(name, add_label(name, "x"), admission=True, mutate_existing=False) for name in policy_names]
    holder: list[Scanning] = []
    reports = BackgroundReports(caches, writer, on_result=lambda result, process: holder[0].on_result(result, process))
    try:
        reports.load(AdmissionEngine(compile_text(yaml.safe_dump_all(documents))))
        configmaps = caches.cache("v1", "configmaps")
        assert configmaps is not None
        holder.append(Scanning(reports, writer, configmaps))
        yield holder[0]
    finally:
        caches.stop()
        cluster.close()


def flushing_between_two_policies(scan: Scanning) -> list[int]:
    """Make ``scan`` flush its writer (the writing thread's turn) as the second policy's result is found,
    when the first policy is done with the resource; the writes of that flush are appended to the list."""
    calls: list[str] = []
    flushed: list[int] = []

    def flush_at_the_second_result(result: str, process: str) -> None:
        calls.append(result)
        if len(calls) == 2:
            flushed.append(scan.writer.flush().writes)

    scan.on_result = flush_at_the_second_result
    return flushed


def test_a_resource_created_while_a_full_scan_runs_keeps_the_results_the_scan_found(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake_apiserver.store.create(configmap("one"))
    heard = threading.Event()  # the scanner's handler has run for "two" (handlers run in the order added)
    created: list[str] = []

    def create_two_once(result: str, process: str) -> None:
        """Called as the scan evaluates "one", the only object of its page: "two" comes after the page."""
        if not created:
            created.append(fake_apiserver.store.create(configmap("two"))["metadata"]["name"])
            assert heard.wait(HANG_SECONDS), "the watch did not deliver the new ConfigMap"

    with scanning(fake_apiserver, tmp_path, "add-foo") as scan:
        scan.on_result = create_two_once
        scan.configmaps.add_handler(lambda event, obj, old: heard.set() if obj["metadata"]["name"] == "two" else None)
        scan.reports.scan()
        scan.writer.flush()
    assert created == ["two"]
    assert [r["result"] for r in report_results(fake_apiserver, "one") or []] == ["fail"]
    assert [r["result"] for r in report_results(fake_apiserver, "two") or []] == ["fail"]


def test_a_resource_deleted_while_a_full_scan_runs_gets_no_report_from_the_page_that_still_held_it(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """The scan reads a page, then the resource on it is deleted before the scan reaches it: no report is
    written for it (the garbage collector would delete it again) and the writer keeps nothing for it (held
    in memory for good: nothing would ever forget it)."""
    for name in ("one", "two"):
        fake_apiserver.store.create(configmap(name))
    heard = threading.Event()
    deleted: list[dict[str, Any]] = []

    with scanning(fake_apiserver, tmp_path, "add-foo") as scan:
        earlier, later = scan.configmaps.items()[:2]  # the scan's page holds them in the cache's order

        def delete_the_later_one_once(result: str, process: str) -> None:
            """Called as the scan evaluates the first object of the page: the second is deleted."""
            if not deleted:
                deleted.append(later)
                fake_apiserver.store.delete("configmaps", later["metadata"]["name"], "default")
                assert heard.wait(HANG_SECONDS), "the watch did not deliver the deletion"

        scan.on_result = delete_the_later_one_once
        scan.configmaps.add_handler(lambda event, obj, old: heard.set() if event == "DELETED" else None)
        scan.reports.scan()
        scan.writer.flush()
        uid = later["metadata"]["uid"]
        assert scan.writer.results(uid) == [] and scan.writer.pending() == 0
    assert [r["result"] for r in report_results(fake_apiserver, earlier["metadata"]["name"]) or []] == ["fail"]
    assert deleted == [later] and not fake_apiserver.store.exists(POLR, uid, "default")


def test_a_flush_during_a_scan_writes_each_report_with_all_its_policies_or_not_at_all(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """The reporting thread scans while another writes (report_loop): a write taken between two policies'
    evaluations of one resource would store a report with the first policy alone, then again with both.
    The scan hands every policy's results on a resource to the writer at once: one write per report."""
    fake_apiserver.store.create(configmap("one"))
    with scanning(fake_apiserver, tmp_path, "first", "second") as scan:
        flushed = flushing_between_two_policies(scan)
        fake_apiserver.clear_requests()
        scan.reports.scan()
        scan.writer.flush()
    writes = [r for m in ("POST", "PUT") for r in fake_apiserver.requests_matching(m, "wgpolicyk8s")]
    results = report_results(fake_apiserver, "one") or []
    assert flushed == [0] and len(writes) == 1
    assert sorted((r["policy"], r["result"]) for r in results) == [("first", "fail"), ("second", "fail")]


def test_a_resource_deleted_while_its_kind_is_listed_again_gets_no_report(
    fake_apiserver: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resource cached as metadata whose objects changed too many at once to hold them (here more than
    one) is listed again from the API server a page at a time; one deleted after its page was read is left
    out, as a full scan leaves it out."""
    monkeypatch.setattr(reporting, "MAX_ARRIVED", 1)
    heard = threading.Event()
    deleted: list[str] = []

    with scanning(fake_apiserver, tmp_path, "add-foo", metadata_only=True) as scan:
        assert scan.configmaps.metadata_only
        for name in ("a-first", "z-last"):  # changed after the list: more than MAX_ARRIVED, listed again
            fake_apiserver.store.create(configmap(name))

        def delete_the_last_once(result: str, process: str) -> None:
            """Called as the relist evaluates the first object of its page (listed by name)."""
            if not deleted:
                deleted.append(fake_apiserver.store.get("configmaps", "z-last", "default")["metadata"]["uid"])
                fake_apiserver.store.delete("configmaps", "z-last", "default")
                assert heard.wait(HANG_SECONDS), "the watch did not deliver the deletion"

        scan.configmaps.add_handler(lambda event, obj, old: heard.set() if event == "DELETED" else None)
        eventually(lambda: len(scan.configmaps.items()) == 2, what="both ConfigMaps in the cache")
        scan.on_result = delete_the_last_once
        scan.reports.rescan_changed()
        scan.writer.flush()
        assert deleted and scan.writer.results(deleted[0]) == [] and scan.writer.pending() == 0
    assert [r["result"] for r in report_results(fake_apiserver, "a-first") or []] == ["fail"]
    assert not fake_apiserver.store.exists(POLR, deleted[0], "default")


def test_a_target_patched_for_two_policies_is_reported_in_one_write(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """A worker reports the policies whose mutateExisting patched a target while the writing thread runs:
    their ``pass`` results are handed over together, so the report is written once, with both — held for
    the rescan of the change the patch made, and handed over alone when no rescan comes within a pass."""
    target = fake_apiserver.store.create(configmap("target"))
    with scanning(fake_apiserver, tmp_path, "first", "second") as scan:
        flushed = flushing_between_two_policies(scan)
        fake_apiserver.clear_requests()
        scan.reports.target_patched(target, "configmaps", ["first", "second"])
        scan.reports.rescan_changed()
        assert scan.writer.pending() == 0  # held for the rescan of the patched target
        scan.reports.rescan_changed()
        scan.writer.flush()
    writes = [r for m in ("POST", "PUT") for r in fake_apiserver.requests_matching(m, "wgpolicyk8s")]
    results = report_results(fake_apiserver, "target") or []
    assert flushed == [0] and len(writes) == 1
    assert sorted((r["policy"], r["result"]) for r in results) == [("first", "pass"), ("second", "pass")]


TARGET = ("v1", "configmaps", "default", "target")


def writes_of_reports(server: FakeApiServer) -> int:
    return sum(len(server.requests_matching(m, "wgpolicyk8s")) for m in ("POST", "PUT"))


def labelled(server: FakeApiServer, scan: Scanning, label: str) -> dict[str, Any]:
    """Label the target as a worker's patch would, and wait until the scanner's handler has the change
    (handlers run in the order added: the scanner's first)."""
    heard = threading.Event()
    scan.configmaps.add_handler(
        lambda event, obj, old: heard.set() if label in obj["metadata"].get("labels", {}) else None
    )
    stored = server.store.get("configmaps", "target", "default")
    stored["metadata"].setdefault("labels", {})[label] = "x"
    written = server.store.update(stored)
    assert heard.wait(HANG_SECONDS), "the watch did not deliver the patch"
    return written


def test_a_target_the_watch_brings_before_its_worker_is_done_is_reported_in_one_write(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """The watch may deliver a worker's patch before the worker has read the API server's answer and
    handed over its ``patched-target`` result: the rescan of that change waits for the worker, and the
    target's report is written once, with both (not the scan's results, then again with the worker's)."""
    fake_apiserver.store.create(configmap("target"))
    with scanning(fake_apiserver, tmp_path, "first", "second") as scan:
        fake_apiserver.clear_requests()
        scan.reports.patch_started(TARGET)
        written = labelled(fake_apiserver, scan, "first")
        scan.reports.rescan_changed()
        scan.writer.flush()
        assert writes_of_reports(fake_apiserver) == 0  # the rescan waits for the worker
        scan.reports.patch_finished(TARGET, written, "configmaps", ["first"])
        scan.writer.flush()
        scan.reports.rescan_changed()
        scan.writer.flush()
    results = {r["policy"]: r for r in report_results(fake_apiserver, "target") or []}
    assert writes_of_reports(fake_apiserver) == 1
    assert sorted(results) == ["first", "second"] and results["second"]["result"] == "fail"
    assert reporting.PATCHED_TARGET in results["first"]["properties"]


def test_a_worker_that_did_not_patch_releases_the_rescan_it_held(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """A rescan held for a worker whose patch failed (a conflict, a webhook's denial) is written when the
    worker is done, without a patched-target result: nothing stays held for good."""
    fake_apiserver.store.create(configmap("target"))
    with scanning(fake_apiserver, tmp_path, "first") as scan:
        scan.reports.patch_started(TARGET)
        labelled(fake_apiserver, scan, "other")
        scan.reports.rescan_changed()
        scan.writer.flush()
        assert report_results(fake_apiserver, "target") is None
        scan.reports.patch_finished(TARGET, None, "configmaps", [])
        scan.writer.flush()
        assert len(scan.reports.in_flight) == 0
    assert [(r["policy"], r["result"]) for r in report_results(fake_apiserver, "target") or []] == [("first", "fail")]


def test_a_patched_target_waits_for_a_lagging_watch_to_be_reported_in_one_write(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Under load the watch may bring a patch several passes after the worker reported it: its results wait
    for that rescan (the API server's version is newer than the cache's) rather than going out alone and
    the rescan writing the report a second time."""
    fake_apiserver.store.create(configmap("target"))
    with scanning(fake_apiserver, tmp_path, "first") as scan:
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "latest", "namespace": "default"}}
        latest = fake_apiserver.store.create(secret)["metadata"]["resourceVersion"]  # the API server's newest
        ahead = fake_apiserver.store.get("configmaps", "target", "default")
        ahead["metadata"]["resourceVersion"] = str(int(latest) + 1)  # as the patch's answer says, before its event
        fake_apiserver.clear_requests()
        scan.reports.target_patched(ahead, "configmaps", ["first"])
        for _ in range(3):
            scan.reports.rescan_changed()
            scan.writer.flush()
        assert writes_of_reports(fake_apiserver) == 0  # waiting for the watch
        labelled(fake_apiserver, scan, "first")
        scan.reports.rescan_changed()
        scan.writer.flush()
        scan.reports.rescan_changed()
        scan.writer.flush()
    results = report_results(fake_apiserver, "target") or []
    assert writes_of_reports(fake_apiserver) == 1
    assert [r["policy"] for r in results] == ["first"] and reporting.PATCHED_TARGET in results[0]["properties"]


def test_a_due_full_scan_waits_for_the_watch_to_bring_the_targets_a_pass_patched(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """The pass is over (no worker busy, nothing queued) but the watch has yet to bring a target it patched:
    a full scan run now would evaluate that target at its version before the patch, then again when the
    change arrives. The scan waits until the change has been rescanned."""
    target = fake_apiserver.store.create(configmap("target"))
    for crd in report_crds():
        fake_apiserver.store.create(crd)
    cluster = connect(fake_apiserver, tmp_path)
    caches = CacheSet(cluster)
    loop = ReportLoop(cluster, caches, ReportingConfig(), CollectorRegistry(), is_leader=lambda: True)
    try:
        loop.policies_loaded(AdmissionEngine(compile_text(yaml.safe_dump(policy("first", add_label("first", "x"))))))
        configmaps = caches.cache("v1", "configmaps")
        assert configmaps is not None
        loop.pass_once()
        assert not loop.scan_pending()  # the first scan, done
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "latest", "namespace": "default"}}
        latest = fake_apiserver.store.create(secret)["metadata"]["resourceVersion"]
        ahead = {**target, "metadata": {**target["metadata"], "resourceVersion": str(int(latest) + 1)}}
        loop.scanner.target_patched(ahead, "configmaps", ["first"])
        loop.scan_due()
        for _ in range(3):
            loop.pass_once()
            assert loop.scan_pending()  # waiting for the watch
        heard = threading.Event()
        configmaps.add_handler(lambda event, obj, old: heard.set())
        fake_apiserver.store.update({**fake_apiserver.store.get("configmaps", "target", "default"), "data": {"a": "b"}})
        assert heard.wait(HANG_SECONDS), "the watch did not deliver the patch"
        for _ in range(3):
            loop.pass_once()
        assert not loop.scan_pending()  # rescanned: the scan ran
    finally:
        caches.stop()
        cluster.close()
