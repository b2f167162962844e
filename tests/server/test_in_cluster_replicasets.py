"""Issue 12 §1: celmut in a cluster with a deployment controller must not make it create ReplicaSets
without end (pkg/controller/deployment/sync.go getNewReplicaSet: a ReplicaSet whose stored template
differs from its Deployment's is a hash collision; kubernetes/kubernetes#57167), and the opt-out label on
a Deployment must reach its Pods through their owners."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes.client
import pytest

from celmut.install.manifests import InstallOptions, webhook_configuration
from celmut.install.webhook_config import DEFAULT_RULES
from tests.fakekube import FakeApiServer
from tests.kube.conftest import pods_create

from .in_cluster import celmut_in_cluster, wait_for_policies

Obj = dict[str, Any]

# pods CREATE, default autogen (every pod controller), an ApplyConfiguration: the policy of the report
# (which added a label; a pod-spec field here, as Kyverno's autogen leaves nested `Object.metadata` type
# names unrewritten — pkg/cel/policies/mpol/autogen — so a metadata ApplyConfiguration fails on controllers).
GRACE = "Object{spec: Object.spec{terminationGracePeriodSeconds: 5}}"
GRACE_PODS = {
    "apiVersion": "policies.kyverno.io/v1",
    "kind": "MutatingPolicy",
    "metadata": {"name": "grace"},
    "spec": {
        "matchConstraints": pods_create(),
        "mutations": [
            {
                "patchType": "ApplyConfiguration",
                "applyConfiguration": {"expression": GRACE},
            }
        ],
    },
}
# What older installs (and users' own rules) registered: ReplicaSets too.
WITH_REPLICASETS = [
    *DEFAULT_RULES,
    {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["replicasets"]},
]


def deployment(name: str = "web", namespace: str = "shop", labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


def rollout_restart(fake: FakeApiServer, name: str, namespace: str) -> None:
    """`kubectl rollout restart`: a strategic merge patch of the template's restartedAt annotation."""
    apps = kubernetes.client.AppsV1Api(fake.api_client())
    restarted = {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "now"}}}}}
    apps.patch_namespaced_deployment(name, namespace, restarted)


@pytest.mark.fakekube(webhooks=True)
@pytest.mark.parametrize(
    "rules",
    [
        pytest.param(None, id="the-shipped-registration"),
        pytest.param(WITH_REPLICASETS, id="a-registration-that-still-sends-replicasets"),
    ],
)
def test_a_rollout_restart_settles_with_one_new_replicaset(
    fake_apiserver: FakeApiServer, tmp_path: Path, rules: list[Obj] | None
) -> None:
    """The report's reproduction: create the Deployment, apply the policy, `rollout restart`."""
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    configuration = webhook_configuration(InstallOptions(rules=rules)) if rules is not None else None
    with celmut_in_cluster(fake_apiserver, tmp_path, configuration=configuration) as servers:
        apps = kubernetes.client.AppsV1Api(fake_apiserver.api_client())
        apps.create_namespaced_deployment("shop", deployment())
        assert fake_apiserver.controllers.settle().stable
        fake_apiserver.store.create(GRACE_PODS)
        wait_for_policies(servers, "grace")
        rollout_restart(fake_apiserver, "web", "shop")
        report = fake_apiserver.controllers.settle(max_rounds=10)
    assert report.stable, f"the deployment controller kept creating ReplicaSets: {report}"
    assert report.collisions == 0 and report.replicasets_created == 1
    assert len(fake_apiserver.store.list("replicasets", "shop")) == 2
    assert "collisionCount" not in (fake_apiserver.store.get("deployments", "web", "shop").get("status") or {})
    pods = fake_apiserver.store.list("pods", "shop")
    assert len(pods) == 2 and all(p["spec"]["terminationGracePeriodSeconds"] == 5 for p in pods)


@pytest.mark.fakekube(webhooks=True)
def test_pods_of_a_deployment_labelled_with_the_opt_out_label_are_left_alone(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """The objectSelector sees only the object itself; the Deployment's label is on neither its ReplicaSets
    nor its Pods, so celmut follows the Pod's owners (ReplicaSet → Deployment) to honour it."""
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    with celmut_in_cluster(fake_apiserver, tmp_path) as servers:
        fake_apiserver.store.create(GRACE_PODS)
        wait_for_policies(servers, "grace")
        apps = kubernetes.client.AppsV1Api(fake_apiserver.api_client())
        apps.create_namespaced_deployment("shop", deployment("quiet", labels={"celmut.io/ignore": "true"}))
        apps.create_namespaced_deployment("shop", deployment("busy"))
        assert fake_apiserver.controllers.settle().stable
    pods = {p["metadata"]["labels"]["app"]: p for p in fake_apiserver.store.list("pods", "shop")}
    assert "terminationGracePeriodSeconds" not in pods["quiet"]["spec"]
    assert pods["busy"]["spec"]["terminationGracePeriodSeconds"] == 5
    quiet = fake_apiserver.store.get("deployments", "quiet", "shop")
    assert "terminationGracePeriodSeconds" not in quiet["spec"]["template"]["spec"]  # the objectSelector
