"""``celmut playground --kubeconfig``: connected to a cluster, read-only. Against the in-repo fake API
server: the page lists its namespaces and objects and loads them, runs read the cluster for lookups
and namespaceObject, and nothing is ever written (the server's request log holds GETs only)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from celmut.kube.read_only import ReadOnlyCluster, WriteRefused, connect
from celmut.main import main
from tests.fakekube.server import FakeApiServer
from tests.playground.live_support import LiveCluster
from tests.playground.support import pod_policy

TEAM_LABEL = Path(__file__).resolve().parents[2] / "policies" / "examples" / "add-managed-by-label.yaml"
POSTS = pod_policy(
    "writes-a-configmap",
    'resource.Post("v1", "configmaps", "shop", {"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"),\n'
    '"metadata": dyn({"name": "written"})}).metadata.name == "" ? [] : []',
    style=">-",
)


def test_the_page_says_which_cluster_it_reads_and_lists_its_namespaces_and_objects(live: LiveCluster) -> None:
    with live.served.client() as client:
        assert client.get("/api/cluster").json() == {
            "connected": True,
            "context": "fakekube",
            "server": live.server.url,
        }
        assert "shop" in client.get("/api/cluster/namespaces").json()["namespaces"]
        listed = client.get("/api/cluster/objects", params={"namespace": "shop", "resource": "pods"}).json()
        assert listed == {"kind": "Pod", "names": ["web-1", "web-2"]}
        one = client.get("/api/cluster/load", params={"namespace": "shop", "resource": "pods", "name": "web-1"}).json()
        every = client.get("/api/cluster/load", params={"namespace": "shop", "resource": "pods"}).json()
        refused = client.get("/api/cluster/load", params={"namespace": "shop", "resource": "secrets"})
    pod = yaml.safe_load(one["yaml"])
    assert (pod["apiVersion"], pod["kind"], pod["metadata"]["name"]) == ("v1", "Pod", "web-1")
    assert "resourceVersion" not in pod["metadata"] and "managedFields" not in pod["metadata"] and "status" not in pod
    assert every["count"] == 2 and len(list(yaml.safe_load_all(every["yaml"]))) == 2
    assert refused.status_code == 502 and "not one of the kinds" in refused.json()["error"]


def test_a_run_reads_namespace_object_from_the_cluster(live: LiveCluster) -> None:
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: new, namespace: shop}\nspec: {containers: [{name: a, image: b}]}\n"
    )
    answer = live.served.post("/api/run", {"policies": TEAM_LABEL.read_text(), "resources": pod}).json()
    (admitted,) = answer["objects"]
    assert admitted["patch"] == [{"op": "add", "path": "/metadata/labels", "value": {"team": "payments"}}]


def test_a_workload_of_the_cluster_runs_as_its_pods(live: LiveCluster) -> None:
    with live.served.client() as client:
        loaded = client.get("/api/cluster/load", params={"namespace": "shop", "resource": "deployments", "name": "web"})
    state = {
        "policies": (TEAM_LABEL.parents[2] / "presets" / "spot-partial.yaml").read_text(),
        "resources": loaded.json()["yaml"],
    }
    found = live.served.post("/api/workload", {"state": state, "resource": 0}).json()
    assert found["summary"] == "2 of 5 on spot, 3 on-demand"


def test_nothing_is_written_to_the_cluster_even_when_a_policy_asks_to(live: LiveCluster) -> None:
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: new, namespace: shop}\nspec: {containers: [{name: a, image: b}]}\n"
    )
    (admitted,) = live.served.post("/api/run", {"policies": POSTS, "resources": pod}).json()["objects"]
    assert not admitted["allowed"] and "only reads the cluster" in admitted["message"]
    assert live.server.requests, "the page read nothing from the cluster"
    assert {r.method for r in live.server.requests} == {"GET"}  # every request of every test of this module
    assert live.server.store.list("configmaps", "shop") == []


def test_the_read_only_client_refuses_every_write_before_sending_it(tmp_path: Path) -> None:
    server = FakeApiServer().start()
    try:
        connection = connect(str(server.kubeconfig(tmp_path / "kubeconfig")))
        cluster = connection.cluster
        assert isinstance(cluster, ReadOnlyCluster) and connection.context == "fakekube"
        configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
        writes = [
            lambda: cluster.create("v1", "configmaps", "default", configmap),
            lambda: cluster.replace("v1", "configmaps", "default", "x", configmap),
            lambda: cluster.patch("v1", "configmaps", "default", "x", {"data": {"a": "b"}}),
            lambda: cluster.delete("v1", "configmaps", "default", "x"),
            lambda: cluster.evict("default", "x"),
            lambda: cluster.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "n"}}),
        ]
        for write in writes:
            with pytest.raises(WriteRefused, match="only reads the cluster"):
                write()
        assert not server.requests  # refused before a byte left
        assert cluster.list_all("v1", "namespaces")["items"] is not None  # reads go through
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--kubeconfig", "/nonexistent/kubeconfig"], "--kubeconfig /nonexistent/kubeconfig: no usable cluster"),
        (["--context", "prod"], "--context is read with --kubeconfig only"),
    ],
)
def test_an_unusable_kubeconfig_is_a_clear_error(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["playground", "--port", "0", *flags]) == 2
    assert message in capsys.readouterr().err
