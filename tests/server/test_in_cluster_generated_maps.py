"""Issue 19: a MutatingPolicy asking for a native MutatingAdmissionPolicy is applied exactly once — by
celmut's webhook until its generated MAP is in service, by the API server's MAP plugin from then on, and
by the webhook again when generation fails. The fake API server runs the real admission chain (native
MAPs before the webhooks, tests/fakekube/admission.py) with celmut's real webhook registered as the chart
registers it, and celmut's controller generating the MAP; the mutation appends a toleration, so a second
application would show as a second toleration in the stored pod."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes.client
import pytest

from tests.controller.support import running
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually

from .in_cluster import celmut_in_cluster
from .support import RunningServer

Obj = dict[str, Any]
MPOL = "mutatingpolicies.policies.kyverno.io"
APPEND = (
    'has(object.spec.tolerations) ? [JSONPatch{op: "add", path: "/spec/tolerations/-", '
    'value: {"key": "spot", "operator": "Exists"}}] : '
    '[JSONPatch{op: "add", path: "/spec/tolerations", value: [{"key": "spot", "operator": "Exists"}]}]'
)
POLICY: Obj = {
    "apiVersion": "policies.kyverno.io/v1",
    "kind": "MutatingPolicy",
    "metadata": {"name": "spot"},
    "spec": {
        "autogen": {"podControllers": {"controllers": []}, "mutatingAdmissionPolicy": {"enabled": True}},
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
            ]
        },
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": APPEND}}],
    },
}


def pod(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def served(servers: list[RunningServer]) -> set[str]:
    names: set[str] = set()
    for server in servers:
        server.store.reload()
        engine = server.store.engine
        names |= {p.name for p in engine.policies} if engine is not None else set()
    return names


def sees_binding(server: RunningServer) -> bool:
    assert server.cluster is not None
    bindings = server.cluster.policy_source.objects_of("MutatingAdmissionPolicyBinding")
    return any(b["metadata"]["name"] == "mpol-spot-binding" for b in bindings)


def serves_pods_in_default(fake: FakeApiServer, servers: list[RunningServer]) -> bool:
    """Every replica serves the policy and reads the default namespace's label, and the webhook the
    controller registers is sent pods: what a pod in ``default`` needs to be mutated whichever replica the
    API server calls (it calls them in turn; each reads namespaces through its own watch cache)."""
    for server in servers:
        if "spot" not in served([server]):
            return False
        assert server.store.engine is not None
        resources = server.store.engine.options.services.resources
        namespace = resources.get("v1", "namespaces", "", "default") if resources is not None else None
        if not namespace or "kubernetes.io/metadata.name" not in (namespace["metadata"].get("labels") or {}):
            return False
    return any(
        "pods" in rule.get("resources", [])
        for configuration in fake.store.list("mutatingwebhookconfigurations")
        for webhook in configuration["webhooks"]
        for rule in webhook.get("rules") or []
    )


def create_pod(fake: FakeApiServer, name: str) -> list[Obj]:
    kubernetes.client.CoreV1Api(fake.api_client()).create_namespaced_pod("default", pod(name))
    return list(fake.store.get("pods", name, "default")["spec"].get("tolerations") or [])


@pytest.mark.fakekube(webhooks=True, native_map=True)
def test_the_policy_is_applied_once_by_the_webhook_then_by_its_map_then_by_the_webhook_again(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake = fake_apiserver
    once = [{"key": "spot", "operator": "Exists"}]
    with celmut_in_cluster(fake, tmp_path, replicas=2) as servers:
        assert fake.native_map is not None
        # 1. No controller yet: no MAP, celmut's webhook serves the policy.
        fake.store.create(POLICY)
        eventually(lambda: "spot" in served(servers), what="the webhook serving the policy")
        assert create_pod(fake, "before") == once
        assert fake.native_map.invocations == 0

        (tmp_path / "none").mkdir()
        with running(fake, tmp_path, tmp_path / "none", from_cluster=True):
            # 2. The controller generates the MAP; the webhook stops serving the policy.
            eventually(
                lambda: fake.store.exists("mutatingadmissionpolicybindings", "mpol-spot-binding"), what="the MAP"
            )
            eventually(lambda: all(sees_binding(s) for s in servers), what="the webhooks seeing it")
            served(servers)  # every replica reloaded with the MAP in view
            assert create_pod(fake, "native") == once
            assert "spot" not in served(servers)
            assert fake.native_map.invocations == 1
            status = fake.store.get(MPOL, "spot")["status"]
            assert status["generated"] is True
            condition = next(c for c in status["conditionStatus"]["conditions"] if c["type"] == "celmut.io/Compiled")
            assert "MutatingAdmissionPolicy the API server applies" in condition["message"]

            # 3. Generation fails (the policy now has a namespaceSelector Kyverno's generator would drop):
            # the MAP goes, the webhook serves the policy again.
            # the namespace carries the label first: the webhooks read namespaces through a watch cache
            # (as kube-apiserver's webhook matching does), so a label added just before a CREATE may be
            # missed by a replica whose cache has not caught up yet
            fake.store.patch(
                "namespaces", "default", {"metadata": {"labels": {"kubernetes.io/metadata.name": "default"}}}
            )
            policy = fake.store.get(MPOL, "spot")
            policy["spec"]["matchConstraints"]["namespaceSelector"] = {
                "matchLabels": {"kubernetes.io/metadata.name": "default"}
            }
            fake.store.update(policy)
            eventually(lambda: not fake.store.list("mutatingadmissionpolicies"), what="the MAP deleted")
            eventually(lambda: serves_pods_in_default(fake, servers), what="every webhook serving it again")
            assert create_pod(fake, "after") == once
            assert fake.native_map.invocations == 1
            message = fake.store.get(MPOL, "spot")["status"]["conditionStatus"]["message"]
            assert message.startswith(
                "skip generating MutatingAdmissionPolicy: spec.matchConstraints.namespaceSelector"
            )


@pytest.mark.fakekube(webhooks=True, native_map=True)
def test_a_binding_the_api_server_refuses_leaves_the_policy_in_the_webhook_applied_once(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """The MAP is written first and its binding last (a MAP without a binding applies to nothing); when
    the binding is refused, the webhook keeps serving the policy and the pod gets the toleration once."""
    fake = fake_apiserver
    fake.fail_next("POST", "/mutatingadmissionpolicybindings$", 500, times=None, message="refused by the test")
    with celmut_in_cluster(fake, tmp_path, replicas=1) as servers:
        assert fake.native_map is not None
        fake.store.create(POLICY)
        (tmp_path / "none").mkdir()
        with running(fake, tmp_path, tmp_path / "none", from_cluster=True):
            eventually(lambda: "refused by the test" in str(fake.store.get(MPOL, "spot").get("status")), what="status")
            assert fake.store.exists("mutatingadmissionpolicies", "mpol-spot")  # inert: no binding
            eventually(lambda: "spot" in served(servers), what="the webhook serving the policy")
            assert create_pod(fake, "pod") == [{"key": "spot", "operator": "Exists"}]
            assert fake.native_map.invocations == 0
            assert fake.store.get(MPOL, "spot")["status"]["generated"] is False


@pytest.mark.fakekube(webhooks=True, native_map=True)
def test_the_map_reaches_no_namespace_the_webhook_was_never_sent(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """celmut's Fail webhook is never sent kube-system nor celmut's own namespace (install/webhook_config.py);
    Kyverno's generator drops selectors (builder.go), celmut copies its webhook's into the MAP, so turning
    generation on does not start mutating pods there."""
    fake = fake_apiserver
    with celmut_in_cluster(fake, tmp_path, replicas=1) as servers:
        fake.store.create(POLICY)
        eventually(lambda: "spot" in served(servers), what="the webhook serving the policy")
        assert not create_pod_in(fake, "kube-system", "before")
        (tmp_path / "none").mkdir()
        with running(fake, tmp_path, tmp_path / "none", from_cluster=True):
            eventually(lambda: fake.store.exists("mutatingadmissionpolicybindings", "mpol-spot-binding"), what="MAP")
            eventually(lambda: all(sees_binding(s) for s in servers), what="the webhooks seeing it")
            eventually(lambda: "spot" not in served(servers), what="the webhook leaving the policy")
            webhook = next(
                w
                for c in fake.store.list("mutatingwebhookconfigurations")
                for w in c["webhooks"]
                if w["name"] == "fail.mutate.celmut.io"
            )
            match = fake.store.get("mutatingadmissionpolicies", "mpol-spot")["spec"]["matchConstraints"]
            assert match["namespaceSelector"] == webhook["namespaceSelector"]
            assert match["objectSelector"] == webhook["objectSelector"]
            assert not create_pod_in(fake, "kube-system", "after")
            assert not create_pod_in(fake, "celmut", "own")
            assert create_pod_in(fake, "default", "served") == [{"key": "spot", "operator": "Exists"}]
            assert fake.native_map is not None and fake.native_map.invocations == 1


def create_pod_in(fake: FakeApiServer, namespace: str, name: str) -> list[Obj]:
    body = {**pod(name), "metadata": {"name": name, "namespace": namespace}}
    kubernetes.client.CoreV1Api(fake.api_client()).create_namespaced_pod(namespace, body)
    return list(fake.store.get("pods", name, namespace)["spec"].get("tolerations") or [])
