"""Issue 12 §3: kube-apiserver ≥ 1.32 runs MutatingAdmissionPolicies itself, before the mutating webhooks
(pkg/kubeapiserver/options/plugins.go); celmut serving the same cluster MAPs applied them a second time.
The fake API server evaluates stored MAPs natively (tests/fakekube/native_map.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes.client
import pytest

from tests.fakekube import FakeApiServer
from tests.kube.conftest import admission_policy, append_toleration, binding, pods_create

from .in_cluster import app_pod, celmut_in_cluster, wait_for_policies

Obj = dict[str, Any]

APPEND_TOLERATION = admission_policy("spot-toleration", append_toleration("spot"), failurePolicy="Fail")
BINDING = binding("spot-toleration")
LABEL_POLICY = {  # a MutatingPolicy celmut does serve, to know its cluster policies are loaded
    "apiVersion": "policies.kyverno.io/v1",
    "kind": "MutatingPolicy",
    "metadata": {"name": "marker"},
    "spec": {
        "autogen": {"podControllers": {"controllers": []}},
        "matchConstraints": pods_create(),
        "mutations": [
            {
                "patchType": "JSONPatch",
                "jsonPatch": {"expression": '[JSONPatch{op: "add", path: "/metadata/labels/m", value: "1"}]'},
            }
        ],
    },
}


@pytest.mark.fakekube(webhooks=True, native_map=True)
def test_a_cluster_map_is_applied_once_by_the_api_server_not_again_by_celmut(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake_apiserver.store.create(APPEND_TOLERATION)
    fake_apiserver.store.create(BINDING)
    with celmut_in_cluster(fake_apiserver, tmp_path) as servers:
        fake_apiserver.store.create(LABEL_POLICY)
        wait_for_policies(servers, "marker")
        core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
        core.create_namespaced_pod("default", app_pod("p"))
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
        wait_for_policies(servers, "spot-toleration")
        core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
        core.create_namespaced_pod("default", app_pod("p"))
    stored = fake_apiserver.store.get("pods", "p", "default")
    assert stored["spec"]["tolerations"] == [{"key": "spot", "operator": "Exists"}]
