"""Issue 20: celmut's real webhook in the fake API server's admission chain, next to "Kyverno" — a stub
webhook registered as Kyverno registers its MutatingPolicy webhooks (label webhook.kyverno.io/managed-by,
path /mpol/<policy>, pkg/controllers/webhook) that applies the policy Kyverno owns. Each policy is
applied once, by its owner: a MutatingPolicy celmut does not select is never applied by celmut."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes.client
import pytest

from tests.fakekube import FakeApiServer
from tests.fakekube.stub_webhook import StubWebhook, configuration, rule
from tests.kube.crds import crds_next_to_kyverno, policy_crds

from .in_cluster import app_pod, celmut_in_cluster, wait_for_policies

Obj = dict[str, Any]
PODS = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]
APPEND_TOLERATION = (  # not idempotent: applied twice, the pod gets two tolerations
    'has(object.spec.tolerations) ? [JSONPatch{op: "add", path: "/spec/tolerations/-", '
    'value: Object.spec.tolerations{key: "spot", operator: "Exists"}}] : [JSONPatch{op: "add", '
    'path: "/spec/tolerations", value: [Object.spec.tolerations{key: "spot", operator: "Exists"}]}]'
)
TOLERATION = {"key": "spot", "operator": "Exists"}


def mutating_policy(name: str, expression: str, **labels: str) -> Obj:
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "autogen": {"podControllers": {"controllers": []}},
            "matchConstraints": {"resourceRules": PODS},
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}],
        },
    }


LABEL = '[JSONPatch{op: "add", path: "/metadata/labels/celmut", value: "yes"}]'


def kyverno_applying_its_policy(request: Obj) -> tuple[list[Obj] | None, str | None]:
    """What Kyverno does with the policy it owns (spot-toleration) on a pod CREATE."""
    tolerations = request["object"]["spec"].get("tolerations")
    if tolerations is None:
        return [{"op": "add", "path": "/spec/tolerations", "value": [TOLERATION]}], None
    return [{"op": "add", "path": "/spec/tolerations/-", "value": TOLERATION}], None


@pytest.mark.fakekube(webhooks=True)
def test_next_to_kyverno_each_policy_is_applied_once_by_its_owner(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    for definition in crds_next_to_kyverno():  # Kyverno came first
        fake_apiserver.store.create(definition)
    fake_apiserver.store.create(mutating_policy("spot-toleration", APPEND_TOLERATION))  # Kyverno's
    fake_apiserver.store.create(mutating_policy("label", LABEL, **{"celmut.io/owner": "celmut"}))
    with StubWebhook(tmp_path / "kyverno", kyverno_applying_its_policy) as kyverno:
        registration = kyverno.registration(
            "mpol.mutate.kyverno.svc-fail-finegrained-spot-toleration",
            [rule(["pods"])],
            clientConfig={"url": f"{kyverno.url}/mpol/spot-toleration", "caBundle": kyverno.ca_bundle},
        )
        kyverno_configuration = configuration("kyverno-resource-mutating-webhook-cfg", registration)
        kyverno_configuration["metadata"]["labels"] = {"webhook.kyverno.io/managed-by": "kyverno"}
        fake_apiserver.store.create(kyverno_configuration)
        with celmut_in_cluster(fake_apiserver, tmp_path) as servers:
            wait_for_policies(servers, "label")
            core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
            core.create_namespaced_pod("default", app_pod("p"))
            engine = servers[0].store.engine
        assert len(kyverno.requests) == 1
    stored = fake_apiserver.store.get("pods", "p", "default")
    assert stored["metadata"]["labels"]["celmut"] == "yes"  # celmut's policy, by celmut
    assert stored["spec"]["tolerations"] == [TOLERATION]  # Kyverno's policy, once: not again by celmut
    assert engine is not None and {p.name for p in engine.policies} == {"label"}


@pytest.mark.fakekube(webhooks=True)
def test_a_policy_the_selector_leaves_out_is_not_applied(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """`--policy-selector team=platform`, no Kyverno at all: only the selected policy mutates."""
    for definition in policy_crds():
        fake_apiserver.store.create(definition)
    fake_apiserver.store.create(mutating_policy("spot-toleration", APPEND_TOLERATION, team="data"))
    fake_apiserver.store.create(mutating_policy("label", LABEL, team="platform"))
    with celmut_in_cluster(fake_apiserver, tmp_path, policy_selector="team=platform") as servers:
        wait_for_policies(servers, "label")
        core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
        core.create_namespaced_pod("default", app_pod("p"))
    stored = fake_apiserver.store.get("pods", "p", "default")
    assert stored["metadata"]["labels"]["celmut"] == "yes"
    assert "tolerations" not in stored["spec"]
