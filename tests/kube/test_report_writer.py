"""The report writer on the fake API server: coalesced writes, no write when only timestamps change,
never a report another owner wrote, and renaming when Kyverno arrives (celmut-<uid> next to Kyverno's
<uid>, so neither overwrites the other)."""

from __future__ import annotations

import threading
from pathlib import Path

from celmut.kube.client import Cluster
from celmut.kube.report_writer import ReportWriter, list_reports
from celmut.runtime.report_objects import ResourceRef
from celmut.runtime.report_results import ReportResult
from tests.fakekube import FakeApiServer
from tests.kube.crds import report_crds
from tests.waiting import eventually

REF = ResourceRef("v1", "ConfigMap", "default", "cm", "uid-1")


def result(policy: str, outcome: str = "fail", stamp: int = 1) -> ReportResult:
    return ReportResult(policy=policy, result=outcome, message="m", source="KyvernoMutatingPolicy", timestamp=stamp)  # type: ignore[arg-type]


def connect(server: FakeApiServer, tmp_path: Path) -> Cluster:
    for crd in report_crds():
        server.store.create(crd)
    return Cluster.connect(str(server.kubeconfig(tmp_path / "kubeconfig")), timeout=5)


def two_installs(cluster: Cluster) -> tuple[ReportWriter, ReportWriter]:
    """The writers of two celmut installs sharing REF's report: the first reports policy "a" (fail), the
    second "b" (pass), each knowing the other's policy as another install's."""
    first, second = ReportWriter(cluster), ReportWriter(cluster)
    first.keep_policies(["a"], others=["b"])
    second.keep_policies(["b"], others=["a"])
    first.put(REF, "a", [result("a")])
    second.put(REF, "b", [result("b", "pass")])
    return first, second


def writes(server: FakeApiServer) -> int:
    return sum(len(server.requests_matching(m, "wgpolicyk8s")) for m in ("POST", "PUT", "DELETE"))


def test_many_puts_are_one_write_and_a_new_timestamp_alone_is_none(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    writer = ReportWriter(connect(fake_apiserver, tmp_path))
    for stamp in range(5):
        writer.put(REF, "a", [result("a", stamp=stamp)])
        writer.put(REF, "b", [result("b", "pass", stamp=stamp)])
    stats = writer.flush()
    assert (stats.created, writes(fake_apiserver)) == (1, 1)
    stored = fake_apiserver.store.get("policyreports", "uid-1", "default")
    assert [r["timestamp"]["seconds"] for r in stored["results"]] == [0, 0]  # the first seen, kept
    writer.put(REF, "a", [result("a", stamp=99)])
    assert writer.flush().writes == 0 and writes(fake_apiserver) == 1
    writer.put(REF, "a", [result("a", "pass", stamp=99)])
    assert writer.flush().updated == 1
    writer.put(REF, "a", [])
    writer.put(REF, "b", [])
    assert writer.flush().deleted == 1
    assert not fake_apiserver.store.exists("policyreports", "uid-1", "default")


def test_a_report_someone_else_wrote_is_never_overwritten(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    cluster = connect(fake_apiserver, tmp_path)
    kyverno = {
        "apiVersion": "wgpolicyk8s.io/v1alpha2",
        "kind": "PolicyReport",
        "metadata": {"name": "uid-1", "namespace": "default", "labels": {"app.kubernetes.io/managed-by": "kyverno"}},
        "results": [{"policy": "theirs", "result": "pass", "source": "KyvernoMutatingPolicy"}],
    }
    fake_apiserver.store.create(kyverno)
    errors: list[str] = []
    writer = ReportWriter(cluster, on_write=lambda action, status: errors.append(status) if action == "error" else None)
    writer.put(REF, "mine", [result("mine")])
    stats = writer.flush()
    assert stats.errors == 1 and errors == ["409"]
    stored = fake_apiserver.store.get("policyreports", "uid-1", "default")
    assert [r["policy"] for r in stored["results"]] == ["theirs"]


def test_next_to_kyverno_reports_move_to_names_of_their_own(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    cluster = connect(fake_apiserver, tmp_path)
    writer = ReportWriter(cluster)
    writer.put(REF, "mine", [result("mine")])
    writer.flush()
    writer.set_prefix("celmut-")
    stats = writer.flush()
    assert (stats.deleted, stats.created) == (1, 1)
    assert not fake_apiserver.store.exists("policyreports", "uid-1", "default")
    assert fake_apiserver.store.get("policyreports", "celmut-uid-1", "default")["scope"]["uid"] == "uid-1"


def test_a_report_kyverno_wrote_under_the_old_name_is_left_alone_when_reports_move(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Kyverno arrived and wrote its own report under the name celmut used until then (Kyverno names a
    report after the resource's uid): celmut's move to its own names deletes only the report it wrote,
    at the version it wrote (a DELETE with that precondition), never Kyverno's."""
    cluster = connect(fake_apiserver, tmp_path)
    writer = ReportWriter(cluster)
    writer.put(REF, "mine", [result("mine")])
    writer.flush()
    stored = fake_apiserver.store.get("policyreports", "uid-1", "default")
    stored["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "kyverno"}
    stored["results"] = [{"policy": "theirs", "result": "pass", "source": "KyvernoMutatingPolicy"}]
    fake_apiserver.store.update(stored)
    writer.set_prefix("celmut-")
    stats = writer.flush()
    assert (stats.deleted, stats.created, stats.errors) == (0, 1, 0)
    kept = fake_apiserver.store.get("policyreports", "uid-1", "default")
    assert [r["policy"] for r in kept["results"]] == ["theirs"]
    assert [r["policy"] for r in fake_apiserver.store.get("policyreports", "celmut-uid-1", "default")["results"]] == [
        "mine"
    ]


def test_two_installs_moving_their_reports_keep_each_others_results(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Two installs share a report when Kyverno arrives: the first to move takes only its own results out
    of the old-named report (the other's stay, written back at the version read); the second's move
    empties it and deletes it. Every result is under the new name, none was ever missing from both."""
    cluster = connect(fake_apiserver, tmp_path)
    first, second = two_installs(cluster)
    first.flush()
    second.flush()
    first.set_prefix("celmut-")
    assert first.flush().updated == 1  # the old report, written back with the second's result alone
    old = fake_apiserver.store.get("policyreports", "uid-1", "default")
    assert [r["policy"] for r in old["results"]] == ["b"]
    second.set_prefix("celmut-")
    assert second.flush().deleted == 1
    assert not fake_apiserver.store.exists("policyreports", "uid-1", "default")
    moved = fake_apiserver.store.get("policyreports", "celmut-uid-1", "default")
    assert sorted(r["policy"] for r in moved["results"]) == ["a", "b"]


def test_a_restarted_writer_adopts_what_is_stored_and_rewrites_nothing(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    cluster = connect(fake_apiserver, tmp_path)
    first = ReportWriter(cluster)
    first.put(REF, "a", [result("a")])
    first.flush()
    second = ReportWriter(cluster)
    assert second.adopt(list_reports(cluster)) == 1
    second.put(REF, "a", [result("a", stamp=50)])
    assert second.flush().writes == 0
    second.keep_policies([])  # the policy is gone
    assert second.flush().deleted == 1


def test_a_report_being_written_is_pending_until_its_write_is_counted(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """``celmut_policy_report_pending`` 0 means every write returned and is in the write counters: the
    last report in flight still counts (CI saw the gauge at 0 with the created counter one short)."""
    seen: list[tuple[str, int]] = []
    writer = ReportWriter(
        connect(fake_apiserver, tmp_path), on_write=lambda action, _: seen.append((action, writer.pending()))
    )
    writer.put(REF, "a", [result("a")])
    assert writer.pending() == 1
    writer.flush()
    assert seen == [("created", 1)] and writer.pending() == 0


def test_a_report_dirty_again_while_being_written_is_written_after_by_its_writer(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Two writes of one report at once carry the same resourceVersion (or both create it), and one
    gets a 409: the results it carried are lost until the next change (CI saw 156 writes for 150
    reports). A flush that finds the report being written leaves it to its writer, which writes the
    newer results once its own write returns."""
    writer = ReportWriter(connect(fake_apiserver, tmp_path))
    writer.put(REF, "a", [result("a")])
    fake_apiserver.set_latency(0.5)
    first = threading.Thread(target=writer.flush)
    first.start()
    try:
        eventually(lambda: fake_apiserver.requests_matching("POST", "policyreports"))
        writer.put(REF, "a", [result("a", "pass")])  # changed while its creation is in flight
        second = writer.flush()  # another flush meanwhile: the report is not its to write
    finally:
        first.join()
    fake_apiserver.set_latency(0)
    assert (second.writes, second.errors) == (0, 0)
    stored = fake_apiserver.store.get("policyreports", "uid-1", "default")
    assert [r["result"] for r in stored["results"]] == ["pass"]  # the newer results, written after
    assert writes(fake_apiserver) == 2 and writer.pending() == 0  # created, then updated; no 409


# --- several celmut installs sharing the reports (each its own --policy-selector) ----------------


def policies_in(server: FakeApiServer) -> list[tuple[str, str]]:
    stored = server.store.get("policyreports", "uid-1", "default")
    return sorted((r["policy"], r["result"]) for r in stored.get("results") or [])


def test_two_installs_write_one_report_each_keeping_the_others_results(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Each writer owns its own policies' results; a write refused because the other wrote meanwhile (a
    resourceVersion-checked PUT, or AlreadyExists) reads the report again and keeps the other's results."""
    cluster = connect(fake_apiserver, tmp_path)
    first, second = two_installs(cluster)
    assert first.flush().created == 1
    assert second.flush().updated == 1  # AlreadyExists: read again, its result added to the first's
    assert policies_in(fake_apiserver) == [("a", "fail"), ("b", "pass")]
    first.put(REF, "a", [result("a", "pass")])  # carries the version before the second's write: 409, merged
    assert first.flush().updated == 1
    assert policies_in(fake_apiserver) == [("a", "pass"), ("b", "pass")]
    second.put(REF, "b", [result("b", "fail")])
    second.flush()
    assert policies_in(fake_apiserver) == [("a", "pass"), ("b", "fail")]


def test_an_install_with_no_result_left_never_deletes_a_report_holding_the_others(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """The delete carries the resourceVersion its view was read at (DeleteOptions preconditions): the
    other install's result written meanwhile keeps the report, with that result alone."""
    cluster = connect(fake_apiserver, tmp_path)
    first, second = ReportWriter(cluster), ReportWriter(cluster)
    first.keep_policies(["a"], others=["b"])
    second.keep_policies(["b"], others=["a"])
    first.put(REF, "a", [result("a")])
    first.flush()
    second.put(REF, "b", [result("b")])
    second.flush()
    first.put(REF, "a", [])
    first.flush()
    assert policies_in(fake_apiserver) == [("b", "fail")]
    second.put(REF, "b", [])
    assert second.flush().deleted == 1
    assert not fake_apiserver.store.exists("policyreports", "uid-1", "default")


def test_an_install_starting_adopts_the_report_and_drops_only_its_own_or_deleted_policies(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """At start a writer takes over the stored reports; the results of an existing policy another install
    serves stay, those of a policy that no longer exists go (as they did with one celmut per cluster)."""
    cluster = connect(fake_apiserver, tmp_path)
    earlier = ReportWriter(cluster)
    for policy in ("a", "b", "deleted"):
        earlier.put(REF, policy, [result(policy)])
    earlier.flush()
    restarted = ReportWriter(cluster)
    restarted.adopt(list_reports(cluster))
    restarted.keep_policies(["a"], others=["b"])
    restarted.flush()
    assert policies_in(fake_apiserver) == [("a", "fail"), ("b", "fail")]
    restarted.keep_policies([], others=["b"])  # its policy deleted: its results go, the other's stay
    restarted.flush()
    assert policies_in(fake_apiserver) == [("b", "fail")]


def test_with_one_install_per_cluster_a_writer_still_owns_every_result(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """No ``others`` (no --policy-selector): what celmut wrote is this install's, results of policies it
    does not report are dropped, as before."""
    cluster = connect(fake_apiserver, tmp_path)
    earlier = ReportWriter(cluster)
    earlier.put(REF, "a", [result("a")])
    earlier.put(REF, "b", [result("b")])
    earlier.flush()
    restarted = ReportWriter(cluster)
    restarted.adopt(list_reports(cluster))
    restarted.keep_policies(["a"])
    restarted.flush()
    assert policies_in(fake_apiserver) == [("a", "fail")]
