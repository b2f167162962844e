"""celmut.kube.admitted_pods.reconcile: what an admission counts from the pod cache and the pods this
process admitted (read at one moment) and the pods the API server has stored (read after) — each pod
once, a deleted one never (issue 38)."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.kube.admitted_pods import IN_FLIGHT_SECONDS, AdmittedPods, Entry, owner_key, reconcile

Obj = dict[str, Any]


def pod(name: str = "", placement: str = "spot", **meta: Any) -> Obj:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d9c", "uid": "u1", "controller": True}
    metadata = {"namespace": "shop", "ownerReferences": [owner], "annotations": {"celmut.io/placement": placement}}
    if name:
        metadata["name"] = name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {**metadata, **meta}}


def entry(admitted: Obj, claimed: str | None = None) -> Entry:
    return Entry(1e18, owner_key(admitted), admitted, ("shop", claimed) if claimed else None)


def counted(pods: list[Obj]) -> list[str]:
    return sorted(p["metadata"].get("name", "(in flight)") for p in pods)


TERMINATING = {"deletionTimestamp": "2026-01-01T00:00:30Z"}

CASES: dict[str, tuple[list[Obj], list[Entry], list[Obj], list[str]]] = {
    "a cached pod no longer stored was deleted: not counted": ([pod("a"), pod("b")], [], [pod("b")], ["b"]),
    "a cached pod is counted as stored (Terminating shows)": ([pod("a")], [], [pod("a", **TERMINATING)], ["a"]),
    "an admitted pod not stored yet is in flight": ([], [entry(pod())], [], ["(in flight)"]),
    "an admitted pod now stored is counted once": ([], [entry(pod())], [pod("x")], ["x"]),
    "two admitted, one stored: one stored, one in flight": (
        [],
        [entry(pod()), entry(pod())],
        [pod("x")],
        ["(in flight)", "x"],
    ),
    "another decision's stored pod is counted beside an admitted one": (
        [],
        [entry(pod())],
        [pod("y", placement="on-demand")],
        ["(in flight)", "y"],
    ),
    "an admitted pod standing for a deleted pod is not counted": ([], [entry(pod(), claimed="x")], [], []),
    "an admitted pod standing for a stored pod is that pod": ([], [entry(pod(), claimed="x")], [pod("x")], ["x"]),
}


@pytest.mark.parametrize(("cached", "entries", "stored", "expected"), CASES.values(), ids=CASES.keys())
def test_reconcile(cached: list[Obj], entries: list[Entry], stored: list[Obj], expected: list[str]) -> None:
    result = reconcile(cached, entries, stored)
    assert counted(result.pods) == expected
    terminating = [p for p in result.pods if p["metadata"].get("deletionTimestamp")]
    assert len(terminating) == sum(bool(p["metadata"].get("deletionTimestamp")) for p in stored)


def known(*names: str) -> frozenset[tuple[str, str]]:
    return frozenset(("shop", name) for name in names)


REUSED: dict[str, tuple[list[Obj], list[Obj], frozenset[tuple[str, str]], list[str], int]] = {
    # a list read for an earlier request of the batch, reused with what the cache learnt since
    "a pod the cache got after the read is counted": ([pod("a"), pod("b")], [pod("a")], known("a"), ["a", "b"], 0),
    "a pod cached at the read and not in it was deleted": ([pod("a"), pod("b")], [pod("a")], known("a", "b"), ["a"], 0),
    "a pod the cache dropped since the read is gone": ([pod("a")], [pod("a"), pod("b")], known("a", "b"), ["a"], 0),
    "a stored pod the cache has not got yet is counted": ([pod("a")], [pod("a"), pod("b")], known("a"), ["a", "b"], 0),
    "the cache saw a pod Terminating after the read": ([pod("a", **TERMINATING)], [pod("a")], known("a"), ["a"], 1),
}


@pytest.mark.parametrize(("cached", "stored", "seen", "expected", "terminating"), REUSED.values(), ids=REUSED.keys())
def test_reconcile_with_a_list_read_for_an_earlier_request(
    cached: list[Obj], stored: list[Obj], seen: frozenset[tuple[str, str]], expected: list[str], terminating: int
) -> None:
    result = reconcile(cached, [], stored, seen)
    assert counted(result.pods) == expected
    assert sum(bool(p["metadata"].get("deletionTimestamp")) for p in result.pods) == terminating


def versioned(name: str, version: str) -> Obj:
    return pod(name, resourceVersion=version)


LATE: dict[str, tuple[Obj, str, list[str]]] = {
    # a pod the cache got after the read started, not in the list (read at resourceVersion "90")
    "created after the list: counted": (versioned("b", "95"), "90", ["a", "b"]),
    "stored, then deleted before the list (the watch delivered it late): not counted": (
        versioned("b", "85"),
        "90",
        ["a"],
    ),
    "versions compare as integers, not as text": (versioned("b", "100"), "90", ["a", "b"]),
    "a version that is not an integer cannot be compared: counted": (versioned("b", "x85"), "90", ["a", "b"]),
    "a list without a version: counted": (versioned("b", "85"), "", ["a", "b"]),
}


@pytest.mark.parametrize(("late", "version", "expected"), LATE.values(), ids=LATE.keys())
def test_a_pod_the_cache_got_after_the_read_counts_only_if_newer_than_the_list(
    late: Obj, version: str, expected: list[str]
) -> None:
    """Resource versions of one resource are integers that grow with every write (Kubernetes compares them:
    k8s.io/apimachinery/pkg/util/resourceversion CompareResourceVersion). A pod absent from a list whose
    version is newer than the pod's was gone when the list was read."""
    stored = [versioned("a", "80")]
    result = reconcile([versioned("a", "80"), late], [], stored, known("a"), version=version)
    assert counted(result.pods) == expected


def test_a_claim_is_kept_and_a_gone_pod_drops_its_entry() -> None:
    admitted = AdmittedPods(60)
    admitted.remember(pod(), None)
    (first,) = admitted.snapshot("shop")
    admitted.settle(reconcile([], [first], [pod("x")]))
    assert first.claimed == ("shop", "x")
    admitted.stored("ADDED", pod("y"), None)  # another pod of the same decision: not the one it stands for
    assert admitted.snapshot("shop") == [first]
    admitted.settle(reconcile([], admitted.snapshot("shop"), []))  # x deleted
    assert admitted.snapshot("shop") == []


def test_an_admitted_pod_younger_than_the_list_is_in_flight_for_it() -> None:
    """Admitted after the list was answered, it cannot be in the list: a stored pod of the same decision that
    the cache has not got yet is another's (another webhook process's), and both count."""
    young = Entry(1e18, owner_key(pod()), pod(), admitted=10.0)
    listed = reconcile([], [young], [pod("theirs")], started=5.0, finished=6.0)
    assert counted(listed.pods) == ["(in flight)", "theirs"]
    during = Entry(1e18, owner_key(pod()), pod(), admitted=5.5)  # while the server listed: may be in it
    assert counted(reconcile([], [during], [pod("x")], started=5.0, finished=6.0).pods) == ["x"]


def test_an_admitted_pod_no_list_shows_long_after_is_gone() -> None:
    """Stored and deleted before any list or the watch showed it (or refused after this webhook): not
    counted once a list that started IN_FLIGHT_SECONDS after its admission lacks it."""
    recent = Entry(1e18, owner_key(pod()), pod(), admitted=100.0 - IN_FLIGHT_SECONDS / 2)
    stale = Entry(1e18, owner_key(pod()), pod(), admitted=100.0 - IN_FLIGHT_SECONDS * 2)
    result = reconcile([], [recent, stale], [], started=100.0)
    assert counted(result.pods) == ["(in flight)"] and result.gone == {stale}


def test_an_older_list_does_not_undo_a_claim_from_a_newer_one() -> None:
    """Decisions may use lists in another order than they were read: a pod claimed from a newer list
    and missing from an older one is counted (it may have been stored in between), not dropped."""
    claimed = Entry(1e18, owner_key(pod()), pod(), ("shop", "x"), admitted=1.0, claimed_from=8.0)
    older = reconcile([], [claimed], [], started=5.0, finished=6.0)
    assert counted(older.pods) == ["(in flight)"] and not older.gone
    newer = reconcile([], [claimed], [], started=9.0, finished=10.0)  # a list newer than the claim lacks it: deleted
    assert newer.pods == [] and newer.gone == {claimed}
