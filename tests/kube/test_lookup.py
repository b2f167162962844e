"""CEL's view of the cluster from watched caches: get, list, not found, and just-admitted pods."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from celmut.cel.lookups import AdmissionScope, ResourceNotFound
from celmut.kube.client import Cluster
from celmut.kube.lookup import CacheSet, ClusterLookup
from tests.fakekube import FakeApiServer
from tests.waiting import HANG_SECONDS

from .conftest import eventually, namespace, pod


@pytest.fixture
def lookup(cluster: Cluster) -> Iterator[ClusterLookup]:
    caches = CacheSet(cluster, sync_timeout=5)
    try:
        yield ClusterLookup(caches, overlay_seconds=60)
    finally:
        caches.stop()


def owned_pod(name: str, owner: str = "web-5d9c", labels: dict[str, str] | None = None) -> dict[str, object]:
    owners = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": "u1", "controller": True}]
    return pod(name, "shop", {"app": "web", **(labels or {})}, ownerReferences=owners)


def test_get_reads_the_cache_after_the_first_lookup(fake_apiserver: FakeApiServer, lookup: ClusterLookup) -> None:
    fake_apiserver.store.create(namespace("shop", team="payments"))
    assert lookup.get("v1", "namespaces", "", "shop")["metadata"]["labels"]["team"] == "payments"
    fake_apiserver.clear_requests()
    for _ in range(5):
        lookup.get("v1", "namespaces", "", "shop")
    assert not fake_apiserver.requests_matching("GET", r"/namespaces/shop$")  # served from the watched cache
    with pytest.raises(ResourceNotFound, match='namespaces "missing" not found'):
        lookup.get("v1", "namespaces", "", "missing")


def test_list_filters_by_namespace_and_labels(fake_apiserver: FakeApiServer, lookup: ClusterLookup) -> None:
    fake_apiserver.store.create(pod("a", "shop", {"app": "web"}))
    fake_apiserver.store.create(pod("b", "shop", {"app": "db"}))
    fake_apiserver.store.create(pod("c", "other", {"app": "web"}))
    listed = lookup.list("v1", "pods", "shop", {"app": "web"})
    assert listed["kind"] == "PodList" and [i["metadata"]["name"] for i in listed["items"]] == ["a"]
    assert len(lookup.list("v1", "pods", "")["items"]) == 3


def test_admitted_pods_count_until_the_cache_has_them(fake_apiserver: FakeApiServer, lookup: ClusterLookup) -> None:
    assert lookup.list("v1", "pods", "shop")["items"] == []  # starts the pod cache: pods are now counted
    lookup.remember_admitted(owned_pod(""))  # generateName pods have no name at admission
    lookup.remember_admitted(owned_pod(""))
    assert len(lookup.list("v1", "pods", "shop")["items"]) == 2
    fake_apiserver.store.create(owned_pod("web-5d9c-abcde"))  # the API server stored the first one
    eventually(lambda: len(lookup.caches.cache("v1", "pods").items()) == 1)  # type: ignore[union-attr]
    # one real + one still in flight (the cache stores the pod, then tells the overlay: 3 for a moment)
    eventually(lambda: len(lookup.list("v1", "pods", "shop")["items"]) == 2, what="the overlay to drop the stored pod")


def test_admitted_pods_expire_from_the_overlay(cluster: Cluster) -> None:
    caches = CacheSet(cluster, sync_timeout=5)
    try:
        lookup = ClusterLookup(caches, overlay_seconds=0.05)
        lookup.list("v1", "pods", "shop")
        lookup.remember_admitted(owned_pod(""))
        assert len(lookup.list("v1", "pods", "shop")["items"]) == 1
        eventually(lambda: lookup.list("v1", "pods", "shop")["items"] == [], what="the overlay entry to expire")
    finally:
        caches.stop()


def placed(pod: dict[str, object], placement: str) -> dict[str, object]:
    meta = dict(pod["metadata"])  # type: ignore[arg-type]
    meta["annotations"] = {"celmut.io/placement": placement}
    return {**pod, "metadata": meta}


def in_flight(lookup: ClusterLookup) -> list[str]:
    return sorted(
        (p["metadata"].get("annotations") or {}).get("celmut.io/placement", "-")
        for p in lookup.list("v1", "pods", "shop")["items"]
    )


def test_each_pod_is_counted_once_across_the_charts_two_webhooks(lookup: ClusterLookup) -> None:
    """/mutate/fail then /mutate/ignore see the same pod (no name yet, a new request uid each call)."""
    lookup.list("v1", "pods", "shop")
    raw = owned_pod("")
    lookup.remember_admitted(raw, received=raw)  # /mutate/fail: the spot policy is not in its bucket
    assert in_flight(lookup) == []
    lookup.remember_admitted(placed(raw, "spot"), received=raw)  # /mutate/ignore decided
    assert in_flight(lookup) == ["spot"]


def test_a_later_webhooks_copy_replaces_the_earlier_one(lookup: ClusterLookup) -> None:
    lookup.list("v1", "pods", "shop")
    raw = owned_pod("")
    labelled = {**raw, "metadata": {**raw["metadata"], "labels": {"app": "web", "team": "a"}}}  # type: ignore[dict-item]
    lookup.remember_admitted(labelled, received=raw)  # a Fail policy changed it
    lookup.remember_admitted(placed(labelled, "on-demand"), received=labelled)  # then the Ignore one decided
    lookup.remember_admitted(labelled, received=raw)  # a second pod, after its first webhook
    assert in_flight(lookup) == ["-", "on-demand"]


def test_a_stored_pod_another_replica_decided_clears_this_replicas_undecided_copy(
    fake_apiserver: FakeApiServer, lookup: ClusterLookup
) -> None:
    lookup.list("v1", "pods", "shop")
    raw = owned_pod("")
    labelled = {**raw, "metadata": {**raw["metadata"], "labels": {"app": "web", "team": "a"}}}  # type: ignore[dict-item]
    lookup.remember_admitted(labelled, received=raw)  # here /mutate/fail; /mutate/ignore went to the other replica
    fake_apiserver.store.create(placed(owned_pod("web-5d9c-abcde"), "spot"))
    eventually(lambda: in_flight(lookup) == ["spot"], what="the undecided copy replaced by the stored pod")


def test_unwatched_resources_fall_back_to_the_api_server(cluster: Cluster, fake_apiserver: FakeApiServer) -> None:
    caches = CacheSet(cluster, max_caches=0)
    lookup = ClusterLookup(caches)
    fake_apiserver.store.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "shop"}}
    )
    assert lookup.get("v1", "configmaps", "shop", "cfg")["metadata"]["name"] == "cfg"
    assert fake_apiserver.requests_matching("GET", r"/configmaps/cfg$")
    with pytest.raises(ResourceNotFound):
        lookup.get("v1", "configmaps", "shop", "nope")


# --- issue 38: decisions one at a time per workload, on what the API server has stored ------------------


def names(listed: dict[str, object]) -> list[str]:
    return sorted(i["metadata"].get("name") or "(admitted)" for i in listed["items"])  # type: ignore[attr-defined, index]


def test_a_decision_waits_for_the_one_in_flight_and_counts_its_pod(lookup: ClusterLookup) -> None:
    """Two admissions of one workload's pods on two threads: the second lists the pods only once the
    first has recorded what it admitted (its scope ended), and counts that pod. Before issue 38 both
    listed at once and the second counted one pod too few (3 of 10 on spot)."""
    lookup.list("v1", "pods", "shop")
    hash_label = {"pod-template-hash": "5d9c"}
    first_listed, second_listed = threading.Event(), threading.Event()
    seen: list[list[str]] = []

    def second() -> None:
        with AdmissionScope(time.monotonic() + 30):
            seen.append(names(lookup.list("v1", "pods", "shop", hash_label)))
            second_listed.set()

    with AdmissionScope(time.monotonic() + 30):
        assert names(lookup.list("v1", "pods", "shop", hash_label)) == []
        first_listed.set()
        thread = threading.Thread(target=second)
        thread.start()
        assert not second_listed.wait(0.3)  # held back while this admission is in flight
        lookup.remember_admitted(placed(owned_pod("", labels=hash_label), "spot"))
    thread.join(HANG_SECONDS)
    assert seen == [["(admitted)"]]


def test_other_workloads_and_lookups_outside_an_admission_do_not_wait(lookup: ClusterLookup) -> None:
    lookup.list("v1", "pods", "shop")
    done = threading.Event()
    mine = lookup.decision_stripe("shop", {"pod-template-hash": "5d9c"})
    other_hash = next(
        f"other{i}" for i in range(100) if lookup.decision_stripe("shop", {"pod-template-hash": f"other{i}"}) != mine
    )

    def other() -> None:
        with AdmissionScope(time.monotonic() + 30):
            lookup.list("v1", "pods", "shop", {"pod-template-hash": other_hash})
        lookup.list("v1", "pods", "shop", {"pod-template-hash": "5d9c"})  # outside an admission
        done.set()

    with AdmissionScope(time.monotonic() + 30):
        lookup.list("v1", "pods", "shop", {"pod-template-hash": "5d9c"})
        threading.Thread(target=other).start()
        assert done.wait(HANG_SECONDS)


def test_a_decision_waits_no_longer_than_its_deadline(lookup: ClusterLookup) -> None:
    lookup.list("v1", "pods", "shop")
    outcome: list[int] = []

    def late() -> None:
        with AdmissionScope(time.monotonic()):  # already due: does not wait, decides on what it sees
            outcome.append(len(lookup.list("v1", "pods", "shop", {"pod-template-hash": "5d9c"})["items"]))

    with AdmissionScope(time.monotonic() + 30):
        lookup.list("v1", "pods", "shop", {"pod-template-hash": "5d9c"})
        thread = threading.Thread(target=late)
        thread.start()
        thread.join(HANG_SECONDS)
    assert outcome == [0]


def test_an_admission_counts_what_is_stored_when_the_watch_is_behind(
    fake_apiserver: FakeApiServer, lookup: ClusterLookup
) -> None:
    """A pod deleted (or marked Terminating) a moment ago, and one stored by another process, while the
    pod watch has not delivered them: an admission reads what the API server has stored."""
    hash_label = {"pod-template-hash": "5d9c"}
    for name in ("web-5d9c-a", "web-5d9c-b", "web-5d9c-c"):
        fake_apiserver.store.create(
            {
                **owned_pod(name, labels=hash_label),
                "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "nginx"}]},
            }
        )
    eventually(lambda: len(lookup.list("v1", "pods", "shop", hash_label)["items"]) == 3)
    with fake_apiserver.watches_behind("pods"):
        fake_apiserver.store.delete("pods", "web-5d9c-a", "shop", grace_period=0)
        fake_apiserver.store.delete("pods", "web-5d9c-b", "shop")  # Terminating
        fake_apiserver.store.create(owned_pod("web-5d9c-d", labels=hash_label))  # another replica's
        assert names(lookup.list("v1", "pods", "shop", hash_label)) == ["web-5d9c-a", "web-5d9c-b", "web-5d9c-c"]
        with AdmissionScope(time.monotonic() + 30):
            listed = lookup.list("v1", "pods", "shop", hash_label)
    assert names(listed) == ["web-5d9c-b", "web-5d9c-c", "web-5d9c-d"]
    terminating = [i for i in listed["items"] if i["metadata"]["name"] == "web-5d9c-b"]
    assert terminating[0]["metadata"]["deletionTimestamp"]  # shown, so the presets' CEL leaves it out


def test_an_admitted_pod_stands_for_its_stored_pod_until_that_is_deleted(
    fake_apiserver: FakeApiServer, lookup: ClusterLookup
) -> None:
    """The watch is behind for everything: the admitted pod is counted in flight, then as the stored pod
    it claims (once), and not at all once that pod is deleted."""
    hash_label = {"pod-template-hash": "5d9c"}
    lookup.list("v1", "pods", "shop", hash_label)
    with fake_apiserver.watches_behind("pods"):
        admitted = placed(owned_pod("", labels=hash_label), "spot")
        lookup.remember_admitted(admitted)

        def decide() -> list[str]:
            with AdmissionScope(time.monotonic() + 30):
                return names(lookup.list("v1", "pods", "shop", hash_label))

        assert decide() == ["(admitted)"]  # in flight
        fake_apiserver.store.create(placed(owned_pod("web-5d9c-x", labels=hash_label), "spot"))
        assert decide() == ["web-5d9c-x"]  # stored: counted once
        fake_apiserver.store.delete("pods", "web-5d9c-x", "shop")
        assert decide() == []  # deleted: its entry is gone too


def test_a_pod_deleted_before_the_list_that_the_watch_delivers_late_is_not_counted(
    fake_apiserver: FakeApiServer, lookup: ClusterLookup
) -> None:
    """The watch is behind: a pod stored and deleted before a decision's list reaches the cache (its creation,
    not yet its deletion) after the decision read that list, while it waits for the workload's lock. The
    list's resourceVersion is newer than the pod's: the pod was gone before the list, not stored after it."""
    hash_label = {"pod-template-hash": "5d9c"}
    lookup.list("v1", "pods", "shop", hash_label)
    cache = lookup.caches.existing("v1", "pods")
    assert cache is not None
    seen: list[list[str]] = []

    def decide() -> None:
        with AdmissionScope(time.monotonic() + 600):
            seen.append(names(lookup.list("v1", "pods", "shop", hash_label)))

    with fake_apiserver.watches_behind("pods") as behind:
        fake_apiserver.store.create(owned_pod("web-5d9c-x", labels=hash_label))
        fake_apiserver.store.delete("pods", "web-5d9c-x", "shop")
        with AdmissionScope(time.monotonic() + 600):  # an earlier decision about the workload holds its lock
            assert names(lookup.list("v1", "pods", "shop", hash_label)) == []
            fake_apiserver.clear_requests()
            decision = threading.Thread(target=decide)
            decision.start()
            eventually(lambda: fake_apiserver.requests_matching("GET", r"/namespaces/shop/pods$"), what="its list")
            behind.release(1)  # the creation, not the deletion
            eventually(lambda: cache.get("shop", "web-5d9c-x") is not None, what="the late creation")
        decision.join(HANG_SECONDS)
    assert seen == [[]]


def test_one_read_serves_the_requests_that_arrived_before_it(
    fake_apiserver: FakeApiServer, lookup: ClusterLookup
) -> None:
    """A slow-start batch arrives at once: whatever its pods' creator had seen was stored before they
    arrived, so the list the first decision reads serves the others; a request arriving later reads."""
    hash_label = {"pod-template-hash": "5d9c"}
    lookup.list("v1", "pods", "shop", hash_label)
    fake_apiserver.store.create(owned_pod("web-5d9c-a", labels=hash_label))
    batch_arrived = time.perf_counter()
    fake_apiserver.clear_requests()

    def decide(arrived: float) -> list[str]:
        with AdmissionScope(time.monotonic() + 30, arrived=arrived):
            return names(lookup.list("v1", "pods", "shop", hash_label))

    with fake_apiserver.watches_behind("pods"):
        assert decide(batch_arrived) == ["web-5d9c-a"]
        fake_apiserver.store.create(owned_pod("web-5d9c-b", labels=hash_label))  # after the read
        assert decide(batch_arrived) == ["web-5d9c-a"]  # the batch's own read: b came after its requests
        assert len(fake_apiserver.requests_matching("GET", r"/namespaces/shop/pods$")) == 1
        assert decide(time.perf_counter()) == ["web-5d9c-a", "web-5d9c-b"]  # arrived later: reads again
    assert len(fake_apiserver.requests_matching("GET", r"/namespaces/shop/pods$")) == 2


def test_decisions_that_arrive_together_share_the_read_under_way(
    fake_apiserver: FakeApiServer, lookup: ClusterLookup
) -> None:
    """A slow-start batch's requests arrive together: one lists the stored pods, the others wait for
    that list (it started after they arrived) instead of listing too, then decide one at a time."""
    hash_label = {"pod-template-hash": "5d9c"}
    lookup.list("v1", "pods", "shop", hash_label)
    fake_apiserver.store.create(owned_pod("web-5d9c-a", labels=hash_label))
    arrived = time.perf_counter()
    fake_apiserver.clear_requests()
    fake_apiserver.set_latency(0.2)  # a read takes a while: the others find it under way
    seen: list[list[str]] = []

    def decide() -> None:
        with AdmissionScope(time.monotonic() + 30, arrived=arrived):
            seen.append(names(lookup.list("v1", "pods", "shop", hash_label)))

    threads = [threading.Thread(target=decide) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG_SECONDS)
    fake_apiserver.set_latency(0)
    assert seen == [["web-5d9c-a"]] * 4
    assert len(fake_apiserver.requests_matching("GET", r"/namespaces/shop/pods$")) == 1
