"""celmut's JSON client over the official kubernetes client: verbs, paths and typed errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from celmut.kube.client import (
    MERGE_PATCH,
    Cluster,
    ClusterError,
    Conflict,
    NotFound,
    TooManyRequests,
    Unreachable,
    resource_path,
)
from tests.fakekube import FakeApiServer

from .conftest import pod


@pytest.mark.parametrize(
    ("args", "path"),
    [
        (("v1", "pods", "ns", "web", "status"), "/api/v1/namespaces/ns/pods/web/status"),
        (("apps/v1", "deployments", "", ""), "/apis/apps/v1/deployments"),
        (("policies.kyverno.io/v1", "mutatingpolicies", "", "p"), "/apis/policies.kyverno.io/v1/mutatingpolicies/p"),
    ],
    ids=["core namespaced subresource", "group collection across namespaces", "cluster-scoped custom object"],
)
def test_resource_paths(args: tuple[str, ...], path: str) -> None:
    assert resource_path(*args) == path


def test_create_get_patch_list_delete(cluster: Cluster, fake_apiserver: FakeApiServer) -> None:
    cluster.create("v1", "pods", "default", pod("web"))
    assert cluster.get("v1", "pods", "default", "web")["metadata"]["name"] == "web"
    cluster.patch("v1", "pods", "default", "web", [{"op": "add", "path": "/metadata/labels/x", "value": "1"}])
    assert fake_apiserver.requests_matching("PATCH")[-1].content_type == "application/json-patch+json"
    for index in range(3):
        cluster.create("v1", "pods", "default", pod(f"more-{index}", labels={"x": "1"}))
    listed = cluster.list_all("v1", "pods", "default", label_selector="x=1")
    assert sorted(i["metadata"]["name"] for i in listed["items"]) == ["more-0", "more-1", "more-2", "web"]
    cluster.delete("v1", "pods", "default", "web")
    with pytest.raises(NotFound) as err:
        cluster.get("v1", "pods", "default", "web")
    assert err.value.status == 404 and "web" in err.value.message


def test_list_all_follows_continue_tokens(cluster: Cluster, fake_apiserver: FakeApiServer) -> None:
    for index in range(1203):
        fake_apiserver.store.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{index}"}}, namespace="default"
        )
    page = cluster.list_all("v1", "configmaps")
    assert len(page["items"]) == 1203
    assert len(fake_apiserver.requests_matching("GET", r"/configmaps$")) == 3  # pages of 500


@pytest.mark.parametrize(
    ("status", "reason", "error"),
    [
        (409, "Conflict", Conflict),
        (429, "TooManyRequests", TooManyRequests),
        (500, "InternalError", ClusterError),
    ],
    ids=["409 is Conflict", "429 is TooManyRequests", "other statuses are ClusterError"],
)
def test_errors_are_typed(
    cluster: Cluster, fake_apiserver: FakeApiServer, status: int, reason: str, error: type
) -> None:
    fake_apiserver.fail_next("GET", r"/pods/web$", status, reason=reason, message="injected")
    with pytest.raises(error) as err:
        cluster.get("v1", "pods", "default", "web")
    assert (err.value.status, err.value.reason, err.value.message) == (status, reason, "injected")


def test_unreachable_server_is_a_typed_error(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    cluster = Cluster.connect(str(fake_apiserver.kubeconfig(tmp_path / "kubeconfig")), timeout=2)
    fake_apiserver.stop()
    with pytest.raises(Unreachable, match="cannot reach the API server"):
        cluster.get("v1", "namespaces", "", "default")


def test_bad_kubeconfig_names_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n")
    with pytest.raises(ClusterError, match=str(broken)):
        Cluster.connect(str(broken))


def test_eviction_uses_the_eviction_subresource(cluster: Cluster, fake_apiserver: FakeApiServer) -> None:
    cluster.create("v1", "pods", "default", pod("web"))
    cluster.evict("default", "web")
    assert fake_apiserver.requests_matching("POST", r"/pods/web/eviction$")
    with pytest.raises(NotFound):
        cluster.get("v1", "pods", "default", "web")


def test_a_request_the_api_server_throttles_is_sent_again_after_its_retry_after(
    fake_apiserver: FakeApiServer, cluster: Cluster
) -> None:
    """API Priority and Fairness answers 429 with Retry-After when a priority level's queue is full;
    client-go waits and retries (rest/with_retry.go checkWait): so does celmut, never an eviction's 429
    (a PodDisruptionBudget's answer)."""
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}})
    throttle: dict[str, Any] = {"reason": "TooManyRequests", "headers": {"Retry-After": "0"}}
    fake_apiserver.fail_next("PATCH", r"/configmaps/cm$", 429, times=2, **throttle)
    patched = cluster.patch("v1", "configmaps", "default", "cm", {"data": {"a": "b"}}, content_type=MERGE_PATCH)
    assert patched["data"] == {"a": "b"} and cluster.throttled == 2
    assert len(fake_apiserver.requests_matching("PATCH", r"/configmaps/cm$")) == 3

    fake_apiserver.fail_next("POST", r"/eviction$", 429, **throttle)
    with pytest.raises(TooManyRequests):
        cluster.evict("default", "web")
    assert cluster.throttled == 2


def test_a_list_read_past_compaction_continues_at_the_latest_version(
    fake_apiserver: FakeApiServer, cluster: Cluster
) -> None:
    """A controller works off each page before it reads the next, so a list of 100,000 pods can outlive
    etcd's compaction (5 minutes): the next page is then a 410 with a token continuing the list at the
    latest resourceVersion (k8s.io/apiserver storage/etcd3/errors.go handleCompactedErrorForPaging),
    which is followed — seen against kube-apiserver v1.36 after a 10-minute sweep."""
    for name in ("a", "b", "c", "d", "e"):
        fake_apiserver.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}})
    pages = cluster.pages("v1", "configmaps", "default", limit=2)
    first = next(pages)
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "f", "namespace": "default"}})
    fake_apiserver.compact()  # the first page's resourceVersion is gone
    rest = [item["metadata"]["name"] for page in pages for item in page["items"]]
    assert [item["metadata"]["name"] for item in first["items"]] + rest == ["a", "b", "c", "d", "e", "f"]
    expired = [r for r in fake_apiserver.requests_matching("GET", r"/configmaps$") if "continue" in r.query]
    assert len(expired) == 3  # the refused page, the same page again from the latest version, the last one
