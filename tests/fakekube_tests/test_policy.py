"""Leases, evictions with PodDisruptionBudgets, events and the scale subresource."""

from __future__ import annotations

import json

import kubernetes.client
import pytest
from kubernetes.client import ApiException, AppsV1Api, CoordinationV1Api, CoreV1Api, EventsV1Api, PolicyV1Api

from tests.fakekube import FakeApiServer

from .manifests import pod


def _lease(holder: str) -> dict:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "celmut-controller"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "acquireTime": "2025-01-01T00:00:00.000000Z"},
    }


def test_lease_acquire_renew_and_conflict(fake_api_client: kubernetes.client.ApiClient) -> None:
    leases = CoordinationV1Api(fake_api_client)
    created = leases.create_namespaced_lease("kube-system", _lease("a"))
    assert created.spec.holder_identity == "a"
    with pytest.raises(ApiException) as err:
        leases.create_namespaced_lease("kube-system", _lease("b"))
    assert err.value.status == 409 and json.loads(err.value.body)["reason"] == "AlreadyExists"

    mine = leases.read_namespaced_lease("celmut-controller", "kube-system")
    theirs = leases.read_namespaced_lease("celmut-controller", "kube-system")
    mine.spec.renew_time = "2025-01-01T00:00:05.000000Z"
    renewed = leases.replace_namespaced_lease("celmut-controller", "kube-system", mine)
    assert int(renewed.metadata.resource_version) > int(theirs.metadata.resource_version)
    theirs.spec.holder_identity = "b"
    with pytest.raises(ApiException) as err:
        leases.replace_namespaced_lease("celmut-controller", "kube-system", theirs)
    assert err.value.status == 409 and json.loads(err.value.body)["reason"] == "Conflict"
    assert leases.read_namespaced_lease("celmut-controller", "kube-system").spec.holder_identity == "a"


def _eviction(name: str) -> dict:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}}


def test_eviction_honours_pod_disruption_budgets(fake_api_client: kubernetes.client.ApiClient) -> None:
    core, policy = CoreV1Api(fake_api_client), PolicyV1Api(fake_api_client)
    for name in ("web-1", "web-2"):
        core.create_namespaced_pod("default", pod(name, {"app": "web"}))
    core.create_namespaced_pod("default", pod("lonely", {"app": "other"}))
    policy.create_namespaced_pod_disruption_budget(
        "default",
        {"metadata": {"name": "web-pdb"}, "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}},
    )
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod_eviction("web-1", "default", _eviction("web-1"))
    assert err.value.status == 429
    status = json.loads(err.value.body)
    assert status["reason"] == "TooManyRequests"
    assert status["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert status["details"]["causes"][0] == {
        "reason": "DisruptionBudget",
        "message": "The disruption budget web-pdb needs 2 healthy pods and has 2 currently",
    }
    assert core.read_namespaced_pod("web-1", "default").metadata.name == "web-1"

    # A pod no budget selects is evicted (201, a Success Status) and gone.
    core.create_namespaced_pod_eviction("lonely", "default", _eviction("lonely"))
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("lonely", "default")
    assert err.value.status == 404

    # maxUnavailable: 1 lets one of the two go.
    policy.patch_namespaced_pod_disruption_budget(
        "web-pdb",
        "default",
        [{"op": "remove", "path": "/spec/minAvailable"}, {"op": "add", "path": "/spec/maxUnavailable", "value": "50%"}],
    )
    core.create_namespaced_pod_eviction("web-1", "default", _eviction("web-1"))
    assert [p.metadata.name for p in core.list_namespaced_pod("default", label_selector="app=web").items] == ["web-2"]

    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod_eviction("ghost", "default", _eviction("ghost"))
    assert err.value.status == 404


def test_eviction_answers_201(fake_apiserver: FakeApiServer, fake_api_client: kubernetes.client.ApiClient) -> None:
    CoreV1Api(fake_api_client).create_namespaced_pod("default", pod("p"))
    response = CoreV1Api(fake_api_client).create_namespaced_pod_eviction(
        "p", "default", _eviction("p"), _preload_content=False
    )
    assert response.status == 201
    assert json.loads(response.data) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    assert fake_apiserver.requests_matching("POST", r"/pods/p/eviction$")


def test_events_core_and_events_k8s_io(fake_api_client: kubernetes.client.ApiClient) -> None:
    core = CoreV1Api(fake_api_client)
    involved = {"apiVersion": "v1", "kind": "Pod", "name": "web", "namespace": "default", "uid": "u-1"}
    core.create_namespaced_event(
        "default",
        {
            "metadata": {"generateName": "web."},
            "involvedObject": involved,
            "reason": "Mutated",
            "message": "policy add-labels applied",
            "type": "Normal",
            "source": {"component": "celmut"},
        },
    )
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=web,reason=Mutated")
    assert len(events.items) == 1 and events.items[0].message == "policy add-labels applied"
    assert core.list_namespaced_event("default", field_selector="involvedObject.name=other").items == []

    new_events = EventsV1Api(fake_api_client)
    new_events.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "web.1"},
            "eventTime": "2025-01-01T00:00:00.000000Z",
            "reportingController": "celmut.io/controller",
            "reportingInstance": "celmut-0",
            "action": "Mutate",
            "reason": "Mutated",
            "regarding": involved,
            "type": "Normal",
        },
    )
    assert [e.reason for e in new_events.list_namespaced_event("default").items] == ["Mutated"]


def test_scale_subresource(fake_api_client: kubernetes.client.ApiClient) -> None:
    apps = AppsV1Api(fake_api_client)
    template = pod("web", {"app": "web"})
    apps.create_namespaced_deployment(
        "default",
        {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": template["metadata"], "spec": template["spec"]},
            },
        },
    )
    scale = apps.read_namespaced_deployment_scale("web", "default")
    assert scale.spec.replicas == 2 and scale.status.selector == "app=web"
    scaled = apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 5}})
    assert scaled.spec.replicas == 5
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 5
