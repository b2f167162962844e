"""An offline run remembers what it admitted, as an API server would (issue 30 stopped copying each
admitted object into the store): a later resource's ``resource.Get/List`` sees the earlier ones as
they were admitted (mutated), and no read, by a policy or by the caller, can change what is stored
or what the run returned."""

from __future__ import annotations

import yaml

from celmut.service.offline import OfflineCluster
from celmut.service.static_resources import StaticResources
from celmut.sources.documents import Document
from tests.runtime.helpers import jsonpatch, mpol, pod

# Each Pod is labelled with the names and "out" labels of the Pods already in the cluster.
SEEN = (
    'resource.List("v1", "pods", "default").items'
    '.map(p, p.metadata.name + "=" + ("out" in p.metadata.labels ? p.metadata.labels.out : "-")).join(",")'
)


def offline_with(expression: str) -> OfflineCluster:
    patch = f'[JSONPatch{{op: "add", path: "/metadata/labels/out", value: "seen:" + {expression}}}]'
    return OfflineCluster.build([Document("policy.yaml", 0, yaml.safe_load(mpol("p", jsonpatch(patch))))])


def test_a_later_resource_sees_the_earlier_ones_as_admitted() -> None:
    offline = offline_with(SEEN)
    runs = offline.admit([pod("first"), pod("second"), pod("third")])
    labels = [r.result.object["metadata"]["labels"]["out"] for r in runs if r.result.object is not None]
    assert labels == ["seen:", "seen:first=seen:", "seen:first=seen:,second=seen:first=seen:"]


def test_changing_what_the_caller_reads_changes_neither_the_store_nor_the_result() -> None:
    offline = offline_with(SEEN)
    [first] = offline.admit([pod("first")])
    read = offline.cluster.get("v1", "pods", "default", "first")
    read["metadata"]["labels"]["out"] = "changed by the caller"
    [second] = offline.admit([pod("second")])
    assert first.result.object is not None and second.result.object is not None
    assert first.result.object["metadata"]["labels"]["out"] == "seen:"
    assert second.result.object["metadata"]["labels"]["out"] == "seen:first=seen:"


def test_kept_objects_are_served_like_added_ones() -> None:
    store = StaticResources()
    admitted = pod("a")
    store.keep(admitted)
    store.keep({"apiVersion": "v1", "kind": "PodList", "items": [pod("b")]})
    assert [p["metadata"]["name"] for p in store.list("v1", "pods", "default")["items"]] == ["a", "b"]
    got = store.get("v1", "pods", "default", "a")
    assert got == admitted and got is not admitted
