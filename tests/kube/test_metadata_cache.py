"""Metadata-only caches (issue 16, item 1): what placement counting and owner lookups need, and no more.

A ``metadata_only`` cache lists with ``Accept: ...;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1``
and watches with ``as=PartialObjectMetadata`` (client-go's metadata client,
k8s.io/client-go/metadata/metadata.go); it keeps apiVersion, kind and metadata only, even from a
server that answers whole objects. Relists are paged (``limit``/``continue``). Which resources are
cached that way follows the loaded policies (:func:`celmut.service.lookup_needs.metadata_only_resources`).
"""

from __future__ import annotations

from typing import Any

from celmut.compile.pipeline import compile_documents, read_paths
from celmut.kube.cache import WatchedCache
from celmut.kube.client import Cluster
from celmut.kube.lookup import CacheSet, ClusterLookup
from celmut.service.assembly import EngineSettings, assemble_engine
from celmut.service.lookup_needs import METADATA_RESOURCES, metadata_only_resources
from celmut.sources.documents import Document
from tests.fakekube import FakeApiServer
from tests.waiting import HANG_SECONDS

from .conftest import eventually, pod


def _accepts(fake: FakeApiServer, watch: bool) -> list[str]:
    return [
        r.accept for r in fake.requests_matching("GET", r"/api/v1/pods$") if (r.query.get("watch") == ["true"]) == watch
    ]


def test_a_metadata_only_cache_asks_for_and_keeps_only_metadata(
    fake_apiserver: FakeApiServer, cluster: Cluster
) -> None:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u1", "controller": True}
    fake_apiserver.store.create(pod("listed", labels={"app": "web"}, ownerReferences=[owner]))
    cache = WatchedCache(cluster, "v1", "pods", metadata_only=True).start()
    try:
        assert cache.wait_synced(HANG_SECONDS)
        fake_apiserver.store.create(pod("watched", annotations={"celmut.io/placement": "spot"}))
        eventually(lambda: cache.get("default", "watched") is not None, what="the watched pod")
        listed, watched = cache.get("default", "listed"), cache.get("default", "watched")
        assert listed is not None and watched is not None
        for obj in (listed, watched):  # the real kind, not PartialObjectMetadata; no spec
            assert set(obj) == {"apiVersion", "kind", "metadata"} and obj["kind"] == "Pod" and obj["apiVersion"] == "v1"
        assert listed["metadata"]["ownerReferences"] == [owner] and listed["metadata"]["labels"] == {"app": "web"}
        assert watched["metadata"]["annotations"] == {"celmut.io/placement": "spot"}
    finally:
        cache.stop()
    lists, watches = _accepts(fake_apiserver, watch=False), _accepts(fake_apiserver, watch=True)
    assert lists and all("as=PartialObjectMetadataList;g=meta.k8s.io;v=v1" in a for a in lists)
    assert watches and all("as=PartialObjectMetadata;g=meta.k8s.io;v=v1" in a for a in watches)


def test_a_whole_cache_asks_for_whole_objects(fake_apiserver: FakeApiServer, cluster: Cluster) -> None:
    fake_apiserver.store.create(pod("web"))
    cache = WatchedCache(cluster, "v1", "pods").start()
    try:
        assert cache.wait_synced(HANG_SECONDS)
        assert cache.get("default", "web")["spec"]["containers"][0]["image"] == "nginx"  # type: ignore[index]
    finally:
        cache.stop()
    assert all("PartialObjectMetadata" not in a for a in _accepts(fake_apiserver, watch=False))


def test_the_fake_server_answers_metadata_lists_as_partial_object_metadata(
    fake_apiserver: FakeApiServer, cluster: Cluster
) -> None:
    fake_apiserver.store.create(pod("web"))
    page = cluster.list("v1", "pods", metadata_only=True)
    assert page["kind"] == "PartialObjectMetadataList" and page["apiVersion"] == "meta.k8s.io/v1"
    assert [set(i) for i in page["items"]] == [{"apiVersion", "kind", "metadata"}]
    assert page["items"][0]["kind"] == "PartialObjectMetadata"


def test_a_relist_is_paged_with_continue(fake_apiserver: FakeApiServer, cluster: Cluster) -> None:
    for i in range(1203):
        fake_apiserver.store.create(pod(f"p{i}"))
    cache = WatchedCache(cluster, "v1", "pods", metadata_only=True).start()
    try:
        assert cache.wait_synced(HANG_SECONDS)
        assert len(cache) == 1203
    finally:
        cache.stop()
    lists = [r for r in fake_apiserver.requests_matching("GET", r"/api/v1/pods$") if "watch" not in r.query]
    assert [r.query.get("limit") for r in lists] == [["500"]] * 3
    assert "continue" not in lists[0].query and all("continue" in r.query for r in lists[1:])


def test_a_full_cache_is_not_read_lookups_go_to_the_api_server(fake_apiserver: FakeApiServer, cluster: Cluster) -> None:
    for name in ("a", "b", "c"):
        fake_apiserver.store.create(pod(name))
    caches = CacheSet(cluster, max_objects=2)
    try:
        listed = ClusterLookup(caches).list("v1", "pods", "default")
        assert sorted(i["metadata"]["name"] for i in listed["items"]) == ["a", "b", "c"]  # not 2 of them
    finally:
        for cache in caches.caches():
            cache.stop()


def _policies(*paths: str, variable: str | None = None) -> Any:
    """The compiled policies of these files, plus one MutatingPolicy with ``variable`` as a variable."""
    documents, errors = read_paths(*paths)
    if variable is not None:
        spec = {
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
                ]
            },
            "variables": [{"name": "looked", "expression": variable}],
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}],
        }
        policy = {
            "apiVersion": "policies.kyverno.io/v1",
            "kind": "MutatingPolicy",
            "metadata": {"name": "user"},
            "spec": spec,
        }
        documents.append(Document("user.yaml", 0, policy))
    engine = assemble_engine(compile_documents(documents), EngineSettings())
    assert not errors and (variable is None or any(p.name == "user" for p in engine.policies))
    return engine.policies


SPOT = "examples/spot-presets/spot-partial.yaml"


def test_presets_lookups_keep_pods_and_owners_metadata_only() -> None:
    assert metadata_only_resources(_policies(SPOT)) == METADATA_RESOURCES


def test_a_policy_reading_pods_whole_gets_a_whole_pod_cache() -> None:
    user = 'resource.List("v1", "pods", "shop").items.all(p, p.spec.nodeName != "")'
    assert metadata_only_resources(_policies(SPOT, variable=user)) == METADATA_RESOURCES - {("v1", "pods")}


def test_a_lookup_of_a_computed_resource_caches_nothing_metadata_only() -> None:
    user = 'resource.Get("v1", object.metadata.labels["kind"], "shop", "x")'
    assert metadata_only_resources(_policies(SPOT, variable=user)) == frozenset()


def test_a_lookup_by_the_indexed_label_reads_the_same_pods_as_a_scan(
    fake_apiserver: FakeApiServer, cluster: Cluster
) -> None:
    """The pods cache indexes pod-template-hash (a spot preset lists a workload's pods by it): the
    answer must be the scan's after adds, a label change, a delete and a relist."""
    for name, value in [("a", "h1"), ("b", "h1"), ("c", "h2"), ("d", "")]:
        fake_apiserver.store.create(pod(name, labels={"pod-template-hash": value} if value else {}))
    cache = WatchedCache(cluster, "v1", "pods", metadata_only=True, index_label="pod-template-hash").start()

    def indexed(value: str) -> list[str]:
        return sorted(o["metadata"]["name"] for o in cache.items("default", {"pod-template-hash": value}))

    def scanned(value: str) -> list[str]:
        return sorted(
            o["metadata"]["name"]
            for o in cache.items("default")
            if (o["metadata"].get("labels") or {}).get("pod-template-hash") == value
        )

    try:
        assert cache.wait_synced(HANG_SECONDS)
        assert indexed("h1") == scanned("h1") == ["a", "b"] and indexed("h2") == ["c"]
        fake_apiserver.store.patch(
            "pods", "b", {"metadata": {"labels": {"pod-template-hash": "h2"}}}, namespace="default"
        )
        fake_apiserver.store.delete("pods", "c", namespace="default")
        fake_apiserver.store.create(pod("e", labels={"pod-template-hash": "h1"}))
        eventually(lambda: indexed("h1") == ["a", "e"] and indexed("h2") == ["b"], what="the indexed changes")
        assert indexed("h1") == scanned("h1") and indexed("h2") == scanned("h2")
        fake_apiserver.wait_for_watchers("pods", 1)
        fake_apiserver.drop_watches(abrupt=True)
        fake_apiserver.store.delete("pods", "a", namespace="default")
        fake_apiserver.compact()  # 410 Gone: the cache lists again and rebuilds its index
        eventually(lambda: cache.relists >= 2 and indexed("h1") == ["e"], what="the relisted index")
        assert indexed("h1") == scanned("h1") and indexed("h2") == scanned("h2") == ["b"]
        assert cache.items("other", {"pod-template-hash": "h1"}) == []
    finally:
        cache.stop()


def test_a_metadata_only_pod_cache_holds_the_pods_that_are_not_failed_or_succeeded(
    fake_apiserver: FakeApiServer, cluster: Cluster
) -> None:
    """PartialObjectMetadata has no status, so the presets could not tell a Failed pod from a live one
    (issue 38): the cache lists and watches with a field selector on status.phase, and a pod that
    finishes leaves it (the watch sends DELETED for an object that stops matching)."""
    running = pod("running")
    fake_apiserver.store.create(running)
    fake_apiserver.store.create(pod("done"))
    fake_apiserver.store.update_status({**pod("done"), "status": {"phase": "Succeeded"}})
    caches = CacheSet(cluster, metadata_only=METADATA_RESOURCES)
    try:
        lookup = ClusterLookup(caches)
        assert [p["metadata"]["name"] for p in lookup.list("v1", "pods", "default")["items"]] == ["running"]
        fake_apiserver.store.update_status({**running, "status": {"phase": "Failed"}})
        eventually(lambda: lookup.list("v1", "pods", "default")["items"] == [], what="the Failed pod to leave")
    finally:
        caches.stop()
    queries = [r.query for r in fake_apiserver.requests_matching("GET", r"/api/v1/pods$")]
    assert queries and all(q.get("fieldSelector") == ["status.phase!=Failed,status.phase!=Succeeded"] for q in queries)
