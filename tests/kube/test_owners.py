"""The opt-out label followed through controller owners (Pod → ReplicaSet → Deployment), read from the
watched caches, or from the API server when the cache has not seen the owner yet."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from celmut.kube.client import Cluster
from celmut.kube.lookup import CacheSet
from celmut.kube.owners import OwnerOptOut
from tests.fakekube import FakeApiServer


@pytest.fixture
def caches(cluster: Cluster) -> Iterator[CacheSet]:
    """The watched caches of one test, stopped after it (their watch threads must not outlive it)."""
    caches = CacheSet(cluster)
    yield caches
    caches.stop()


def owned(
    kind: str, name: str, owner: dict[str, Any] | None, api_version: str = "apps/v1", **labels: str
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "shop", "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "x"}}, "template": {"metadata": {}, "spec": {}}}
    if kind == "Pod":
        spec = {"containers": [{"name": "c", "image": "x"}]}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


def chain(fake: FakeApiServer, **deployment_labels: str) -> dict[str, Any]:
    fake.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    deployment = fake.store.create(owned("Deployment", "web", None, **deployment_labels))
    rs = fake.store.create(owned("ReplicaSet", "web-1", deployment))
    return owned("Pod", "", rs, api_version="v1")


def test_a_pod_of_a_labelled_deployment_is_opted_out(fake_apiserver: FakeApiServer, caches: CacheSet) -> None:
    pod = chain(fake_apiserver, **{"celmut.io/ignore": "true"})
    assert OwnerOptOut(caches)(pod) == "its owner Deployment shop/web is labelled celmut.io/ignore"


def test_a_pod_of_an_unlabelled_deployment_is_not(fake_apiserver: FakeApiServer, caches: CacheSet) -> None:
    assert OwnerOptOut(caches)(chain(fake_apiserver)) == ""


def test_the_objects_own_label_and_a_custom_label(fake_apiserver: FakeApiServer, caches: CacheSet) -> None:
    pod = chain(fake_apiserver, **{"example.com/skip": ""})
    check = OwnerOptOut(caches, "example.com/skip")
    assert check(pod).startswith("its owner Deployment")
    assert check({"metadata": {"name": "p", "labels": {"example.com/skip": "1"}}}) == "labelled example.com/skip"


def test_an_owner_the_cache_has_not_seen_yet_is_read_from_the_api_server(
    fake_apiserver: FakeApiServer, caches: CacheSet
) -> None:
    """The ReplicaSet controller creates Pods right after their ReplicaSet: the watch may lag behind."""
    check = OwnerOptOut(caches)
    assert check(chain(fake_apiserver)) == ""  # caches of replicasets and deployments now started and synced
    for resource in ("replicasets", "deployments"):  # the caches' watches stay down: they miss what follows
        fake_apiserver.fail_next("GET", rf"^/apis/apps/v1/{resource}$", 503, times=None)
    fake_apiserver.drop_watches(abrupt=True)
    labelled = fake_apiserver.store.create(owned("Deployment", "late", None, **{"celmut.io/ignore": "true"}))
    rs = fake_apiserver.store.create(owned("ReplicaSet", "late-1", labelled))
    fake_apiserver.clear_requests()
    assert check(owned("Pod", "", rs, api_version="v1")) != ""
    assert fake_apiserver.requests_matching("GET", r"/replicasets/late-1$")


def test_an_owner_that_cannot_be_read_does_not_block(fake_apiserver: FakeApiServer, caches: CacheSet) -> None:
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    ghost = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "gone", "uid": "x"}}
    assert OwnerOptOut(caches)(owned("Pod", "p", ghost, api_version="v1")) == ""
