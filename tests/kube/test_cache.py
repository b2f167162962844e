"""Watched caches: list, watch, and survive dropped watches, expired resourceVersions and errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from celmut.kube.cache import WatchedCache
from celmut.kube.client import Cluster
from tests.fakekube import FakeApiServer
from tests.waiting import HANG_SECONDS

from .conftest import eventually, pod


@pytest.fixture
def pods(cluster: Cluster) -> Iterator[WatchedCache]:
    cache = WatchedCache(cluster, "v1", "pods", max_backoff=0.2).start()
    assert cache.wait_synced(HANG_SECONDS)
    try:
        yield cache
    finally:
        cache.stop()


def names(cache: WatchedCache) -> set[str]:
    return {o["metadata"]["name"] for o in cache.items()}


def test_lists_then_follows_changes(fake_apiserver: FakeApiServer, cluster: Cluster) -> None:
    fake_apiserver.store.create(pod("before"))
    cache = WatchedCache(cluster, "v1", "pods")
    events: list[tuple[str, str]] = []
    cache.add_handler(lambda kind, obj, _old: events.append((kind, obj["metadata"]["name"])))
    cache.start()
    try:
        assert cache.wait_synced(HANG_SECONDS)
        assert names(cache) == {"before"}
        item = cache.get("default", "before")
        assert item is not None and item["kind"] == "Pod" and item["apiVersion"] == "v1"  # typed lists omit them
        fake_apiserver.store.create(pod("after"))
        fake_apiserver.store.patch("pods", "before", {"metadata": {"labels": {"x": "1"}}}, namespace="default")
        fake_apiserver.store.delete("pods", "after", namespace="default")
        eventually(lambda: ("DELETED", "after") in events, what="the delete event")
        assert events == [("ADDED", "before"), ("ADDED", "after"), ("MODIFIED", "before"), ("DELETED", "after")]
        assert names(cache) == {"before"}
        assert cache.get("default", "before")["metadata"]["labels"] == {"x": "1"}  # type: ignore[index]
    finally:
        cache.stop()


def test_managed_fields_are_not_kept(fake_apiserver: FakeApiServer, pods: WatchedCache) -> None:
    fake_apiserver.store.create(pod("web", managedFields=[{"manager": "kubectl", "operation": "Update"}]))
    eventually(lambda: "web" in names(pods))
    assert "managedFields" not in pods.get("default", "web")["metadata"]  # type: ignore[index]


def test_a_dropped_watch_resumes_without_relisting(fake_apiserver: FakeApiServer, pods: WatchedCache) -> None:
    fake_apiserver.wait_for_watchers("pods", 1)
    fake_apiserver.drop_watches(abrupt=True)
    fake_apiserver.store.create(pod("while-reconnecting"))
    eventually(lambda: "while-reconnecting" in names(pods), what="the event after reconnecting")
    assert pods.relists == 1


def test_an_expired_resource_version_relists(fake_apiserver: FakeApiServer, pods: WatchedCache) -> None:
    fake_apiserver.store.create(pod("stays"))
    fake_apiserver.store.create(pod("goes"))
    eventually(lambda: names(pods) == {"stays", "goes"})
    fake_apiserver.wait_for_watchers("pods", 1)
    fake_apiserver.drop_watches(abrupt=True)
    fake_apiserver.store.delete("pods", "goes", namespace="default")
    fake_apiserver.store.create(pod("new"))
    fake_apiserver.compact()  # the watch cannot resume: 410 Gone, so the cache lists again
    eventually(lambda: names(pods) == {"stays", "new"}, what="the relisted state")
    assert pods.relists >= 2


def test_server_errors_are_retried(fake_apiserver: FakeApiServer, pods: WatchedCache) -> None:
    fake_apiserver.wait_for_watchers("pods", 1)
    fake_apiserver.fail_next("GET", r"/pods$", 500, times=3)
    fake_apiserver.drop_watches(abrupt=True)
    fake_apiserver.store.create(pod("after-errors"))
    eventually(lambda: "after-errors" in names(pods), what="recovery after three failed watches")


def test_the_cache_is_bounded(fake_apiserver: FakeApiServer, cluster: Cluster) -> None:
    for index in range(5):
        fake_apiserver.store.create(pod(f"p{index}"))
    cache = WatchedCache(cluster, "v1", "pods", max_objects=3).start()
    try:
        assert cache.wait_synced(HANG_SECONDS)
        assert len(cache) == 3 and cache.overflowed
    finally:
        cache.stop()


def test_an_unserved_resource_is_absent_not_an_error(cluster: Cluster) -> None:
    cache = WatchedCache(cluster, "example.com/v1", "widgets").start()
    try:
        assert cache.wait_synced(HANG_SECONDS)
        assert cache.absent and cache.items() == []
    finally:
        cache.stop()
