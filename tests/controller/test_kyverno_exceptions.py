"""Issue 20: the controller asks Kyverno to skip the MutatingPolicies celmut serves, with one Kyverno
PolicyException each (matchConditions [true]: Kyverno's mpol engine checks exceptions before mutating,
pkg/cel/policies/mpol/compiler/policy.go ``evaluate``; by kind and name, pkg/cel/engine/exceptions.go
``MatchExceptions``), which celmut's own engine never applies; none while Kyverno is absent."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from celmut.install import rbac
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually, label_policy
from tests.kube.crds import crds_next_to_kyverno, kyvernos_webhooks, policy_crds

from .support import running

Obj = dict[str, Any]


def owned(policy: Obj, **labels: str) -> Obj:
    policy["metadata"]["labels"] = {"celmut.io/owner": "celmut", **labels}
    return policy


def namespaced(name: str, namespace: str, *, celmuts: bool) -> Obj:
    policy = label_policy(name)
    policy["kind"] = "NamespacedMutatingPolicy"
    policy["metadata"]["namespace"] = namespace
    return owned(policy) if celmuts else policy


def exceptions(fake: FakeApiServer, namespace: str = "celmut") -> dict[str, Obj]:
    return {e["metadata"]["name"]: e for e in fake.store.list("policyexceptions", namespace)}


def no_files(tmp_path: Path) -> Path:
    (tmp_path / "none").mkdir(exist_ok=True)
    return tmp_path / "none"


def cluster_with(fake: FakeApiServer, crds: list[Obj], *namespaces: str) -> None:
    for definition in crds:
        fake.store.create(definition)
    for name in namespaces:
        fake.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def test_one_exception_per_policy_celmut_serves_and_none_for_kyvernos(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    cluster_with(fake_apiserver, crds_next_to_kyverno(), "celmut")
    fake_apiserver.store.create(owned(label_policy("celmuts")))
    fake_apiserver.store.create(label_policy("kyvernos"))
    uid = fake_apiserver.store.get("mutatingpolicies.policies.kyverno.io", "celmuts")["metadata"]["uid"]
    with running(
        fake_apiserver, tmp_path, no_files(tmp_path), from_cluster=True, kyverno_exceptions_namespace="celmut"
    ) as controller:
        eventually(lambda: "celmut-mpol-celmuts" in exceptions(fake_apiserver), what="the exception for Kyverno")
        exception = exceptions(fake_apiserver)["celmut-mpol-celmuts"]
        assert exception["spec"] == {
            "policyRefs": [{"name": "celmuts", "kind": "MutatingPolicy"}],
            "matchConditions": [{"name": "celmut-serves-this-policy", "expression": "true"}],
        }
        assert exception["metadata"]["labels"] == {
            "celmut.io/kyverno-only": "true",
            "app.kubernetes.io/managed-by": "celmut",
        }
        (owner,) = exception["metadata"]["ownerReferences"]  # deleting the policy deletes its exception
        assert (owner["kind"], owner["name"], owner["uid"]) == ("MutatingPolicy", "celmuts", uid)
        assert list(exceptions(fake_apiserver)) == ["celmut-mpol-celmuts"]
        engine = controller.store.engine
        assert engine is not None and {p.name for p in engine.policies} == {"celmuts"}
        assert not engine.exceptions  # Kyverno's exception never exempts the policy in celmut

        fake_apiserver.store.patch(
            "mutatingpolicies.policies.kyverno.io", "celmuts", {"metadata": {"labels": {"celmut.io/owner": "kyverno"}}}
        )
        eventually(lambda: exceptions(fake_apiserver) == {}, what="the exception withdrawn with the policy")
    writes = [r for r in fake_apiserver.requests if r.method != "GET" and "/policyexceptions" in r.path]
    assert {(r.method, r.path.split("/namespaces/")[1].split("/")[0]) for r in writes} == {
        ("POST", "celmut"),
        ("DELETE", "celmut"),
    }
    (role_rule,) = rbac.kyverno_exception_rules()  # what the chart's and manifests' Role allow there
    assert {"create", "delete"} <= set(role_rule["verbs"])


def test_no_exception_while_kyverno_is_absent_and_all_withdrawn_when_it_leaves(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    cluster_with(fake_apiserver, policy_crds(), "celmut")
    fake_apiserver.store.create(owned(label_policy("celmuts")))
    with running(
        fake_apiserver, tmp_path, no_files(tmp_path), from_cluster=True, kyverno_exceptions_namespace="celmut"
    ):
        eventually(lambda: fake_apiserver.watchers("policyexceptions"), what="the controller watching")
        assert exceptions(fake_apiserver) == {}
        fake_apiserver.store.create(kyvernos_webhooks())  # Kyverno starts serving MutatingPolicies
        eventually(lambda: list(exceptions(fake_apiserver)) == ["celmut-mpol-celmuts"], what="Kyverno arrived")
        fake_apiserver.store.delete("mutatingwebhookconfigurations", "kyverno-resource-mutating-webhook-cfg")
        eventually(lambda: exceptions(fake_apiserver) == {}, what="Kyverno gone: nothing to skip")


def test_a_namespaced_policy_whose_name_kyverno_also_serves_gets_no_exception(
    fake_apiserver: FakeApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An exception names a policy by kind and name only: one for team-a/p would make Kyverno skip
    team-b/p too. celmut withholds it, says why, and makes it once the name is celmut's alone."""
    cluster_with(fake_apiserver, crds_next_to_kyverno(), "celmut", "team-a", "team-b")
    fake_apiserver.store.create(namespaced("p", "team-a", celmuts=True))
    fake_apiserver.store.create(namespaced("p", "team-b", celmuts=False))
    caplog.set_level(logging.WARNING, logger="celmut.kube")
    with running(
        fake_apiserver, tmp_path, no_files(tmp_path), from_cluster=True, kyverno_exceptions_namespace="celmut"
    ) as controller:
        eventually(lambda: controller.store.engine is not None and controller.store.engine.policies)
        eventually(lambda: any("team-a/p" in r.getMessage() for r in caplog.records), what="the warning")
        assert exceptions(fake_apiserver) == {}
        fake_apiserver.store.delete("namespacedmutatingpolicies.policies.kyverno.io", "p", "team-b")
        eventually(lambda: list(exceptions(fake_apiserver)) == ["celmut-nmpol-team-a-p"], what="the exception")
        assert "ownerReferences" not in exceptions(fake_apiserver)["celmut-nmpol-team-a-p"]["metadata"]


def test_a_refused_exception_is_retried(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """Kyverno's webhook may refuse exceptions (policy exceptions off): nothing in the cluster changes to
    prompt another try, so the controller retries on its own."""
    cluster_with(fake_apiserver, crds_next_to_kyverno(), "celmut")
    fake_apiserver.store.create(owned(label_policy("celmuts")))
    fake_apiserver.fail_next("POST", r"/policyexceptions$", 400, reason="BadRequest", message="exceptions are off")
    with running(
        fake_apiserver, tmp_path, no_files(tmp_path), from_cluster=True, kyverno_exceptions_namespace="celmut"
    ) as controller:
        assert controller.kyverno_exceptions is not None
        controller.kyverno_exceptions.retry_seconds = 0.1
        eventually(lambda: "celmut-mpol-celmuts" in exceptions(fake_apiserver), what="the retried exception")
    assert len(fake_apiserver.requests_matching("POST", r"/policyexceptions$")) == 2
