"""The decision ledger (issue 38): split decisions linearised across webhook processes through Leases
and the API server's compare-and-swap (``resourceVersion`` precondition: 409 when another wrote first)."""

from __future__ import annotations

import json
import logging
import time

import pytest

from celmut.cel.lookups import AdmissionScope
from celmut.kube.client import Cluster
from celmut.kube.decision_ledger import (
    DECISION_ANNOTATION,
    ENTRIES_ANNOTATION,
    KEEP_SECONDS,
    DecisionLedger,
)
from celmut.kube.lookup import CacheSet, ClusterLookup
from tests.fakekube import FakeApiServer

from .conftest import pod


def admitted(decision: str, placement: str = "spot", namespace: str = "shop") -> dict[str, object]:
    owners = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d9c", "uid": "u1", "controller": True}]
    annotations = {"celmut.io/placement": placement, DECISION_ANNOTATION: decision, "unrelated": "x" * 100}
    return pod("", namespace, {"app": "web"}, ownerReferences=owners, annotations=annotations)


def test_each_process_sees_the_others_entries_and_a_stale_write_is_refused(cluster: Cluster) -> None:
    one = DecisionLedger(cluster, "celmut", "celmut-decisions", identity="one")
    two = DecisionLedger(cluster, "celmut", "celmut-decisions", identity="two")
    first, second = one.read(7), two.read(7)
    assert first is not None and second is not None and first.version is None  # no Lease yet
    assert one.record(first, "uid-a", admitted("uid-a"))  # creates celmut-decisions-07
    assert not two.record(second, "uid-b", admitted("uid-b"))  # AlreadyExists: it read before that write
    fresh = two.read(7)
    assert fresh is not None and fresh.name == "celmut-decisions-07"
    # the entry holds what a split counts, nothing else of the pod
    [pod_seen] = two.in_flight(fresh, "shop", present=set())
    assert pod_seen["metadata"]["annotations"] == {"celmut.io/placement": "spot", DECISION_ANNOTATION: "uid-a"}
    assert pod_seen["metadata"]["ownerReferences"][0]["name"] == "web-5d9c"
    assert one.in_flight(fresh, "shop", present=set()) == []  # its own pods are in its overlay instead
    assert two.record(fresh, "uid-b", admitted("uid-b", "on-demand"))
    stale = fresh
    assert not one.record(stale, "uid-c", admitted("uid-c"))  # the resourceVersion precondition: 409


def test_an_entry_stops_counting_once_a_pod_shows_its_id_or_its_time_in_flight_is_over(cluster: Cluster) -> None:
    one = DecisionLedger(cluster, "celmut", "celmut-decisions", identity="one")
    two = DecisionLedger(cluster, "celmut", "celmut-decisions", identity="two")
    view = one.read(0)
    assert view is not None and one.record(view, "uid-a", admitted("uid-a"))
    view = two.read(0)
    assert view is not None
    assert len(two.in_flight(view, "shop", present=set())) == 1
    assert two.in_flight(view, "shop", present={"uid-a"}) == []  # stored (or cached) now: counted there
    assert two.in_flight(view, "other", present=set()) == []  # another namespace's pods
    assert two.in_flight(view, "shop", present=set(), since=time.time() + 3) == []  # refused, or stored and gone


def test_a_write_drops_the_entries_older_than_it_keeps(cluster: Cluster, fake_apiserver: FakeApiServer) -> None:
    one = DecisionLedger(cluster, "celmut", "celmut-decisions", identity="one")
    view = one.read(3)
    assert view is not None and one.record(view, "old", admitted("old"))
    lease = fake_apiserver.store.get("leases", "celmut-decisions-03", "celmut")
    entries = json.loads(lease["metadata"]["annotations"][ENTRIES_ANNOTATION])
    entries[0]["at"] -= KEEP_SECONDS + 1
    lease["metadata"]["annotations"][ENTRIES_ANNOTATION] = json.dumps(entries)
    fake_apiserver.store.update(lease)
    view = one.read(3)
    assert view is not None and one.record(view, "new", admitted("new"))
    kept = json.loads(fake_apiserver.store.get("leases", "celmut-decisions-03", "celmut")["metadata"]["annotations"][
        ENTRIES_ANNOTATION
    ])  # fmt: skip
    assert [e["id"] for e in kept] == ["new"]


def test_a_decision_that_stands_is_recorded_over_the_writes_it_lost_to(cluster: Cluster) -> None:
    one = DecisionLedger(cluster, "celmut", "celmut-decisions", identity="one")
    two = DecisionLedger(cluster, "celmut", "celmut-decisions", identity="two")
    stale = one.read(5)
    assert stale is not None and one.record(stale, "uid-a", admitted("uid-a"))
    one.record_anyway(stale, "uid-b", admitted("uid-b"))  # its view is stale: read again, then written
    view = two.read(5)
    assert view is not None
    assert sorted(p["metadata"]["annotations"][DECISION_ANNOTATION] for p in two.in_flight(view, "shop", set())) == [
        "uid-a",
        "uid-b",
    ]


def test_without_rbac_for_leases_the_decision_goes_on_as_in_one_process_and_says_why(
    cluster: Cluster, fake_apiserver: FakeApiServer, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = DecisionLedger(cluster, "celmut", "celmut-decisions", identity="one")
    denied = 'leases.coordination.k8s.io "celmut-decisions-01" is forbidden'
    fake_apiserver.fail_next("GET", r"/leases/celmut-decisions-01", 403, times=None, reason="Forbidden", message=denied)
    with caplog.at_level(logging.WARNING, logger="celmut.kube"):
        assert ledger.read(1) is None
    assert "cannot read the decision ledger" in caplog.text and "grant the webhook" in caplog.text


def test_a_lease_of_the_ledgers_name_that_celmut_did_not_write_is_never_rewritten(
    cluster: Cluster, fake_apiserver: FakeApiServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing celmut does rewrites an object it does not own: a Lease someone else made under one of the
    ledger's names is read as unavailable (the decision goes on as in one process, and a warning says so)."""
    theirs = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "celmut-decisions-03", "namespace": "celmut", "annotations": {"owner": "someone"}},
        "spec": {"holderIdentity": "their-controller"},
    }
    fake_apiserver.store.create(theirs)
    ledger = DecisionLedger(cluster, "celmut", "celmut-decisions", identity="one")
    with caplog.at_level(logging.WARNING, logger="celmut.kube"):
        assert ledger.read(3) is None
    assert "not celmut's; leaving it alone" in caplog.text
    stored = fake_apiserver.store.get("leases", "celmut-decisions-03", "celmut")
    assert stored["spec"] == {"holderIdentity": "their-controller"} and stored["metadata"]["annotations"] == {
        "owner": "someone"
    }
    assert not fake_apiserver.requests_matching("PUT", "leases")


def test_the_ledger_is_configured_by_the_charts_environment(cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    assert DecisionLedger.from_environment(cluster, {}) is None  # one process: as before
    with caplog.at_level(logging.WARNING, logger="celmut.kube"):
        assert DecisionLedger.from_environment(cluster, {"CELMUT_DECISION_LEDGER": "x-decisions"}) is None
    assert "without POD_NAMESPACE" in caplog.text  # half a configuration is said, not ignored
    ledger = DecisionLedger.from_environment(
        cluster, {"CELMUT_DECISION_LEDGER": "x-decisions", "POD_NAMESPACE": "celmut"}
    )
    assert ledger is not None and (ledger.namespace, ledger.name(33)) == ("celmut", "x-decisions-01")


def test_a_decision_another_process_overtook_is_made_again_and_then_counts_its_pod(
    cluster: Cluster, fake_apiserver: FakeApiServer
) -> None:
    """Two processes (each its own caches, overlay and ledger identity) decide about one workload at once:
    the one that writes second is told to evaluate again, and its second look counts the first one's pod,
    which the API server has not stored yet (what one process alone could not see)."""
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    lookups = []
    for identity in ("a", "b"):
        caches = CacheSet(cluster, sync_timeout=5)
        ledger = DecisionLedger(cluster, "celmut", "celmut-decisions", identity=identity)
        lookups.append((caches, ClusterLookup(caches, ledger=ledger)))
    (caches_a, a), (caches_b, b) = lookups
    selector = {"app": "web"}
    try:
        with AdmissionScope(time.monotonic() + 30, decision_id="uid-a") as scope_a:
            assert a.list("v1", "pods", "shop", selector)["items"] == []
            with AdmissionScope(time.monotonic() + 30, decision_id="uid-b") as scope_b:  # meanwhile, in process b
                assert b.list("v1", "pods", "shop", selector)["items"] == []
                b.remember_admitted(admitted("uid-b", "spot"))
                assert not scope_b.stale
            a.remember_admitted(admitted("uid-a", "spot"))  # decided on the Lease as it was before b wrote
            assert scope_a.stale and scope_a.evaluate_again()
            [seen] = a.list("v1", "pods", "shop", selector)["items"]  # b's pod, in flight
            assert seen["metadata"]["annotations"][DECISION_ANNOTATION] == "uid-b"
            a.remember_admitted(admitted("uid-a", "on-demand"))
            assert not scope_a.stale
        with AdmissionScope(time.monotonic() + 30, decision_id="uid-c"):
            ids = sorted(
                p["metadata"]["annotations"][DECISION_ANNOTATION]
                for p in b.list("v1", "pods", "shop", selector)["items"]
            )
        assert ids == ["uid-a", "uid-b"]  # a's pod (from the ledger) and b's own (its overlay), once each
    finally:
        caches_a.stop()
        caches_b.stop()
