"""Issue 20: celmut next to Kyverno. Only the MutatingPolicies celmut owns are compiled and reported on;
the others get no status and no Event from celmut (Kyverno writes conditionStatus.ready on every policy,
kyverno/api MutatingPolicyStatus), and who owns what follows Kyverno's arrival and departure."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest

from celmut.kube.client import Cluster
from celmut.kube.policy_source import CONDITION_TYPE, ClusterPolicySource
from celmut.policy.selection import OWNER_LABEL, PolicySelection
from celmut.service.assembly import EngineSettings
from celmut.service.store import PolicyStore
from tests.fakekube import FakeApiServer
from tests.waiting import HANG_SECONDS

from .conftest import eventually, label_policy, policy_documents
from .crds import crds_next_to_kyverno, kyvernos_webhooks

Obj = dict[str, Any]
MPOL = "mutatingpolicies.policies.kyverno.io"


def owned(policy: Obj) -> Obj:
    policy["metadata"]["labels"] = {OWNER_LABEL: "celmut"}
    return policy


def served(store: PolicyStore) -> set[str]:
    store.reload()
    assert store.engine is not None
    return {p.name for p in store.engine.policies}


def status_of(fake: FakeApiServer, name: str) -> Obj:
    return fake.store.get(MPOL, name).get("status") or {}


@pytest.fixture
def next_to_kyverno(fake_apiserver: FakeApiServer) -> FakeApiServer:
    """The policy CRDs, Kyverno's kinds as Kyverno installed them (Kyverno came first)."""
    for definition in crds_next_to_kyverno():
        fake_apiserver.store.create(definition)
    return fake_apiserver


def test_next_to_kyverno_only_policies_labelled_for_celmut_are_served(
    next_to_kyverno: FakeApiServer, source: ClusterPolicySource
) -> None:
    next_to_kyverno.store.create(label_policy("kyvernos"))
    next_to_kyverno.store.create(owned(label_policy("celmuts")))
    eventually(lambda: len(source.objects_of("MutatingPolicy")) == 2, what="both policies watched")
    store = PolicyStore([source], EngineSettings())
    assert served(store) == {"celmuts"}
    assert [d.path for d in policy_documents(source)] == ["cluster:MutatingPolicy/celmuts"]
    assert {obj["metadata"]["name"] for _, obj in source.policies()} == {"kyvernos", "celmuts"}


def test_celmut_writes_no_status_on_kyvernos_policies_and_leaves_ready_to_kyverno(
    next_to_kyverno: FakeApiServer, source: ClusterPolicySource
) -> None:
    """Both engines would write conditionStatus.ready: next to Kyverno celmut writes only its condition,
    on its own policies, and says why it serves them."""
    next_to_kyverno.store.create(label_policy("kyvernos"))
    next_to_kyverno.store.create(owned(label_policy("celmuts")))
    next_to_kyverno.store.create(label_policy("kyvernos-broken", expression="object.metadata.name +"))
    store = PolicyStore([source], EngineSettings())
    eventually(lambda: served(store) == {"celmuts"}, what="celmut's policy in service")
    eventually(lambda: bool(status_of(next_to_kyverno, "celmuts")), what="celmut's status")
    assert not next_to_kyverno.requests_matching("PATCH", r"/mutatingpolicies/kyvernos")
    assert status_of(next_to_kyverno, "kyvernos") == {} and status_of(next_to_kyverno, "kyvernos-broken") == {}
    assert next_to_kyverno.store.list("events", "default") == []  # the broken one is not celmut's to report
    mine = status_of(next_to_kyverno, "celmuts")["conditionStatus"]
    assert "ready" not in mine and "message" not in mine
    (condition,) = mine["conditions"]
    assert condition["type"] == CONDITION_TYPE and condition["status"] == "True"
    assert "celmut serves MutatingPolicies matching celmut.io/owner=celmut: Kyverno detected" in condition["message"]


def test_kyverno_arriving_and_leaving_moves_the_policies_and_is_logged(
    with_crds: FakeApiServer, source: ClusterPolicySource, caplog: pytest.LogCaptureFixture
) -> None:
    """Kyverno's webhook configuration (it serves a MutatingPolicy) appears, then goes: celmut hands its
    unlabelled policies over, then takes them back; each change is one log line."""
    with_crds.store.create(label_policy("kyvernos"))
    with_crds.store.create(owned(label_policy("celmuts")))
    store = PolicyStore([source], EngineSettings())
    caplog.set_level(logging.INFO, logger="celmut.kube")
    eventually(lambda: served(store) == {"kyvernos", "celmuts"}, what="everything while Kyverno is absent")
    with_crds.store.create(kyvernos_webhooks())
    eventually(lambda: served(store) == {"celmuts"}, what="Kyverno's policies handed over")
    with_crds.store.delete("mutatingwebhookconfigurations", "kyverno-resource-mutating-webhook-cfg")
    eventually(lambda: served(store) == {"kyvernos", "celmuts"}, what="taken back when Kyverno left")
    changes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("policy ownership")]
    assert changes == [
        "policy ownership: celmut serves every MutatingPolicy: Kyverno not detected",
        "policy ownership: celmut serves MutatingPolicies matching celmut.io/owner=celmut: Kyverno detected: "
        "MutatingWebhookConfiguration kyverno-resource-mutating-webhook-cfg of Kyverno serves MutatingPolicies",
        "policy ownership: celmut serves every MutatingPolicy: Kyverno not detected",
    ]
    left = [r for r in caplog.records if r.getMessage() == "policy left to another engine"]
    assert [getattr(r, "policy", None) for r in left] == ["cluster:MutatingPolicy/kyvernos"]


def test_celmut_takes_its_condition_back_from_a_policy_it_no_longer_serves(
    with_crds: FakeApiServer, source: ClusterPolicySource
) -> None:
    """Served, then relabelled for Kyverno: celmut's condition goes; Kyverno's own status stays."""
    with_crds.store.create(owned(label_policy("moving")))
    store = PolicyStore([source], EngineSettings())
    eventually(lambda: served(store) == {"moving"})
    eventually(lambda: bool(status_of(with_crds, "moving")), what="celmut's condition")
    stored = with_crds.store.get(MPOL, "moving")
    kyverno_condition = {
        "type": "WebhookConfigured",
        "status": "True",
        "reason": "Succeeded",
        "message": "Webhook configured.",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    status = copy.deepcopy(stored["status"])
    status["conditionStatus"]["conditions"].append(kyverno_condition)
    with_crds.store.update_status({**stored, "status": status})
    with_crds.store.create(kyvernos_webhooks())
    with_crds.store.patch(MPOL, "moving", {"metadata": {"labels": {OWNER_LABEL: "kyverno"}}})
    eventually(lambda: served(store) == set(), what="the policy handed over")
    eventually(
        lambda: (
            [c["type"] for c in status_of(with_crds, "moving")["conditionStatus"]["conditions"]]
            == ["WebhookConfigured"]
        ),
        what="celmut's condition taken back",
    )
    assert status_of(with_crds, "moving")["conditionStatus"]["ready"] is True  # Kyverno's field, untouched


def test_a_policy_relabelled_for_kyverno_alone_is_handed_over(
    next_to_kyverno: FakeApiServer, source: ClusterPolicySource
) -> None:
    """Only the owner label changes: no spec change bumps the generation, nothing else in the cluster moves
    (before, the policy stayed in service until some other change made celmut reload)."""
    next_to_kyverno.store.create(owned(label_policy("moving")))
    store = PolicyStore([source], EngineSettings())
    eventually(lambda: served(store) == {"moving"}, what="the policy in service")
    generation = next_to_kyverno.store.get(MPOL, "moving")["metadata"]["generation"]
    next_to_kyverno.store.patch(MPOL, "moving", {"metadata": {"labels": {OWNER_LABEL: "kyverno"}}})
    assert next_to_kyverno.store.get(MPOL, "moving")["metadata"]["generation"] == generation
    eventually(lambda: served(store) == set(), what="the policy handed over")
    next_to_kyverno.store.patch(MPOL, "moving", {"metadata": {"labels": {OWNER_LABEL: "celmut"}}})
    eventually(lambda: served(store) == {"moving"}, what="the policy taken back")


def test_an_explicit_selector_holds_with_or_without_kyverno(with_crds: FakeApiServer, cluster: Cluster) -> None:
    with_crds.store.create(label_policy("a"))
    team = label_policy("b")
    team["metadata"]["labels"] = {"team": "b"}
    with_crds.store.create(team)
    source = ClusterPolicySource(cluster, selection=PolicySelection("team=b"), rediscover_seconds=0.05).start()
    try:
        assert source.wait_synced(HANG_SECONDS)
        store = PolicyStore([source], EngineSettings())
        eventually(lambda: served(store) == {"b"}, what="the selected policy alone")
    finally:
        source.stop()


def test_exceptions_made_for_kyverno_never_reach_celmuts_engine(
    with_crds: FakeApiServer, source: ClusterPolicySource
) -> None:
    with_crds.store.create(owned(label_policy("celmuts")))
    for name, labels in (("for-kyverno", {"celmut.io/kyverno-only": "true"}), ("shared", {})):
        with_crds.store.create(
            {
                "apiVersion": "policies.kyverno.io/v1",
                "kind": "PolicyException",
                "metadata": {"name": name, "namespace": "default", "labels": labels},
                "spec": {
                    "policyRefs": [{"name": "celmuts", "kind": "MutatingPolicy"}],
                    "matchConditions": [{"name": "never", "expression": "false"}],
                },
            }
        )
    eventually(lambda: len(source.objects_of("PolicyException")) == 2)
    paths = [d.path for d in policy_documents(source)]
    assert paths == ["cluster:MutatingPolicy/celmuts", "cluster:PolicyException/default/shared"]
