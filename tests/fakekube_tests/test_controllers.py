"""The fake Deployment and ReplicaSet controllers: what kube-controller-manager creates, and the
collisionCount loop a webhook mutating ReplicaSet templates causes (pkg/controller/deployment/sync.go
getNewReplicaSet; util/deployment_util.go EqualIgnoreHash; kubernetes/kubernetes#57167)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes.client
import pytest

from tests.fakekube import FakeApiServer
from tests.fakekube.controllers import HASH_LABEL, compute_hash, equal_ignore_hash
from tests.fakekube.stub_webhook import StubWebhook, configuration, rule

Obj = dict[str, Any]


def deployment(name: str = "web", namespace: str = "default", replicas: int = 2, **labels: str) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


def test_hash_and_template_equality_follow_the_deployment_controller() -> None:
    template = deployment()["spec"]["template"]
    assert compute_hash(template, None) == compute_hash(template, None)
    assert compute_hash(template, None) != compute_hash(template, 1)  # a collision gives a new name
    hashed = {**template, "metadata": {"labels": {"app": "web", HASH_LABEL: "abc"}, "annotations": {}}}
    assert equal_ignore_hash(template, hashed)  # the hash label ignored; empty map == absent (Semantic)
    assert not equal_ignore_hash(template, {**hashed, "metadata": {"labels": {"app": "web", "x": "y"}}})


def test_a_deployment_settles_into_one_replicaset_and_its_pods(fake_apiserver: FakeApiServer) -> None:
    apps = kubernetes.client.AppsV1Api(fake_apiserver.api_client())
    created = apps.create_namespaced_deployment("default", deployment(replicas=3))
    report = fake_apiserver.controllers.settle()
    assert report.stable and report.replicasets_created == 1 and report.pods_created == 3
    (rs,) = fake_apiserver.store.list("replicasets", "default")
    pod_hash = rs["metadata"]["labels"][HASH_LABEL]
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    assert rs["metadata"]["ownerReferences"][0]["uid"] == created.metadata.uid
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", HASH_LABEL: pod_hash}
    pods = fake_apiserver.store.list("pods", "default")
    assert len(pods) == 3
    assert all(p["metadata"]["name"].startswith(f"web-{pod_hash}-") for p in pods)
    assert all(p["metadata"]["ownerReferences"][0]["name"] == rs["metadata"]["name"] for p in pods)


def test_a_rollout_creates_a_new_replicaset_and_scales_the_old_one_down(fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.store.create(deployment())
    fake_apiserver.controllers.settle()
    restarted = {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "now"}}}}}
    fake_apiserver.store.patch("deployments", "web", restarted, namespace="default")
    report = fake_apiserver.controllers.settle()
    assert report.stable and report.replicasets_created == 1
    replicas = sorted(rs["spec"]["replicas"] for rs in fake_apiserver.store.list("replicasets", "default"))
    assert replicas == [0, 2]
    assert len(fake_apiserver.store.list("pods", "default")) == 2


@pytest.mark.fakekube(webhooks=True)
def test_a_webhook_mutating_replicaset_templates_makes_the_controller_loop(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """The outage of issue 12: each new ReplicaSet's template differs from the Deployment's, so each sync
    finds a hash collision, bumps collisionCount and creates another ReplicaSet."""

    def label_templates(request: Obj) -> tuple[list[Obj] | None, str | None]:
        return [{"op": "add", "path": "/spec/template/metadata/labels/mutated", "value": "yes"}], None

    with StubWebhook(tmp_path, label_templates) as stub:
        hook = stub.registration("rs.example.io", [rule(["replicasets"], group="apps")])
        fake_apiserver.store.create(configuration("c", hook))
        fake_apiserver.store.create(deployment())
        report = fake_apiserver.controllers.settle(max_rounds=6)
    assert not report.stable and report.collisions == 3  # one collision every other sync, without end
    assert len(fake_apiserver.store.list("replicasets", "default")) == report.replicasets_created == 3
    status = fake_apiserver.store.get("deployments", "web", "default")["status"]
    assert status["collisionCount"] == report.collisions


# --- garbage collection (kubernetes pkg/controller/garbagecollector/garbagecollector.go) -------------------


def _owned(name: str, *owners: dict[str, Any], **meta: Any) -> dict[str, Any]:
    references = [{"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"], "uid": o["metadata"]["uid"]}
                  for o in owners]  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "ownerReferences": references, **meta},
    }


@pytest.mark.fakekube(garbage_collection=True)
def test_deleting_an_owner_deletes_its_dependents_keeps_those_with_another_owner(
    fake_apiserver: FakeApiServer,
) -> None:
    """attemptToDeleteItem: a dependent none of whose owners is left is deleted (background propagation);
    one with finalizers is only marked; one with a live owner loses the dangling reference."""
    store = fake_apiserver.store
    first = store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})
    second = store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "default"}})
    store.create(_owned("only-a", first))
    store.create(_owned("a-and-b", first, second))
    store.create(_owned("finalized", first, finalizers=["example.com/hold"]))
    kubernetes.client.CoreV1Api(fake_apiserver.api_client()).delete_namespaced_config_map("a", "default")
    assert not store.exists("configmaps", "only-a", "default")
    shared = store.get("configmaps", "a-and-b", "default")
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["b"]
    assert store.get("configmaps", "finalized", "default")["metadata"].get("deletionTimestamp")


def test_without_garbage_collection_dependents_stay(fake_apiserver: FakeApiServer) -> None:
    store = fake_apiserver.store
    owner = store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})
    store.create(_owned("dependent", owner))
    store.delete("configmaps", "a", "default")
    assert store.exists("configmaps", "dependent", "default")


@pytest.mark.fakekube(garbage_collection=True)
def test_an_owner_reference_of_a_type_not_served_is_not_collected(fake_apiserver: FakeApiServer) -> None:
    """garbagecollector.go isDangling: the owner's apiVersion/kind must resolve (gc.apiResource) before
    the collector can tell the owner is gone; a reference to an unserved version keeps its dependent.
    Generated MAPs name policies.kyverno.io/v1beta1, which the shipped CRDs serve (test_generator)."""
    store = fake_apiserver.store
    owner = store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})
    dependent = _owned("unverifiable", owner)
    dependent["metadata"]["ownerReferences"][0]["apiVersion"] = "v9"
    store.create(dependent)
    store.delete("configmaps", "a", "default")
    assert store.exists("configmaps", "unverifiable", "default")
