"""Issue 12 §3: kube-apiserver ≥ 1.32 runs MutatingAdmissionPolicies itself, before the mutating webhooks
(pkg/kubeapiserver/options/plugins.go); celmut serving the same cluster MAPs applied them a second time.
The fake API server evaluates stored MAPs natively (tests/fakekube/native_map.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes.client
import pytest

from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually

from .in_cluster import celmut_in_cluster

Obj = dict[str, Any]

APPEND_TOLERATION = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "MutatingAdmissionPolicy",
    "metadata": {"name": "spot-toleration"},
    "spec": {
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
            ]
        },
        "failurePolicy": "Fail",
        "reinvocationPolicy": "Never",
        "mutations": [
            {
                "patchType": "JSONPatch",
                "jsonPatch": {
                    "expression": 'has(object.spec.tolerations) ? [JSONPatch{op: "add", path: "/spec/tolerations/-", '
                    'value: Object.spec.tolerations{key: "spot", operator: "Exists"}}] : [JSONPatch{op: "add", '
                    'path: "/spec/tolerations", value: [Object.spec.tolerations{key: "spot", operator: "Exists"}]}]'
                },
            }
        ],
    },
}
BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "MutatingAdmissionPolicyBinding",
    "metadata": {"name": "spot-toleration"},
    "spec": {"policyName": "spot-toleration"},
}
LABEL_POLICY = {  # a MutatingPolicy celmut does serve, to know its cluster policies are loaded
    "apiVersion": "policies.kyverno.io/v1",
    "kind": "MutatingPolicy",
    "metadata": {"name": "marker"},
    "spec": {
        "autogen": {"podControllers": {"controllers": []}},
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
            ]
        },
        "mutations": [
            {
                "patchType": "JSONPatch",
                "jsonPatch": {"expression": '[JSONPatch{op: "add", path: "/metadata/labels/m", value: "1"}]'},
            }
        ],
    },
}


def pod(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def loaded(servers: list[Any], *names: str) -> None:
    def check() -> bool:
        for server in servers:
            server.store.reload()
            engine = server.store.engine
            if engine is None or not {p.name for p in engine.policies} >= set(names):
                return False
        return True

    eventually(check, timeout=10, what=f"{names} in service")


@pytest.mark.fakekube(webhooks=True, native_map=True)
def test_a_cluster_map_is_applied_once_by_the_api_server_not_again_by_celmut(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake_apiserver.store.create(APPEND_TOLERATION)
    fake_apiserver.store.create(BINDING)
    with celmut_in_cluster(fake_apiserver, tmp_path) as servers:
        fake_apiserver.store.create(LABEL_POLICY)
        loaded(servers, "marker")
        core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
        core.create_namespaced_pod("default", pod("p"))
        engine = servers[0].store.engine
    stored = fake_apiserver.store.get("pods", "p", "default")
    assert stored["metadata"]["labels"]["m"] == "1"  # celmut's webhook did run
    assert stored["spec"]["tolerations"] == [{"key": "spot", "operator": "Exists"}]
    assert engine is not None and "MutatingAdmissionPolicy" not in {p.kind for p in engine.policies}


@pytest.mark.fakekube(webhooks=True)
def test_serve_admission_policies_serves_them_for_an_api_server_without_map(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """`--serve-admission-policies`: the API server has no MAP plugin (native_map off), celmut applies them."""
    fake_apiserver.store.create(APPEND_TOLERATION)
    fake_apiserver.store.create(BINDING)
    with celmut_in_cluster(fake_apiserver, tmp_path, serve_admission_policies=True) as servers:
        loaded(servers, "spot-toleration")
        core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
        core.create_namespaced_pod("default", pod("p"))
    stored = fake_apiserver.store.get("pods", "p", "default")
    assert stored["spec"]["tolerations"] == [{"key": "spot", "operator": "Exists"}]
