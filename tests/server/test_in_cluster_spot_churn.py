"""Issue 38 §2–3: a split holds on the pods that remain through graceful deletions, drains, quick
delete-and-replace loops, scale-ups and rollouts — the share is of **live** pods.

The ReplicaSet controller replaces a pod as soon as it stops being active (``pkg/controller/controller_utils.go``
``IsPodActive``: a ``deletionTimestamp``, or Failed/Succeeded), while the pod stays Terminating for its grace
period (``pkg/registry/core/pod/strategy.go`` ``CheckGracefulDelete``); its replacement must be decided as if
it were gone. And the replacement is decided when the webhook's pod watch may not yet have delivered the
deletion (``FakeApiServer.watches_behind``): the deciding admission reads what the API server has stored.

Six nodes, as on the real rig: three spot (labelled and tainted ``scheduling.cast.ai/spot``), three on-demand;
the fake's scheduler binds the pods, so deletions are graceful."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
import yaml

from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually

from .in_cluster import celmut_in_cluster, deployment
from .support import RunningServer
from .test_in_cluster_daemonsets import create_nodes

ROOT = Path(__file__).resolve().parents[2]
PARTIAL_SPOT = str(ROOT / "presets" / "spot-partial.yaml")  # 40 % on spot
PLACEMENT = "celmut.io/placement"

Obj = dict[str, Any]


def live(fake: FakeApiServer) -> list[Obj]:
    return [p for p in fake.store.list("pods", "shop") if not p["metadata"].get("deletionTimestamp")]


def share(fake: FakeApiServer, annotation: str = PLACEMENT) -> Counter[str]:
    """The decisions recorded on the live pods."""
    return Counter((p["metadata"].get("annotations") or {}).get(annotation, "none") for p in live(fake))


def on_spot_nodes(fake: FakeApiServer) -> list[str]:
    """Names of the live pods the scheduler bound to a spot node."""
    return [p["metadata"]["name"] for p in live(fake) if p["spec"].get("nodeName", "").startswith("spot-")]


def spot_pods(fake: FakeApiServer) -> list[str]:
    return sorted(
        p["metadata"]["name"] for p in live(fake) if (p["metadata"].get("annotations") or {}).get(PLACEMENT) == "spot"
    )


def settle(fake: FakeApiServer) -> None:
    assert fake.controllers.settle().stable


def delete_spot_pods(fake: FakeApiServer, count: int, grace: int | None = None) -> None:
    """``kubectl delete`` of ``count`` spot pods, then the ReplicaSet's replacements admitted."""
    for name in spot_pods(fake)[:count]:
        fake.store.delete("pods", name, "shop", grace_period=grace)
    settle(fake)


def finish(fake: FakeApiServer) -> None:
    """The grace periods end (the kubelets' final deletes), then the controllers settle."""
    fake.controllers.end_grace_periods()
    settle(fake)


def cache_shows(servers: list[RunningServer], name: str, *, terminating: bool) -> None:
    """Until every replica's pod cache shows the pod Terminating (or gone, ``terminating=False``)."""
    for server in servers:
        assert server.cluster is not None
        cache = server.cluster.caches.cache("v1", "pods")
        assert cache is not None

        def seen(cache: Any = cache) -> bool:
            pod = cache.get("shop", name)
            return pod is None if not terminating else pod is not None and "deletionTimestamp" in pod["metadata"]

        eventually(seen, what=f"pod {name} {'Terminating' if terminating else 'gone'} in the cache")


def caught_up(fake: FakeApiServer, servers: list[RunningServer]) -> None:
    """Until every replica's pod cache holds the pods stored now: a watch is behind by milliseconds, not
    by whole rollouts (a pod admitted, then deleted before any list or the watch showed it stored, counts
    until one does: celmut.kube.admitted_pods)."""
    names = {p["metadata"]["name"] for p in fake.store.list("pods", "shop")}
    for server in servers:
        assert server.cluster is not None
        cache = server.cluster.caches.cache("v1", "pods")
        assert cache is not None
        eventually(lambda c=cache: {p["metadata"]["name"] for p in c.items("shop")} >= names, what="the cache")


@pytest.fixture
def shop(fake_apiserver: FakeApiServer) -> FakeApiServer:
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    create_nodes(fake_apiserver)
    return fake_apiserver


def roll_out(fake: FakeApiServer, replicas: int = 10) -> None:
    kubernetes.client.AppsV1Api(fake.api_client()).create_namespaced_deployment("shop", deployment(replicas))
    settle(fake)


@pytest.mark.fakekube(webhooks=True)
def test_partial_spot_replacements_of_terminating_spot_pods_keep_the_share(shop: FakeApiServer, tmp_path: Path) -> None:
    """A spot interruption notice: two spot pods are deleted gracefully and stay Terminating for their
    grace period; the ReplicaSet replaces them at once. Counting the Terminating pods put both
    replacements on-demand: 4 -> 2 on spot once they were gone."""
    with celmut_in_cluster(shop, tmp_path, policy_paths=(PARTIAL_SPOT,)) as servers:
        roll_out(shop)
        assert share(shop) == {"spot": 4, "on-demand": 6}
        for name in spot_pods(shop)[:2]:
            shop.store.delete("pods", name, "shop")  # Terminating: bound to a node
            cache_shows(servers, name, terminating=True)  # the webhook has seen it: no race here
        settle(shop)
        assert share(shop) == {"spot": 4, "on-demand": 6}  # the replacements land the share on what remains
        finish(shop)
    assert share(shop) == {"spot": 4, "on-demand": 6}
    assert len(on_spot_nodes(shop)) == 4  # and the scheduler put exactly those on spot nodes


@pytest.mark.fakekube(webhooks=True)
def test_a_drained_spot_node_keeps_the_share(shop: FakeApiServer, tmp_path: Path) -> None:
    """``kubectl drain``: cordon, then evict every pod of the node (evictions delete gracefully)."""
    with celmut_in_cluster(shop, tmp_path, policy_paths=(PARTIAL_SPOT,)):
        roll_out(shop)
        core = kubernetes.client.CoreV1Api(shop.api_client())
        drained = max(
            ("spot-0", "spot-1", "spot-2"), key=lambda n: sum(p["spec"].get("nodeName") == n for p in live(shop))
        )
        core.patch_node(drained, {"spec": {"unschedulable": True}})
        for pod in [p for p in live(shop) if p["spec"].get("nodeName") == drained]:
            name = pod["metadata"]["name"]
            core.create_namespaced_pod_eviction(name, "shop", {"metadata": {"name": name, "namespace": "shop"}})
        settle(shop)
        finish(shop)
    assert share(shop) == {"spot": 4, "on-demand": 6}
    assert not [p for p in live(shop) if p["spec"].get("nodeName") == drained]


@pytest.mark.fakekube(webhooks=True)
@pytest.mark.parametrize("grace", [0, None], ids=["deleted", "terminating"])
def test_replacements_decided_before_the_watch_delivers_the_deletions(
    shop: FakeApiServer, tmp_path: Path, grace: int | None
) -> None:
    """``kubectl delete`` of three spot pods; the ReplicaSet's replacements reach the webhook while its pod
    watch has not delivered the deletions (read-your-writes: 7 of 20 instead of 8 on the real rig)."""
    with celmut_in_cluster(shop, tmp_path, policy_paths=(PARTIAL_SPOT,)) as servers:
        roll_out(shop, 20)
        assert share(shop) == {"spot": 8, "on-demand": 12}
        caught_up(shop, servers)
        with shop.watches_behind("pods"):
            delete_spot_pods(shop, 3, grace)
        finish(shop)
    assert share(shop) == {"spot": 8, "on-demand": 12}


@pytest.mark.fakekube(webhooks=True)
def test_a_fast_delete_and_replace_loop_keeps_the_share(shop: FakeApiServer, tmp_path: Path) -> None:
    """Delete a pod, replace it at once, again and again: spot or on-demand, with no time for the watch."""
    chooser = random.Random(38)
    with celmut_in_cluster(shop, tmp_path, policy_paths=(PARTIAL_SPOT,)):
        roll_out(shop)
        for _ in range(12):
            victim = chooser.choice(sorted(p["metadata"]["name"] for p in live(shop)))
            shop.store.delete("pods", victim, "shop", grace_period=chooser.choice([0, None]))
            settle(shop)
            assert share(shop) == {"spot": 4, "on-demand": 6}
        finish(shop)
    assert share(shop) == {"spot": 4, "on-demand": 6}


@pytest.mark.fakekube(webhooks=True)
def test_scale_up_and_rollout_while_pods_terminate(shop: FakeApiServer, tmp_path: Path) -> None:
    apps = kubernetes.client.AppsV1Api(shop.api_client())
    with celmut_in_cluster(shop, tmp_path, policy_paths=(PARTIAL_SPOT,)):
        roll_out(shop)
        for name in spot_pods(shop)[:2]:
            shop.store.delete("pods", name, "shop")
        apps.patch_namespaced_deployment_scale("web", "shop", {"spec": {"replicas": 15}})
        settle(shop)
        assert share(shop) == {"spot": 6, "on-demand": 9}
        finish(shop)
        assert share(shop) == {"spot": 6, "on-demand": 9}
        # a rollout: the new ReplicaSet's pods are split on their own while the old ones terminate
        apps.patch_namespaced_deployment("web", "shop", deployment(15, "registry.k8s.io/pause:3.9"))
        settle(shop)
        finish(shop)
    assert share(shop) == {"spot": 6, "on-demand": 9}
    assert len({p["metadata"]["labels"]["pod-template-hash"] for p in live(shop)}) == 1


@pytest.mark.fakekube(webhooks=True)
@pytest.mark.parametrize("replicas", [1, 2], ids=["one-webhook-process", "two-webhook-processes"])
def test_slow_start_bursts_and_deletions_stay_exact_when_stored_pods_are_read(
    shop: FakeApiServer, tmp_path: Path, replicas: int
) -> None:
    """Batches of 1, 2, 4, 8 … created concurrently, deletions in between, every pod watch behind: a
    decision reads the pods the API server has stored (and, in its own process, those it admitted and
    is still admitting), so one process is exact, and two are exact once each pod is stored before the
    next is decided (the ReplicaSet's batches are concurrent: see the bound in docs/presets/spot.md)."""
    shop.controllers.slow_start = replicas == 1
    with celmut_in_cluster(shop, tmp_path, replicas=replicas, policy_paths=(PARTIAL_SPOT,)) as servers:
        with shop.watches_behind("pods"):
            roll_out(shop, 20)
            assert share(shop) == {"spot": 8, "on-demand": 12}
        caught_up(shop, servers)
        with shop.watches_behind("pods"):
            delete_spot_pods(shop, 5)
            assert share(shop) == {"spot": 8, "on-demand": 12}
        finish(shop)
    assert share(shop) == {"spot": 8, "on-demand": 12}


POD_MUTATION = {
    "apiVersion": "pod-mutations.cast.ai/v1",
    "kind": "PodMutation",
    "metadata": {"name": "web-spot"},
    "spec": {
        "filterV2": {"workload": {"names": [{"type": "exact", "value": "web"}]}},
        "spotConfig": {"mode": "only-spot", "distributionPercentage": 80},
    },
}


@pytest.mark.fakekube(webhooks=True)
def test_pod_mutation_distribution_keeps_its_share_through_graceful_deletions(
    shop: FakeApiServer, tmp_path: Path
) -> None:
    """The same rule for every preset that splits: PodMutation ``distributionPercentage: 80``."""
    (tmp_path / "pm.yaml").write_text(yaml.safe_dump(POD_MUTATION))
    with celmut_in_cluster(shop, tmp_path, policy_paths=(str(tmp_path / "pm.yaml"),)) as servers:
        roll_out(shop)
        assert share(shop) == {"spot": 8, "on-demand": 2}
        caught_up(shop, servers)
        with shop.watches_behind("pods"):
            delete_spot_pods(shop, 3)
        finish(shop)
    assert share(shop) == {"spot": 8, "on-demand": 2}
