"""Watches through ``kubernetes.watch.Watch``: ordering, resuming, 410 Gone, bookmarks, disconnects."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import kubernetes.client
import pytest
import urllib3
from kubernetes import watch
from kubernetes.client import ApiException, CoreV1Api

from tests.fakekube import FakeApiServer
from tests.waiting import HANG_SECONDS

from .manifests import config_map, pod


@pytest.fixture
def core(fake_api_client: kubernetes.client.ApiClient) -> CoreV1Api:
    return CoreV1Api(fake_api_client)


def _take(func: Any, count: int, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    """The first ``count`` events of a watch (the stream is stopped then; the hang guard at most)."""
    watcher = watch.Watch()
    events: list[dict[str, Any]] = []
    for event in watcher.stream(func, *args, timeout_seconds=int(HANG_SECONDS), **kwargs):
        events.append(event)
        if len(events) == count:
            watcher.stop()
    return events


def _summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["raw_object"]["metadata"].get("name", "")) for e in events]


def test_replay_and_resume_in_order(core: CoreV1Api) -> None:
    start = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", config_map("a", {"v": "1"}))
    core.patch_namespaced_config_map("a", "default", {"data": {"v": "2"}})
    core.delete_namespaced_config_map("a", "default")
    events = _take(core.list_namespaced_config_map, 3, "default", resource_version=start)
    assert _summary(events) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    assert events[1]["object"].data == {"v": "2"}  # typed objects, deserialized by the client
    versions = [int(e["object"].metadata.resource_version) for e in events]
    assert versions == sorted(versions) and versions[0] > int(start)

    # Resume from the last event: only later changes arrive.
    core.create_namespaced_config_map("default", config_map("b"))
    core.delete_namespaced_config_map("b", "default")
    resumed = _take(core.list_namespaced_config_map, 2, "default", resource_version=str(versions[-1]))
    assert _summary(resumed) == [("ADDED", "b"), ("DELETED", "b")]


def test_watch_without_resource_version_starts_with_current_state(core: CoreV1Api) -> None:
    core.create_namespaced_config_map("default", config_map("x"))
    core.create_namespaced_config_map("default", config_map("y"))
    events = _take(core.list_namespaced_config_map, 2, "default")
    assert _summary(events) == [("ADDED", "x"), ("ADDED", "y")]


def test_live_events_and_stop(core: CoreV1Api, fake_apiserver: FakeApiServer) -> None:
    start = core.list_namespaced_pod("default").metadata.resource_version
    watcher = watch.Watch()
    received: list[dict[str, Any]] = []

    def consume() -> None:
        for event in watcher.stream(core.list_namespaced_pod, "default", resource_version=start):
            received.append(event)
            if event["type"] == "DELETED":
                watcher.stop()

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    assert fake_apiserver.wait_for_watchers("pods")
    core.create_namespaced_pod("default", pod("p"))
    core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"k": "v"}}})
    core.delete_namespaced_pod("p", "default")
    thread.join(timeout=HANG_SECONDS)
    assert not thread.is_alive()
    assert _summary(received) == [("ADDED", "p"), ("MODIFIED", "p"), ("DELETED", "p")]
    assert received[1]["object"].metadata.labels == {"k": "v"}


def test_label_selector_transitions(core: CoreV1Api) -> None:
    start = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", pod("p", {"app": "x"}))
    core.create_namespaced_pod("default", pod("other", {"app": "z"}))
    core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"app": "y"}}})
    core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"app": "x"}}})
    core.delete_namespaced_pod("other", "default")
    core.delete_namespaced_pod("p", "default")
    events = _take(core.list_namespaced_pod, 4, "default", resource_version=start, label_selector="app=x")
    assert _summary(events) == [("ADDED", "p"), ("DELETED", "p"), ("ADDED", "p"), ("DELETED", "p")]


def test_compacted_history_gives_410(core: CoreV1Api, fake_apiserver: FakeApiServer) -> None:
    old = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", config_map("a"))
    fake_apiserver.compact()

    # The raw stream: HTTP 200 and an ERROR event carrying a 410 Expired Status.
    response = core.list_namespaced_config_map("default", watch=True, resource_version=old, _preload_content=False)
    assert response.status == 200
    lines = [json.loads(line) for line in response.data.splitlines() if line.strip()]
    assert lines[0]["type"] == "ERROR"
    assert lines[0]["object"]["code"] == 410 and lines[0]["object"]["reason"] == "Expired"
    assert lines[0]["object"]["message"].startswith(f"too old resource version: {old} (")

    # The Watch helper turns it into ApiException(410) (at once with timeout_seconds, else after one retry).
    with pytest.raises(ApiException) as err:
        list(watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=old, timeout_seconds=5))
    assert err.value.status == 410
    with pytest.raises(ApiException) as err:
        for _ in watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=old):
            pass
    assert err.value.status == 410

    # An Exact list at a compacted resourceVersion is 410 too; the current one still works.
    with pytest.raises(ApiException) as err:
        core.list_namespaced_config_map("default", resource_version=old, resource_version_match="Exact")
    assert err.value.status == 410
    current = str(fake_apiserver.store.resource_version)
    assert core.list_namespaced_config_map("default", resource_version=current, resource_version_match="Exact").items


def test_exact_list_sees_the_past(core: CoreV1Api) -> None:
    core.create_namespaced_config_map("default", config_map("a", {"v": "1"}))
    then = core.list_namespaced_config_map("default").metadata.resource_version
    core.patch_namespaced_config_map("a", "default", {"data": {"v": "2"}})
    core.create_namespaced_config_map("default", config_map("b"))
    past = core.list_namespaced_config_map("default", resource_version=then, resource_version_match="Exact")
    assert [(c.metadata.name, c.data) for c in past.items] == [("a", {"v": "1"})]
    assert past.metadata.resource_version == then


def test_bookmarks_and_initial_events() -> None:
    with FakeApiServer(bookmark_interval=0.1) as server:
        core = CoreV1Api(server.api_client())
        core.create_namespaced_config_map("default", config_map("a"))
        rv = core.list_namespaced_config_map("default").metadata.resource_version
        events = _take(core.list_namespaced_config_map, 1, "default", resource_version=rv, allow_watch_bookmarks=True)
        assert events[0]["type"] == "BOOKMARK"
        assert events[0]["raw_object"] == {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": rv}}

        response = core.list_namespaced_config_map(
            "default",
            watch=True,
            send_initial_events=True,
            resource_version_match="NotOlderThan",
            allow_watch_bookmarks=True,
            timeout_seconds=5,
            _preload_content=False,
        )
        lines = []
        for line in watch.watch.iter_resp_lines(response):
            lines.append(json.loads(line))
            if len(lines) == 2:
                break
        response.close()
        assert lines[0]["type"] == "ADDED" and lines[0]["object"]["metadata"]["name"] == "a"
        assert lines[1]["type"] == "BOOKMARK"
        assert lines[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def _collect(stream: Iterator[dict[str, Any]], into: list[Any]) -> None:
    try:
        for event in stream:
            into.append(event)
    except Exception as exc:  # the abrupt-disconnect case ends here
        into.append(exc)


def test_drop_watches_abruptly(core: CoreV1Api, fake_apiserver: FakeApiServer) -> None:
    received: list[Any] = []
    stream = watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version="1")
    thread = threading.Thread(target=_collect, args=(stream, received), daemon=True)
    thread.start()
    assert fake_apiserver.wait_for_watchers("configmaps")
    assert fake_apiserver.drop_watches() == 1
    thread.join(timeout=HANG_SECONDS)
    assert not thread.is_alive()
    assert isinstance(received[-1], urllib3.exceptions.ProtocolError)


def test_drop_watches_cleanly_the_client_resumes(core: CoreV1Api, fake_apiserver: FakeApiServer) -> None:
    start = core.list_namespaced_config_map("default").metadata.resource_version
    received: list[Any] = []
    watcher = watch.Watch()
    stream = watcher.stream(core.list_namespaced_config_map, "default", resource_version=start)
    thread = threading.Thread(target=_collect, args=(stream, received), daemon=True)
    thread.start()
    assert fake_apiserver.wait_for_watchers("configmaps")
    core.create_namespaced_config_map("default", config_map("one"))
    assert _wait(lambda: received)
    fake_apiserver.drop_watches(abrupt=False)
    core.create_namespaced_config_map("default", config_map("two"))  # happens while nobody watches
    assert _wait(lambda: len(received) >= 2)
    watcher.stop()
    core.create_namespaced_config_map("default", config_map("three"))
    thread.join(timeout=HANG_SECONDS)
    assert _summary(received[:2]) == [("ADDED", "one"), ("ADDED", "two")]
    watches = fake_apiserver.requests_matching("GET", "/configmaps$")
    resumed = [r for r in watches if r.query.get("watch") == ["true"]]
    assert len(resumed) >= 2 and resumed[1].query["resourceVersion"] == [
        received[0]["object"].metadata.resource_version
    ]


def test_a_watch_opened_while_watches_are_behind_is_behind_for_its_replay_too(
    core: CoreV1Api, fake_apiserver: FakeApiServer
) -> None:
    """``watches_behind`` holds every event a watch has to send, the ones it replays when it opens during the
    hold too, and lets them through one at a time (``release``), then all as the hold ends."""
    start = core.list_namespaced_config_map("default").metadata.resource_version
    received: list[dict[str, Any]] = []

    def follow() -> None:
        for event in watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version=start, timeout_seconds=600
        ):
            received.append(event)
            if len(received) == 2:
                return

    with fake_apiserver.watches_behind("configmaps") as behind:
        core.create_namespaced_config_map("default", config_map("a"))
        core.delete_namespaced_config_map("a", "default")
        thread = threading.Thread(target=follow)
        thread.start()  # opens after both changes: it replays them
        assert fake_apiserver.wait_for_watchers("configmaps")
        assert received == []
        behind.release(1)
        assert _wait(lambda: received)
        assert _summary(received) == [("ADDED", "a")]  # the deletion is still behind
    thread.join(HANG_SECONDS)
    assert _summary(received) == [("ADDED", "a"), ("DELETED", "a")]


def _wait(condition: Any, timeout: float = HANG_SECONDS) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_shared_informer_survives_disconnects_and_410(core: CoreV1Api, fake_apiserver: FakeApiServer) -> None:
    from kubernetes.informer import SharedInformer

    def names() -> set[str]:
        return {p.metadata.name for p in informer.cache.list()}

    def new_watch(old: set[Any]) -> bool:
        return _wait(lambda: bool(set(fake_apiserver.watchers("pods")) - old))

    def plain_lists() -> int:
        return len([r for r in fake_apiserver.requests_matching("GET", "/pods$") if "watch" not in r.query])

    core.create_namespaced_pod("default", pod("before"))
    informer = SharedInformer(core.list_namespaced_pod, namespace="default")
    informer.start()
    try:
        assert _wait(lambda: names() == {"before"})
        assert new_watch(set())

        # A cut connection: the informer resumes its watch from the last resourceVersion, without a re-list.
        old = set(fake_apiserver.watchers("pods"))
        fake_apiserver.drop_watches()
        assert new_watch(old)
        core.create_namespaced_pod("default", pod("after-drop"))
        assert _wait(lambda: names() == {"before", "after-drop"})
        assert plain_lists() == 1

        # Disconnected (reconnects fail) while changes happen and history is compacted: the resumed
        # watch gets 410 Gone and the informer re-lists.
        old = set(fake_apiserver.watchers("pods"))
        fake_apiserver.fail_next("GET", r"/namespaces/default/pods$", 503, times=None)
        fake_apiserver.drop_watches()
        core.delete_namespaced_pod("after-drop", "default")
        core.create_namespaced_pod("default", pod("after-compact"))
        fake_apiserver.compact()
        fake_apiserver.clear_faults()
        assert new_watch(old)
        assert _wait(lambda: names() == {"before", "after-compact"})
        assert plain_lists() == 2
    finally:
        _stop(informer, fake_apiserver)


def _stop(informer: Any, server: FakeApiServer) -> None:
    """SharedInformer.stop() sets a flag and joins a thread that may be blocked reading a quiet watch
    (no timeout without a resync period): it hung a loaded test run for good. Ending the watches
    while stop() waits lets the loop see the flag."""
    stopping = threading.Thread(target=informer.stop, daemon=True)
    stopping.start()
    deadline = time.monotonic() + 30
    while stopping.is_alive() and time.monotonic() < deadline:
        server.drop_watches()
        stopping.join(0.05)
    assert not stopping.is_alive(), "the informer did not stop"
