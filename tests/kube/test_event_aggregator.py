"""Events folded per object, reason and group with a count (celmut/kube/events.py EventAggregator), as
client-go's EventCorrelator folds similar events (tools/record/events_cache.go: the aggregate message
prefix, the 10-minute window), through the fake API server and the real client."""

from __future__ import annotations

from typing import Any

from celmut.kube.client import Cluster
from celmut.kube.events import AGGREGATE_INTERVAL, AGGREGATE_PREFIX, EventAggregator
from tests.fakekube import FakeApiServer

POLICY = {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": "add-team"}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pod(name: str, namespace: str = "shop") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "uid": f"u-{name}"}}


def events(fake: FakeApiServer) -> list[dict[str, Any]]:
    return sorted(fake.store.list("events", "default"), key=lambda e: e["metadata"]["name"])


def event_writes(fake: FakeApiServer) -> list[str]:
    return [r.method for r in fake.requests if "/events" in r.path and r.method in ("POST", "PATCH")]


def test_occurrences_fold_into_one_event_per_group_whose_count_is_updated_at_most_every_interval(
    fake_apiserver: FakeApiServer, cluster: Cluster
) -> None:
    clock = Clock()
    folded = EventAggregator(cluster, "celmut-controller", update_every=10.0, clock=clock)
    for index in range(500):
        message = f"Pod shop/web-{index} mutated"
        folded.add(POLICY, reason="Mutated", message=message, group="shop", related=pod(f"web-{index}"))
    folded.add(POLICY, reason="Mutated", message="Pod bank/api mutated", group="bank", related=pod("api", "bank"))
    assert folded.flush() == 2  # one Event per namespace of the objects, created at once
    (bank, shop) = sorted(events(fake_apiserver), key=lambda e: e["count"])
    assert (shop["count"], bank["count"]) == (500, 1)
    assert shop["message"] == AGGREGATE_PREFIX + "Pod shop/web-499 mutated"
    assert bank["message"] == "Pod bank/api mutated"  # a single occurrence is not "combined"
    assert shop["involvedObject"]["kind"] == "MutatingPolicy" and shop["related"]["name"] == "web-499"

    for index in range(500, 800):
        folded.add(POLICY, reason="Mutated", message=f"Pod shop/web-{index} mutated", group="shop", related=pod("x"))
    fake_apiserver.clear_requests()
    assert folded.flush() == 0  # within update_every of its last write: the count waits
    clock.now += 10.0
    assert folded.flush() == 1 and event_writes(fake_apiserver) == ["PATCH"]
    assert sorted(e["count"] for e in events(fake_apiserver)) == [1, 800]


def test_after_the_window_a_similar_occurrence_starts_a_new_event_and_a_lost_one_is_created_again(
    fake_apiserver: FakeApiServer, cluster: Cluster
) -> None:
    clock = Clock()
    folded = EventAggregator(cluster, "celmut-controller", clock=clock)
    folded.add(POLICY, reason="Mutated", message="one", group="shop")
    folded.flush()
    clock.now += AGGREGATE_INTERVAL + 1  # client-go's defaultAggregateIntervalInSeconds
    folded.add(POLICY, reason="Mutated", message="two", group="shop")
    folded.flush()
    assert sorted(e["message"] for e in events(fake_apiserver)) == ["one", "two"]

    (newest,) = [e for e in events(fake_apiserver) if e["message"] == "two"]
    fake_apiserver.store.delete("events", newest["metadata"]["name"], "default")  # the API server's event TTL
    folded.add(POLICY, reason="Mutated", message="three", group="shop")
    assert folded.flush(final=True) == 1
    assert sorted((e["message"], e["count"]) for e in events(fake_apiserver)) == [
        ("(combined from similar events): three", 2),
        ("one", 1),
    ]
