"""Issue 38 §1: under allSpot every node, spot or on-demand, runs its DaemonSet pod.

The DaemonSet controller decides which nodes get a daemon pod from the DaemonSet's template
(``pkg/controller/daemon/daemon_controller.go`` ``NodeShouldRunDaemonPod`` runs the taint check on
``spec.template``), so the spot toleration must be on the template: the webhook adds it on DaemonSet
CREATE/UPDATE (``spot-all-daemonsets``), the controller on DaemonSets that existed before (mutateExisting).
Six nodes as the real rig has them: three spot (labelled and tainted ``scheduling.cast.ai/spot``), three
on-demand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes.client
import pytest

from tests.controller.support import running
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually

from .in_cluster import celmut_in_cluster

ROOT = Path(__file__).resolve().parents[2]
ALL_SPOT = str(ROOT / "presets" / "spot-all.yaml")
SPOT = "scheduling.cast.ai/spot"
NODES = [*(f"spot-{i}" for i in range(3)), *(f"on-demand-{i}" for i in range(3))]

Obj = dict[str, Any]


def create_nodes(fake: FakeApiServer) -> None:
    for name in NODES:
        spot = name.startswith("spot-")
        fake.store.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {"kubernetes.io/hostname": name, **({SPOT: "true"} if spot else {})},
                },
                "spec": {"taints": [{"key": SPOT, "value": "true", "effect": "NoSchedule"}] if spot else []},
            }
        )


def daemonset(name: str = "node-exporter") -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "monitoring"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "exporter", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


def nodes_running(fake: FakeApiServer, name: str = "node-exporter") -> list[str]:
    """The nodes a live pod of the DaemonSet is bound to."""
    pods = fake.store.list("pods", "monitoring", label_selector=f"app={name}")
    return sorted(p["spec"].get("nodeName", "") for p in pods if not p["metadata"].get("deletionTimestamp"))


@pytest.fixture
def cluster_with_nodes(fake_apiserver: FakeApiServer) -> FakeApiServer:
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}})
    create_nodes(fake_apiserver)
    return fake_apiserver


@pytest.mark.fakekube(webhooks=True)
def test_all_spot_daemonset_pods_run_on_every_spot_and_on_demand_node(
    cluster_with_nodes: FakeApiServer, tmp_path: Path
) -> None:
    fake = cluster_with_nodes
    with celmut_in_cluster(fake, tmp_path, policy_paths=(ALL_SPOT,)):
        kubernetes.client.AppsV1Api(fake.api_client()).create_namespaced_daemon_set("monitoring", daemonset())
        assert fake.controllers.settle().stable
    assert nodes_running(fake) == sorted(NODES)
    template = fake.store.get("daemonsets.apps", "node-exporter", "monitoring")["spec"]["template"]["spec"]
    assert template["tolerations"] == [{"key": SPOT, "operator": "Exists", "effect": "NoSchedule"}]


@pytest.mark.fakekube(webhooks=True)
def test_existing_daemonsets_are_picked_up_by_the_controller_and_rolled_once(
    cluster_with_nodes: FakeApiServer, tmp_path: Path
) -> None:
    """A DaemonSet created before celmut: 3 of 6 nodes. The controller's mutateExisting pass adds the
    toleration to its template (through the webhook, as every write): the DaemonSet controller rolls
    its three pods once and adds the three spot nodes."""
    fake = cluster_with_nodes
    fake.store.create(daemonset())
    assert fake.controllers.settle().stable
    assert nodes_running(fake) == sorted(n for n in NODES if n.startswith("on-demand-"))
    before = {p["metadata"]["name"] for p in fake.store.list("pods", "monitoring")}
    with celmut_in_cluster(fake, tmp_path, policy_paths=(ALL_SPOT,)):
        with running(fake, tmp_path, Path(ALL_SPOT)):

            def tolerated() -> bool:
                spec = fake.store.get("daemonsets.apps", "node-exporter", "monitoring")["spec"]["template"]["spec"]
                return bool(spec.get("tolerations"))

            eventually(tolerated, what="the controller to patch the existing DaemonSet")
        assert fake.controllers.settle().stable
        fake.controllers.end_grace_periods()  # the rolled pods' kubelets finish them
        assert fake.controllers.settle().stable
    assert nodes_running(fake) == sorted(NODES)
    after = {p["metadata"]["name"] for p in fake.store.list("pods", "monitoring")}
    assert not before & after  # every daemon pod was replaced once: the rollout docs/presets/spot.md describes
