"""Replacing drifted pods: only for restartPolicy immediate, through the Eviction API, paced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celmut.policy.mutating_policy import RESTART_POLICY_ANNOTATION
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually
from tests.waiting import HANG_SECONDS

from .support import RULE_PODS, policy, running, write_policies

SPOT = (
    '[JSONPatch{op: "add", path: "/metadata/labels/placed", value: "spot"}, '
    'JSONPatch{op: "add", path: "/spec/nodeSelector", value: {"scheduling.cast.ai/spot": "true"}}]'
)


def drift_policy(restart: str) -> dict[str, Any]:
    return policy(
        "spot-placement",
        SPOT,
        rule=RULE_PODS,
        admission=True,
        mutate_existing=False,
        conditions=["!has(object.spec.nodeSelector)"],
        annotations={RESTART_POLICY_ANNOTATION: restart},
    )


def replica(name: str, owner: str | None = "web-1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": {"app": "web"}}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": "u-1", "controller": True}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }


def pod_or_none(server: FakeApiServer, name: str) -> dict[str, Any] | None:
    found = [p for p in server.store.list("pods", "default") if p["metadata"]["name"] == name]
    return found[0] if found else None


def test_immediate_evicts_one_pod_per_workload_and_patches_what_it_can(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    for name in ("web-a", "web-b"):
        fake_apiserver.store.create(replica(name))
    fake_apiserver.store.create(replica("bare", owner=None))
    policies = write_policies(tmp_path / "policies", drift_policy("immediate"))
    with running(fake_apiserver, tmp_path, policies, recheck_seconds=0.1, allow_immediate_restart=True) as controller:
        eventually(lambda: len(fake_apiserver.requests_matching("POST", r"/eviction$")) == 1, what="one eviction")
        # the fake API server logs a request before it acts on it: wait for the pod to be gone
        eventually(lambda: any(pod_or_none(fake_apiserver, n) is None for n in ("web-a", "web-b")), what="its pod")
        evicted = [n for n in ("web-a", "web-b") if pod_or_none(fake_apiserver, n) is None]
        assert len(evicted) == 1  # the second pod of the workload waits for the first one's replacement
        other = next(n for n in ("web-a", "web-b") if n not in evicted)

        def outcome_of(name: str) -> str:
            return next((o.action for o in controller.report.outcomes() if o.key.name == name), "")

        eventually(lambda: outcome_of(other) == "waiting", what="the other pod to wait for the replacement")
        eventually(lambda: outcome_of("bare") == "patched", what="the bare pod's live patch")
        bare = pod_or_none(fake_apiserver, "bare")
        assert bare is not None and bare["metadata"]["labels"]["placed"] == "spot"  # the live-patchable part
        assert "nodeSelector" not in bare["spec"]  # no owner to recreate it: never evicted

        def events() -> list[tuple[str, str]]:
            return [(e["involvedObject"]["name"], e["reason"]) for e in fake_apiserver.store.list("events", "default")]

        # an eviction is always an Event on the pod; what was patched is a PolicyApplied, which the default
        # --omitEvents (Kyverno's chart: PolicyApplied, PolicySkipped) leaves out
        eventually(lambda: {r for n, r in events() if n == evicted[0]} == {"Evicted"}, what="the Evicted Event")
        assert controller.events is not None
        eventually(lambda: controller.events.pending() == 0, what="the Events written")  # type: ignore[union-attr]
        assert [reason for _, reason in events() if reason != "Evicted"] == []

        replacement = replica("web-c")  # the ReplicaSet's new pod becomes Ready: the next one may go
        replacement["spec"]["nodeSelector"] = {"scheduling.cast.ai/spot": "true"}
        created = fake_apiserver.store.create(replacement)
        created["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        fake_apiserver.store.update_status(created)
        eventually(
            lambda: len(fake_apiserver.requests_matching("POST", r"/eviction$")) == 2,
            what="the second eviction",
        )


def test_a_pod_disruption_budget_refusal_is_respected(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    fake_apiserver.store.create(replica("web-a"))
    fake_apiserver.store.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        }
    )
    policies = write_policies(tmp_path / "policies", drift_policy("immediate"))
    with running(fake_apiserver, tmp_path, policies, allow_immediate_restart=True) as controller:
        eventually(lambda: any(o.action == "refused" for o in controller.report.outcomes()), what="a refused eviction")
        assert pod_or_none(fake_apiserver, "web-a") is not None
        refused = controller.report.outcomes()[0]
        assert "PodDisruptionBudget" in refused.message and refused.retry_after is not None
        assert controller.metrics.evictions.labels("refused")._value.get() >= 1


def test_deferred_leaves_running_pods_alone(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    fake_apiserver.store.create(replica("web-a"))
    policies = write_policies(tmp_path / "policies", drift_policy("deferred"))
    with running(fake_apiserver, tmp_path, policies) as controller:
        assert controller.wait_idle(HANG_SECONDS)
        assert not fake_apiserver.requests_matching("POST", r"/eviction$")
        assert not fake_apiserver.requests_matching("PATCH", r"/pods/")
        assert "placed" not in pod_or_none(fake_apiserver, "web-a")["metadata"]["labels"]  # type: ignore[index]
