"""The fake's graceful pod deletion, DaemonSet controller and scheduler (issue 38), each against the
Kubernetes source it models: ``pkg/registry/core/pod/strategy.go`` CheckGracefulDelete and
``staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go`` BeforeDelete; ``pkg/controller/controller_utils.go``
IsPodActive; ``pkg/controller/daemon/daemon_controller.go`` NodeShouldRunDaemonPod; the scheduler's
NodeUnschedulable, TaintToleration and NodeAffinity filters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.watch
import pytest

from tests.fakekube import FakeApiServer
from tests.fakekube.scheduling import bind
from tests.fakekube.stub_webhook import StubWebhook, configuration, rule

Obj = dict[str, Any]
SPOT_TAINT = {"key": "scheduling.cast.ai/spot", "value": "true", "effect": "NoSchedule"}
SPOT_TOLERATION = {"key": "scheduling.cast.ai/spot", "operator": "Exists", "effect": "NoSchedule"}


def node(name: str, *, spot: bool = False, unschedulable: bool = False) -> Obj:
    labels = {"kubernetes.io/hostname": name, **({"scheduling.cast.ai/spot": "true"} if spot else {})}
    spec: Obj = {"taints": [SPOT_TAINT] if spot else []}
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec}


def six_nodes(fake: FakeApiServer) -> None:
    for index in range(3):
        fake.store.create(node(f"spot-{index}", spot=True))
        fake.store.create(node(f"on-demand-{index}"))


def pod(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}], **spec},
    }


def daemonset(**template_spec: Any) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}], **template_spec},
            },
        },
    }


def nodes_with_daemon_pods(fake: FakeApiServer, *, live: bool = True) -> list[str]:
    pods = fake.store.list("pods", "default", label_selector="app=agent")
    return sorted(p["spec"].get("nodeName", "") for p in pods if not (live and p["metadata"].get("deletionTimestamp")))


# --- graceful deletion ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "options", "terminating", "grace"),
    [
        ({"nodeName": "n1"}, {}, True, 30),  # the default terminationGracePeriodSeconds
        ({"nodeName": "n1", "terminationGracePeriodSeconds": 5}, {}, True, 5),
        ({"nodeName": "n1"}, {"grace_period_seconds": 7}, True, 7),  # the request's own period wins
        ({"nodeName": "n1"}, {"grace_period_seconds": 0}, False, None),  # --force --grace-period=0
        ({}, {}, False, None),  # not bound to a node: deleted at once
    ],
    ids=["bound-default-30s", "bound-pod-grace", "bound-request-grace", "grace-0", "unbound"],
)
def test_check_graceful_delete(
    fake_apiserver: FakeApiServer, spec: Obj, options: Obj, terminating: bool, grace: int | None
) -> None:
    fake_apiserver.store.create(pod("web", **spec))
    core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
    core.delete_namespaced_pod("web", "default", **options)
    left = fake_apiserver.store.list("pods", "default")
    assert bool(left) is terminating
    if terminating:
        meta = left[0]["metadata"]
        assert meta["deletionTimestamp"] and meta["deletionGracePeriodSeconds"] == grace


def test_a_failed_pod_is_deleted_at_once_and_a_terminating_one_only_by_a_shorter_period(
    fake_apiserver: FakeApiServer,
) -> None:
    failed = pod("failed", nodeName="n1")
    fake_apiserver.store.create(failed)
    fake_apiserver.store.update_status({**failed, "status": {"phase": "Failed"}})
    fake_apiserver.store.delete("pods", "failed", "default")
    assert not fake_apiserver.store.exists("pods", "failed", "default")

    fake_apiserver.store.create(pod("web", nodeName="n1"))
    first = fake_apiserver.store.delete("pods", "web", "default", grace_period=20)
    again = fake_apiserver.store.delete("pods", "web", "default", grace_period=60)  # longer: unchanged
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    shorter = fake_apiserver.store.delete("pods", "web", "default", grace_period=3)
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 3
    assert fake_apiserver.controllers.end_grace_periods() == ["default/web"]
    assert not fake_apiserver.store.exists("pods", "web", "default")


def test_an_eviction_deletes_gracefully_and_the_watch_sees_terminating_then_deleted(
    fake_apiserver: FakeApiServer,
) -> None:
    fake_apiserver.store.create(pod("web", nodeName="n1"))
    core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
    version = str(fake_apiserver.store.resource_version)
    core.create_namespaced_pod_eviction("web", "default", {"metadata": {"name": "web", "namespace": "default"}})
    fake_apiserver.controllers.end_grace_periods()
    stream = kubernetes.watch.Watch().stream(
        core.list_namespaced_pod, "default", resource_version=version, timeout_seconds=1
    )
    seen = [(e["type"], bool(e["object"].metadata.deletion_timestamp)) for e in stream]
    assert seen == [("MODIFIED", True), ("DELETED", True)]


# --- the ReplicaSet controller counts active pods -------------------------------------------------


def test_a_terminating_pod_is_replaced_at_once(fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.store.create(node("n1"))
    apps = kubernetes.client.AppsV1Api(fake_apiserver.api_client())
    apps.create_namespaced_deployment("default", _deployment(replicas=3))
    assert fake_apiserver.controllers.settle().stable
    (victim, *_) = fake_apiserver.store.list("pods", "default")
    assert victim["spec"]["nodeName"] == "n1"  # bound by the scheduler: deleted gracefully
    fake_apiserver.store.delete("pods", victim["metadata"]["name"], "default")
    report = fake_apiserver.controllers.settle()
    pods = fake_apiserver.store.list("pods", "default")
    assert report.pods_created == 1 and len(pods) == 4  # 3 replicas + the Terminating one
    assert sum(bool(p["metadata"].get("deletionTimestamp")) for p in pods) == 1


def _deployment(replicas: int) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


# --- the DaemonSet controller decides from the template -------------------------------------------


def test_a_daemonset_runs_only_where_its_template_tolerates_the_taints(fake_apiserver: FakeApiServer) -> None:
    six_nodes(fake_apiserver)
    fake_apiserver.store.create(daemonset())
    assert fake_apiserver.controllers.settle().stable
    assert nodes_with_daemon_pods(fake_apiserver) == ["on-demand-0", "on-demand-1", "on-demand-2"]
    (created, *_) = fake_apiserver.store.list("pods", "default", label_selector="app=agent")
    terms = created["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchFields"][0]["key"] == "metadata.name"
    assert {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"} in (
        created["spec"]["tolerations"]
    )


def test_a_toleration_added_to_the_daemon_pods_only_does_not_reach_tainted_nodes(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """What celmut did before issue 38: the webhook added the spot toleration to each DaemonSet pod,
    but the controller never creates a pod for a node its template does not tolerate."""

    def tolerate(request: Obj) -> tuple[list[Obj] | None, str | None]:
        return [{"op": "add", "path": "/spec/tolerations/-", "value": SPOT_TOLERATION}], None

    six_nodes(fake_apiserver)
    with StubWebhook(tmp_path, tolerate) as stub:
        fake_apiserver.store.create(configuration("pods", stub.registration("pods.example.com", [rule(["pods"])])))
        fake_apiserver.enable_webhooks()
        fake_apiserver.store.create(daemonset())
        assert fake_apiserver.controllers.settle().stable
    assert len(nodes_with_daemon_pods(fake_apiserver)) == 3


def test_a_template_toleration_covers_every_node_and_rolls_the_old_pods(fake_apiserver: FakeApiServer) -> None:
    six_nodes(fake_apiserver)
    fake_apiserver.store.create(daemonset())
    fake_apiserver.controllers.settle()
    fake_apiserver.store.patch(
        "daemonsets.apps",
        "agent",
        {"spec": {"template": {"spec": {"tolerations": [SPOT_TOLERATION]}}}},
        namespace="default",
    )
    assert fake_apiserver.controllers.settle().stable
    # the three spot nodes get a pod; the three old ones are rolled (Terminating until their grace ends)
    assert len(nodes_with_daemon_pods(fake_apiserver)) == 3
    assert len(nodes_with_daemon_pods(fake_apiserver, live=False)) == 6
    fake_apiserver.controllers.end_grace_periods()
    assert fake_apiserver.controllers.settle().stable
    assert nodes_with_daemon_pods(fake_apiserver) == sorted(
        [*(f"spot-{i}" for i in range(3)), *(f"on-demand-{i}" for i in range(3))]
    )


# --- the scheduler --------------------------------------------------------------------------------


def test_the_scheduler_binds_by_selector_affinity_taints_and_cordons(fake_apiserver: FakeApiServer) -> None:
    six_nodes(fake_apiserver)
    fake_apiserver.store.create(node("cordoned", unschedulable=True))
    on_demand = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "scheduling.cast.ai/spot", "operator": "DoesNotExist"}]}
    ]}}}  # fmt: skip
    fake_apiserver.store.create(
        pod("spot", nodeSelector={"scheduling.cast.ai/spot": "true"}, tolerations=[SPOT_TOLERATION])
    )
    fake_apiserver.store.create(pod("untolerated", nodeSelector={"scheduling.cast.ai/spot": "true"}))
    fake_apiserver.store.create(pod("on-demand", affinity=on_demand))
    assert fake_apiserver.controllers.scheduler.schedule() == 2
    bound = {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in fake_apiserver.store.list("pods", "default")}
    assert bound["spot"].startswith("spot-") and bound["on-demand"].startswith("on-demand-")
    assert bound["untolerated"] == ""  # stays Pending
    with pytest.raises(Exception, match="already assigned"):
        bind(fake_apiserver.store, "default", "spot", "spot-1")
