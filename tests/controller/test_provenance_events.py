"""The controller's voice on provenance (issue 18): with PolicyApplied posted (``--omitEvents`` without it),
an Event for each policy that changed a target (on the target, for a policy read from a file) naming the
policy, the mutation and the fields, and ``celmut_mutations_total`` by policy and outcome — a pod touched by four
mutateExisting policies (one applies, one is skipped by a targetMatchCondition, one by a
PolicyException, one fails under failurePolicy Ignore), against the fake API server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celmut.controller.reconcile import Change, Outcome, TargetKey
from celmut.controller.status import ControllerMetrics
from tests.fakekube import FakeApiServer
from tests.waiting import HANG_SECONDS, eventually

from .support import RULE_PODS, configmap, policy, running, write_policies

MUTATE_EXISTING = {"admission": {"enabled": False}, "mutateExisting": {"enabled": True}}


def existing_policy(name: str, *expressions: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "evaluation": MUTATE_EXISTING,
        "autogen": {"podControllers": {"controllers": []}},
        "matchConstraints": {"resourceRules": [RULE_PODS]},
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": e}} for e in expressions],
        **spec,
    }
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": name}, "spec": body}


POLICIES = [
    existing_policy(
        "add-team",
        '[JSONPatch{op: "add", path: "/metadata/labels/team", value: "payments"}]',
        '[JSONPatch{op: "add", path: "/metadata/annotations", value: {"owner": "payments"}}]',
    ),
    existing_policy(
        "prod-only",
        '[JSONPatch{op: "add", path: "/metadata/labels/env", value: "prod"}]',
        targetMatchConditions=[{"name": "is-prod", "expression": 'object.metadata.namespace == "prod"'}],
    ),
    existing_policy("tier-label", '[JSONPatch{op: "add", path: "/metadata/labels/tier", value: "web"}]'),
    existing_policy(
        "flaky",
        '[JSONPatch{op: "add", path: "/metadata/labels/cost", value: object.metadata.labels.missing}]',
        failurePolicy="Ignore",
    ),
    {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "PolicyException",
        "metadata": {"name": "skip-web", "namespace": "shop"},
        "spec": {
            "policyRefs": [{"name": "tier-label", "kind": "MutatingPolicy"}],
            "matchConditions": [{"name": "web", "expression": 'object.metadata.name == "web"'}],
        },
    },
]


def pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
    }


def test_the_event_names_the_policy_its_mutations_and_the_fields(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    fake_apiserver.store.create(pod())
    policies = write_policies(tmp_path / "policies", *POLICIES)
    with running(fake_apiserver, tmp_path, policies, omit_events=frozenset()) as controller:

        def applied() -> list[dict[str, Any]]:
            return [e for e in fake_apiserver.store.list("events", "shop") if e["reason"] == "PolicyApplied"]

        eventually(applied, what="the Event about the pod")
        assert controller.wait_idle(HANG_SECONDS)
        (event,) = applied()
        assert (event["involvedObject"]["name"], event["type"], event["action"]) == (
            "web",
            "Normal",
            "Resource Mutated",
        )
        assert event["message"] == (
            "Pod shop/web is successfully mutated: add-team spec.mutations[0]: add /metadata/labels/team; "
            "add-team spec.mutations[1]: add /metadata/annotations"
        )
        # the policy that failed (failurePolicy Ignore) is a PolicyViolation on the pod, status error, as
        # Kyverno's GenerateEvents posts it (a file's policy is no object: no Event on the policy)
        eventually(lambda: [e for e in fake_apiserver.store.list("events", "shop") if e["reason"] == "PolicyViolation"])
        (violation,) = (e for e in fake_apiserver.store.list("events", "shop") if e["reason"] == "PolicyViolation")
        assert violation["message"].startswith("policy flaky/ error: ") and violation["type"] == "Warning"
        labels = fake_apiserver.store.get("pods", "web", "shop")["metadata"]["labels"]
        assert labels == {"app": "web", "team": "payments"}  # prod-only, tier-label and flaky did not apply
        counted = controller.metrics.mutations
        assert counted.labels("add-team", "applied")._value.get() == 1
        assert counted.labels("flaky", "error")._value.get() == 1
        rendered = controller.metrics.render().decode()
        assert 'celmut_mutations_total{outcome="applied",policy="add-team"} 1.0' in rendered
        assert 'policy="tier-label"' not in rendered and 'policy="prod-only"' not in rendered


def test_a_long_change_stays_within_the_event_message_limit(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """An Event message is at most 1024 characters (``celmut/kube/events.py``): the fields that do not
    fit are counted rather than cut mid-pointer."""
    fake_apiserver.store.create(configmap("settings", team="a"))
    ops = ", ".join(f'JSONPatch{{op: "add", path: "/metadata/labels/label-{i:03d}", value: "x"}}' for i in range(120))
    policies = write_policies(tmp_path / "policies", policy("many-labels", f"[{ops}]"))
    with running(fake_apiserver, tmp_path, policies, omit_events=frozenset()):
        eventually(lambda: fake_apiserver.store.list("events", "default"), what="the Event about the ConfigMap")
        (event,) = fake_apiserver.store.list("events", "default")
    message = event["message"]
    assert len(message) <= 1024
    assert message.startswith("ConfigMap default/settings is successfully mutated: many-labels spec.mutations[0]: add ")
    shown = message.count("/metadata/labels/label-")
    assert 20 < shown < 120 and message.endswith(f"… and {120 - shown} more fields")


def test_dry_run_outcomes_are_counted_apart_from_writes() -> None:
    metrics = ControllerMetrics()
    key = TargetKey("v1", "pods", "shop", "web")
    change = Change("add-team", "spec.mutations[0]", [{"op": "add", "path": "/metadata/labels/team", "value": "a"}])
    metrics.observe(Outcome(key, "would-patch", changes=[change, change]))
    metrics.observe(Outcome(key, "patched", changes=[change], failed=["flaky"]))
    assert metrics.mutations.labels("add-team", "would-patch")._value.get() == 1  # once per target, not per mutation
    assert metrics.mutations.labels("add-team", "applied")._value.get() == 1
    assert metrics.mutations.labels("flaky", "error")._value.get() == 1
