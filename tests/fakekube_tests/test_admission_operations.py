"""The fake API server's webhook matcher for DELETE, CONNECT, subresources and matchPolicy, as
kube-apiserver's: staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules/rules.go
(operations, resources with subresources) and generic/webhook.go ShouldCallHook (Equivalent: an
equivalent resource's rule matches and the request is sent as that resource, requestKind naming the one
asked for; Exact: only the request's own)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from kubernetes.client.rest import ApiException

from celmut.kube.client import Cluster, ClusterError
from tests.fakekube import FakeApiServer
from tests.fakekube.crd_builders import open_crd
from tests.fakekube.stub_webhook import StubWebhook, configuration, rule

Obj = dict[str, Any]
GADGETS: Obj = open_crd("example.com", "gadgets", "Gadget")


def allow(request: Obj) -> tuple[list[Obj] | None, str | None]:
    return None, None


def core(server: FakeApiServer) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(server.api_client())


@pytest.mark.fakekube(webhooks=True)
def test_delete_is_admitted_with_the_stored_object_as_old_object_and_can_be_denied(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake_apiserver.store.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep", "namespace": "default"}}
    )
    fake_apiserver.store.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "go", "namespace": "default"}}
    )

    def guard(request: Obj) -> tuple[list[Obj] | None, str | None]:
        return None, ("kept" if request["oldObject"]["metadata"]["name"] == "keep" else None)

    with StubWebhook(tmp_path, guard) as stub:
        hook = stub.registration("w.example.io", [rule(["configmaps"], operations=("DELETE",))])
        fake_apiserver.store.create(configuration("c", hook))
        core(fake_apiserver).delete_namespaced_config_map("go", "default")
        with pytest.raises(ApiException) as denied:
            core(fake_apiserver).delete_namespaced_config_map("keep", "default")
    assert denied.value.status == 403 and "kept" in json.loads(denied.value.body)["message"]
    assert fake_apiserver.store.exists("configmaps", "keep", "default")
    assert not fake_apiserver.store.exists("configmaps", "go", "default")
    assert [(r["operation"], r["object"], r["options"]["kind"]) for r in stub.requests] == [
        ("DELETE", None, "DeleteOptions"),
        ("DELETE", None, "DeleteOptions"),
    ]


@pytest.mark.fakekube(webhooks=True)
def test_connect_to_pods_exec_is_admitted_with_its_options(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    fake_apiserver.store.create(pod)
    with StubWebhook(tmp_path, lambda request: (None, "no exec")) as stub:
        hook = stub.registration("w.example.io", [rule(["pods/exec"], operations=("CONNECT",))])
        fake_apiserver.store.create(configuration("c", hook))
        cluster = Cluster.connect(str(fake_apiserver.kubeconfig(tmp_path / "kubeconfig")), timeout=5)
        try:
            with pytest.raises(ClusterError) as denied:
                cluster.request("POST", "/api/v1/namespaces/default/pods/p/exec", {"command": "ls", "stdout": "true"})
        finally:
            cluster.close()
    assert denied.value.status == 403 and "no exec" in str(denied.value)
    (request,) = stub.requests
    assert (request["operation"], request["subResource"]) == ("CONNECT", "exec")
    assert request["object"] == {"apiVersion": "v1", "kind": "PodExecOptions", "command": ["ls"], "stdout": True}


@pytest.mark.fakekube(webhooks=True)
@pytest.mark.parametrize(("match_policy", "called"), [("Equivalent", True), ("Exact", False)])
def test_match_policy_decides_whether_another_version_of_the_resource_matches(
    fake_apiserver: FakeApiServer, tmp_path: Path, match_policy: str, called: bool
) -> None:
    fake_apiserver.store.create(GADGETS)

    def label(request: Obj) -> tuple[list[Obj] | None, str | None]:
        return [
            {"op": "add", "path": "/metadata/labels", "value": {"seen": request["object"]["apiVersion"].split("/")[1]}}
        ], None

    with StubWebhook(tmp_path, label) as stub:
        v1_rule = rule(["gadgets"], group="example.com")
        fake_apiserver.store.create(
            configuration("c", stub.registration("w.example.io", [v1_rule], matchPolicy=match_policy))
        )
        custom = kubernetes.client.CustomObjectsApi(fake_apiserver.api_client())
        made = custom.create_namespaced_custom_object(
            "example.com",
            "v2",
            "default",
            "gadgets",
            {"apiVersion": "example.com/v2", "kind": "Gadget", "metadata": {"name": "g"}},
        )
    assert made["apiVersion"] == "example.com/v2"
    if not called:
        assert not stub.requests and "labels" not in made["metadata"]
        return
    (request,) = stub.requests
    assert request["kind"] == {"group": "example.com", "version": "v1", "kind": "Gadget"}
    assert request["requestKind"] == {"group": "example.com", "version": "v2", "kind": "Gadget"}
    assert made["metadata"]["labels"] == {"seen": "v1"}  # sent converted, stored as asked


@pytest.mark.fakekube(webhooks=True)
def test_a_subresource_rule_matches_only_that_subresource(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    with StubWebhook(tmp_path, allow) as stub:
        hook = stub.registration("w.example.io", [rule(["pods/ephemeralcontainers"], operations=("UPDATE",))])
        fake_apiserver.store.create(configuration("c", hook))
        api = core(fake_apiserver)
        api.create_namespaced_pod("default", pod)
        stored = fake_apiserver.store.get("pods", "p", "default")
        stored["metadata"]["labels"] = {"a": "b"}
        api.replace_namespaced_pod("p", "default", stored)
        assert not stub.requests  # the pod's own UPDATE is not the subresource's
        stored = fake_apiserver.store.get("pods", "p", "default")
        stored["spec"]["ephemeralContainers"] = [{"name": "d", "image": "busybox"}]
        api.patch_namespaced_pod_ephemeralcontainers(
            "p", "default", {"spec": {"ephemeralContainers": stored["spec"]["ephemeralContainers"]}}
        )
    assert [(r["operation"], r.get("subResource")) for r in stub.requests] == [("UPDATE", "ephemeralcontainers")]
