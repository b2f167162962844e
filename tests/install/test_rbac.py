"""The shipped RBAC is enough: every request celmut makes against the fake API server — the webhook
serving a spot preset with cluster lookups and reporting a broken policy, the controller's leader
election and TLS upkeep — is allowed by the rules the chart and `celmut manifests` install (the two
are equal: test_manifests), and nothing more is asked for than the tests see used."""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from celmut.controller.leader import LeaderElector
from celmut.install import rbac
from celmut.kube.client import Cluster
from celmut.kube.tls_manager import TlsConfig, TlsManager
from tests.controller.support import running
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually, label_policy, namespace
from tests.kube.crds import policy_crds
from tests.server.support import admission_request, pod, running_server

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "celmut"
Request = tuple[str, str, str, str, str]  # verb, group, resource (with subresource), namespace, name


def resource_request(method: str, path: str, query: dict[str, list[str]]) -> Request | None:
    """What RBAC checks for one request; None for discovery (allowed to every authenticated user)."""
    parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
    if parts[0] == "api" and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return None
    ns = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        ns, rest = rest[1], rest[2:]
    resource, name, sub = rest[0], rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else ""
    if method == "GET":
        verb = "watch" if query.get("watch", [""])[0] in ("true", "1") else ("get" if name else "list")
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
    return verb, group, f"{resource}/{sub}" if sub else resource, ns, name


def allowed(rules: list[dict[str, Any]], request: Request) -> bool:
    verb, group, resource, _, name = request
    return any(
        group in r["apiGroups"]
        and resource in r["resources"]
        and verb in r["verbs"]
        and (not r.get("resourceNames") or (name and name in r["resourceNames"]))
        for r in rules
    )


def requests(server: FakeApiServer) -> set[Request]:
    found = (resource_request(r.method, r.path, r.query) for r in server.requests)
    return {r for r in found if r is not None}


def test_the_webhooks_rules_cover_serving_presets_lookups_and_reports(
    fake_apiserver: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POD_NAMESPACE", NAMESPACE)  # as the chart's webhook pods: the decision ledger is on
    monkeypatch.setenv("CELMUT_DECISION_LEDGER", "celmut-decisions")
    for definition in policy_crds():
        fake_apiserver.store.create(definition)
    fake_apiserver.store.create(namespace("shop"))
    fake_apiserver.store.create(label_policy("broken", expression="object.metadata.name +"))
    fake_apiserver.store.create(  # a workload-name filter: the pod's owners are looked up
        {
            "apiVersion": "pod-mutations.cast.ai/v1",
            "kind": "PodMutation",
            "metadata": {"name": "web"},
            "spec": {"filterV2": {"workload": {"names": [{"type": "exact", "value": "web"}]}}},
        }
    )
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d9c", "uid": "u1", "controller": True}
    fake_apiserver.store.create(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web-5d9c", "namespace": "shop", "uid": "u1"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}}},
        }
    )
    kubeconfig = str(fake_apiserver.kubeconfig(tmp_path / "kubeconfig"))
    spot = str(ROOT / "presets" / "spot-partial.yaml")
    with running_server(tmp_path, [spot], from_cluster=True, kubeconfig=kubeconfig) as server:
        replica = pod("web-5d9c-x1")
        replica["metadata"]["ownerReferences"] = [owner]
        review = server.review(admission_request(replica))
        assert review["response"]["allowed"]

        def reported() -> bool:
            server.store.reload()
            return bool(fake_apiserver.store.list("events", "default"))

        eventually(reported, what="the broken policy's Event")
    made = requests(fake_apiserver)
    verbs = {(verb, resource) for verb, _, resource, _, _ in made}
    assert {
        ("watch", "replicasets"),
        ("watch", "pods"),
        ("patch", "mutatingpolicies/status"),
        ("create", "events"),
        ("get", "leases"),  # the split decision read its ledger Lease …
        ("create", "leases"),  # … and recorded the pod it admitted
    } <= verbs
    ledger_rules = rbac.webhook_namespace_rules("celmut-decisions")
    denied = [
        r for r in made if not allowed(rbac.shared_rules(), r) and not (r[3] == NAMESPACE and allowed(ledger_rules, r))
    ]
    assert denied == []


def test_the_controllers_rules_cover_leader_election_and_tls_upkeep(
    fake_apiserver: FakeApiServer, cluster: Cluster
) -> None:
    fake_apiserver.store.create(namespace(NAMESPACE))
    fake_apiserver.store.create(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "celmut"},
            "webhooks": [
                {
                    "name": "ignore.mutate.celmut.io",
                    "clientConfig": {},
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                }
            ],
        }
    )
    elector = LeaderElector(cluster, NAMESPACE, "celmut-controller", "me")
    assert elector.try_acquire_or_renew() and elector.try_acquire_or_renew()  # create, then renew
    tls = TlsConfig(NAMESPACE, "celmut", "celmut-tls", "celmut-ca", "celmut")
    manager = TlsManager(cluster, tls)
    manager.reconcile()
    manager.reconcile()  # updates read what they wrote
    made = requests(fake_apiserver)
    cluster_rules = rbac.controller_cluster_rules("celmut", self_managed_tls=True)
    namespace_rules = rbac.controller_namespace_rules(
        "celmut-controller", ["celmut-ca", "celmut-tls"], self_managed_tls=True
    )
    denied = [
        r for r in made if not allowed(cluster_rules, r) and not (r[3] == NAMESPACE and allowed(namespace_rules, r))
    ]
    assert denied == []
    assert {("update", "leases"), ("create", "secrets"), ("patch", "mutatingwebhookconfigurations")} <= {
        (verb, resource) for verb, _, resource, _, _ in made
    }


def test_the_controllers_rules_cover_generating_mutating_admission_policies(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Issue 19: the leader creates, repairs and deletes the MAP + binding generated for a policy with
    spec.autogen.mutatingAdmissionPolicy.enabled, and writes the policy's status."""
    for definition in policy_crds():
        fake_apiserver.store.create(definition)
    policy = label_policy("team")
    policy["spec"]["autogen"] = {"podControllers": {"controllers": []}, "mutatingAdmissionPolicy": {"enabled": True}}
    fake_apiserver.store.create(policy)
    maps, bindings = "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"
    (tmp_path / "none").mkdir()
    with running(fake_apiserver, tmp_path, tmp_path / "none", from_cluster=True):
        eventually(lambda: fake_apiserver.store.exists(bindings, "mpol-team-binding"), what="the MAP")
        edited = fake_apiserver.store.get(maps, "mpol-team")
        edited["spec"]["mutations"] = []
        fake_apiserver.store.update(edited)
        eventually(lambda: fake_apiserver.store.get(maps, "mpol-team")["spec"]["mutations"], what="the repair")
        current = fake_apiserver.store.get("mutatingpolicies.policies.kyverno.io", "team")
        current["spec"]["autogen"]["mutatingAdmissionPolicy"]["enabled"] = False
        fake_apiserver.store.update(current)
        eventually(lambda: not fake_apiserver.store.list(maps), what="the deletion")
    made = requests(fake_apiserver)
    verbs = {(verb, resource) for verb, _, resource, _, _ in made}
    assert {("create", maps), ("create", bindings), ("update", maps), ("delete", maps), ("delete", bindings)} <= verbs
    rules = rbac.controller_cluster_rules("celmut", self_managed_tls=False)
    assert [r for r in made if not allowed(rules, r) and r[3] != NAMESPACE] == []


def test_the_policy_validation_clusterrole_covers_keeping_its_webhook(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """policyValidation: the leader creates and updates the ValidatingWebhookConfiguration, reads the
    ClusterRole that owns it, and the TLS upkeep patches its CA bundle — all within that ClusterRole."""
    from celmut.controller.policy_validation import PolicyValidationConfig
    from celmut.install.webhook_config import WebhookSettings

    name = "celmut-policy-validation"
    for definition in policy_crds():
        fake_apiserver.store.create(definition)
    fake_apiserver.store.create(namespace(NAMESPACE))
    fake_apiserver.store.create(
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}}
    )
    (tmp_path / "none").mkdir()
    config = PolicyValidationConfig(WebhookSettings(), name=name, owner_cluster_role=name, resync_seconds=0.1)
    with running(fake_apiserver, tmp_path, tmp_path / "none", from_cluster=True, policy_validation=config):
        eventually(lambda: fake_apiserver.store.exists("validatingwebhookconfigurations", name), what="the webhook")
        crd = fake_apiserver.store.get("customresourcedefinitions", "mutatingpolicies.policies.kyverno.io")
        crd["metadata"]["labels"] = {"app.kubernetes.io/part-of": "kyverno"}  # Kyverno arrives: an update
        fake_apiserver.store.update(crd)
        eventually(
            lambda: len(fake_apiserver.store.get("validatingwebhookconfigurations", name)["webhooks"][0]["rules"]) == 3,
            what="the rules without Kyverno's kinds",
        )
    cluster = Cluster.connect(str(fake_apiserver.kubeconfig(tmp_path / "tls-kubeconfig")))
    try:
        tls = TlsConfig(NAMESPACE, "celmut", "celmut-tls", "celmut-ca", "celmut", validating_webhook_configuration=name)
        TlsManager(cluster, tls).reconcile()
    finally:
        cluster.close()
    made = {r for r in requests(fake_apiserver) if r[2] == "validatingwebhookconfigurations" or r[2] == "clusterroles"}
    assert {verb for verb, *_ in made} == {"get", "create", "update", "patch"}
    assert [r for r in made if not allowed(rbac.policy_validation_rules(name), r)] == []
