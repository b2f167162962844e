"""What the controller registers for a set of policies (:mod:`celmut.install.managed_webhooks`), after
Kyverno's webhook controller (kyverno/kyverno pkg/controllers/webhook: controller.go, validatingpolicy.go
buildWebhookRules — one webhook per failurePolicy, policies with their own timeoutSeconds or matchPolicy
Exact in "fine-grained" webhooks of their own)."""

from __future__ import annotations

import random
from typing import Any

import yaml

from celmut.compile.pipeline import compile_documents
from celmut.install.managed_webhooks import plan
from celmut.install.webhook_config import WebhookSettings
from celmut.sources.documents import Document

Obj = dict[str, Any]
SETTINGS = WebhookSettings(service=("celmut", "celmut"), own_namespace="celmut")


def policy(name: str, resources: list[str], operations: list[str], **spec: Any) -> Obj:
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": operations, "resources": resources}
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": name},
        "spec": {
            "autogen": {"podControllers": {"controllers": []}},
            "matchConstraints": {"resourceRules": [rule], **spec.pop("match", {})},
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}],
            **spec,
        },
    }


def compiled(*documents: Obj) -> list[Any]:
    compilation = compile_documents([Document("p.yaml", i, d) for i, d in enumerate(documents)])
    assert not compilation.errors, compilation.errors
    return list(compilation.compiled.policies)


def webhooks(*documents: Obj, served: Any = None) -> dict[str, Obj]:
    """The webhooks with rules (the two default ones are always there, with none when nothing needs them)."""
    found = plan(compiled(*documents), SETTINGS, served=served).configuration["webhooks"]
    return {w["name"]: w for w in found if w["rules"]}


def test_groups_per_failure_policy_and_timeout_each_on_its_own_path() -> None:
    found = webhooks(
        policy("a", ["configmaps"], ["UPDATE"]),
        policy("b", ["services"], ["DELETE"], failurePolicy="Ignore"),
        policy("c", ["secrets"], ["CREATE"], webhookConfiguration={"timeoutSeconds": 3}),
        policy("d", ["pods/ephemeralcontainers"], ["UPDATE"], webhookConfiguration={"timeoutSeconds": 3}),
    )
    assert list(found) == ["fail.mutate.celmut.io", "fail-timeout-3.mutate.celmut.io", "ignore.mutate.celmut.io"]
    timed = found["fail-timeout-3.mutate.celmut.io"]
    assert timed["timeoutSeconds"] == 3 and timed["clientConfig"]["service"]["path"] == "/mutate/fail/timeout-3"
    assert {r for rule in timed["rules"] for r in rule["resources"]} == {"secrets", "pods/ephemeralcontainers"}
    assert found["fail.mutate.celmut.io"]["timeoutSeconds"] == 10
    assert found["ignore.mutate.celmut.io"]["rules"][0]["operations"] == ["DELETE"]
    assert {w["matchPolicy"] for w in found.values()} == {"Equivalent"}
    assert (found["fail.mutate.celmut.io"]["failurePolicy"], found["ignore.mutate.celmut.io"]["failurePolicy"]) == (
        "Ignore",  # the chart's webhook.failurePolicy for the webhooks serving Fail policies
        "Ignore",
    )


def test_match_policy_exact_gets_its_own_exact_webhook() -> None:
    found = webhooks(policy("a", ["configmaps"], ["CREATE"], match={"matchPolicy": "Exact"}))
    assert (
        list(found) == ["fail-exact.mutate.celmut.io"]
        and found["fail-exact.mutate.celmut.io"]["matchPolicy"] == "Exact"
    )


def test_selectors_are_kept_only_when_every_policy_of_the_group_shares_them_and_exclusions_always() -> None:
    team = {"namespaceSelector": {"matchLabels": {"team": "a"}}, "objectSelector": {"matchLabels": {"app": "x"}}}
    shared = webhooks(
        policy("a", ["configmaps"], ["CREATE"], match=team), policy("b", ["secrets"], ["CREATE"], match=team)
    )
    webhook = shared["fail.mutate.celmut.io"]
    assert webhook["namespaceSelector"] == {
        "matchLabels": {"team": "a"},
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["celmut", "kube-system"]}
        ],
    }
    assert webhook["objectSelector"] == {
        "matchLabels": {"app": "x"},
        "matchExpressions": [{"key": "celmut.io/ignore", "operator": "DoesNotExist"}],
    }
    mixed = webhooks(policy("a", ["configmaps"], ["CREATE"], match=team), policy("b", ["secrets"], ["CREATE"]))
    webhook = mixed["fail.mutate.celmut.io"]
    assert "matchLabels" not in webhook["namespaceSelector"] and "matchLabels" not in webhook["objectSelector"]
    assert webhook["namespaceSelector"]["matchExpressions"][0]["values"] == ["celmut", "kube-system"]


def test_the_same_policies_in_any_order_give_the_same_object() -> None:
    documents = [policy(f"p{i}", [r], ["CREATE"]) for i, r in enumerate(["pods", "secrets", "configmaps", "pods"])]
    first = plan(compiled(*documents), SETTINGS).configuration
    for seed in range(5):
        shuffled = list(documents)
        random.Random(seed).shuffle(shuffled)
        assert yaml.safe_dump(plan(compiled(*shuffled), SETTINGS).configuration) == yaml.safe_dump(first)
    assert len(first["webhooks"][0]["rules"]) == 3  # de-duplicated


def test_a_resource_not_served_is_left_out_and_reported_never_widened() -> None:
    served = {("", "v1", "configmaps")}
    result = plan(
        compiled(policy("a", ["configmaps", "gizmos"], ["CREATE"]), policy("b", ["gizmos"], ["CREATE"])),
        SETTINGS,
        served=lambda g, v, r: (g, v, r) in served,
    )
    (webhook,) = [w for w in result.configuration["webhooks"] if w["rules"]]
    assert [r["resources"] for r in webhook["rules"]] == [["configmaps"]]
    assert [(u.name, u.resources) for u in result.unregistered] == [("a", ("v1/gizmos",)), ("b", ("v1/gizmos",))]
    assert "v1/gizmos not served" in result.unregistered[0].message


def test_autogen_targets_are_registered_but_never_replicasets() -> None:
    pods = policy("a", ["pods"], ["CREATE"])
    del pods["spec"]["autogen"]
    rules = webhooks(pods)["fail.mutate.celmut.io"]["rules"]
    resources = {r for rule in rules for r in rule["resources"]}
    assert {"pods", "deployments", "cronjobs"} <= resources and "replicasets" not in resources


def test_background_only_policies_register_nothing() -> None:
    """kyverno pkg/controllers/webhook/mpol_test.go TestGetMutatingPoliciesExcludesAdmissionDisabled
    (kyverno#16090): an admission-disabled MutatingPolicy is never registered, mutateExisting or not."""
    only = policy(
        "a",
        ["configmaps"],
        ["CREATE"],
        evaluation={"admission": {"enabled": False}, "mutateExisting": {"enabled": True}},
    )
    found = plan(compiled(only), SETTINGS).configuration["webhooks"]
    assert [(w["name"], w["rules"]) for w in found] == [("fail.mutate.celmut.io", []), ("ignore.mutate.celmut.io", [])]
    assert found[0]["namespaceSelector"]["matchExpressions"][0]["values"] == ["celmut", "kube-system"]  # MAPs copy it


PODMUTATION = {
    "apiVersion": "pod-mutations.cast.ai/v1",
    "kind": "PodMutation",
    "metadata": {"name": "team-labels"},
    "spec": {
        "filter": {"workload": {"namespaces": ["shop"]}},
        "patches": [{"op": "add", "path": "/metadata/labels/team", "value": "shop"}],
    },
}


def test_presets_are_served_by_the_webhook_whose_call_failure_policy_the_chart_sets() -> None:
    """Issue 27 item 4, as CAST AI's chart: webhook.failurePolicy Fail makes a failed call reject the pods the
    presets mutate (the presets compile with that failurePolicy, so the webhook serving them fails closed);
    the default Ignore leaves them where they were."""
    strict = WebhookSettings(service=("celmut", "celmut"), own_namespace="celmut", failure_policy="Fail")
    for chart, webhook, call in (
        ("Fail", "fail.mutate.celmut.io", "Fail"),
        (None, "ignore.mutate.celmut.io", "Ignore"),
    ):
        compilation = compile_documents([Document("pm.yaml", 0, PODMUTATION)], preset_failure_policy=chart)
        assert not compilation.errors
        (found,) = [w for w in plan(compilation.compiled.policies, strict).configuration["webhooks"] if w["rules"]]
        assert (found["name"], found["failurePolicy"]) == (webhook, call)
        assert {r for rule in found["rules"] for r in rule["resources"]} >= {"pods"}
