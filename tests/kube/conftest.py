"""Fixtures: a celmut :class:`Cluster` connected to the fake API server through a kubeconfig."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from celmut.kube.client import Cluster
from celmut.kube.policy_source import ClusterPolicySource
from celmut.sources.documents import Document
from tests.fakekube import FakeApiServer
from tests.waiting import HANG_SECONDS
from tests.waiting import eventually as eventually  # watches deliver asynchronously

from .crds import policy_crds


@pytest.fixture
def cluster(fake_apiserver: FakeApiServer, tmp_path: Path) -> Iterator[Cluster]:
    """The real kubernetes client configuration path: kubeconfig file → Configuration → ApiClient."""
    connected = Cluster.connect(str(fake_apiserver.kubeconfig(tmp_path / "kubeconfig")), timeout=5)
    try:
        yield connected
    finally:
        connected.close()


def namespace(name: str, **labels: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def pod(name: str, ns: str = "default", labels: dict[str, str] | None = None, **meta: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}, **meta},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }


def pods_create() -> dict[str, Any]:
    """``matchConstraints`` selecting pod CREATE requests (a fresh dict: callers may change it)."""
    return {
        "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]
    }


def label_policy(name: str, value: str = "yes", expression: str | None = None) -> dict[str, Any]:
    patch = expression or f'[JSONPatch{{op: "add", path: "/metadata/labels/{name}", value: "{value}"}}]'
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": pods_create(),
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": patch}}],
        },
    }


def admission_policy(name: str, expression: str, **spec: Any) -> dict[str, Any]:
    """A MutatingAdmissionPolicy on pod CREATE with one JSONPatch mutation (reinvocationPolicy Never
    unless ``spec`` says otherwise); :func:`binding` binds it."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": pods_create(),
            "reinvocationPolicy": "Never",
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}],
            **spec,
        },
    }


def binding(policy_name: str) -> dict[str, Any]:
    """The MutatingAdmissionPolicyBinding of ``policy_name`` (same name, no params, every namespace)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": policy_name},
        "spec": {"policyName": policy_name},
    }


def append_toleration(key: str) -> str:
    """A MAP JSONPatch expression adding the toleration ``{key, operator: Exists}`` (creating the list)."""
    toleration = f'Object.spec.tolerations{{key: "{key}", operator: "Exists"}}'
    return (
        f'has(object.spec.tolerations) ? [JSONPatch{{op: "add", path: "/spec/tolerations/-", value: {toleration}}}] '
        f': [JSONPatch{{op: "add", path: "/spec/tolerations", value: [{toleration}]}}]'
    )


@pytest.fixture
def with_crds(fake_apiserver: FakeApiServer) -> FakeApiServer:
    for definition in policy_crds():
        fake_apiserver.store.create(definition)
    return fake_apiserver


@pytest.fixture
def source(cluster: Cluster) -> Iterator[ClusterPolicySource]:
    started = ClusterPolicySource(cluster, rediscover_seconds=0.05).start()
    assert started.wait_synced(HANG_SECONDS)
    try:
        yield started
    finally:
        started.stop()


def policy_documents(source: ClusterPolicySource) -> list[Document]:
    """The source's documents without the CRDs it also hands over (schemas, not policies)."""
    documents, _ = source.documents()
    return [d for d in documents if not d.path.startswith("cluster:CustomResourceDefinition/")]
