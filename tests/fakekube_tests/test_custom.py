"""CRDs, custom objects (CustomObjectsApi, DynamicClient) and discovery."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
from kubernetes import watch
from kubernetes.client import ApiException, ApiextensionsV1Api, AppsV1Api, CoreV1Api, CustomObjectsApi
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from tests.fakekube import FakeApiServer

from .manifests import pod, widget, widget_crd

GROUP, VERSION, PLURAL = "example.com", "v1", "widgets"


class _FirstOnly(watch.Watch):
    """A Watch that stops after its first event."""

    def stream(self, func: Any, *args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        for event in super().stream(func, *args, **kwargs):
            yield event
            self.stop()


@pytest.fixture
def with_crd(fake_api_client: kubernetes.client.ApiClient) -> kubernetes.client.ApiClient:
    crd = ApiextensionsV1Api(fake_api_client).create_custom_resource_definition(widget_crd())
    assert {c.type: c.status for c in crd.status.conditions}["Established"] == "True"
    assert crd.status.stored_versions == ["v1"]
    return fake_api_client


def test_custom_objects_crud(with_crd: kubernetes.client.ApiClient, fake_apiserver: FakeApiServer) -> None:
    api = CustomObjectsApi(with_crd)
    made = api.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1", labels={"a": "b"}))
    assert made["metadata"]["uid"] and made["metadata"]["generation"] == 1
    got = api.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    assert got["spec"] == {"size": 1, "replicas": 1}
    listed = api.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, label_selector="a=b")
    assert listed["kind"] == "WidgetList"
    assert listed["items"][0]["kind"] == "Widget"  # custom resources keep kind in list items
    assert api.list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"][0]["metadata"]["name"] == "w1"

    patched = api.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", {"spec": {"size": 2}})
    assert fake_apiserver.requests[-1].content_type == "application/merge-patch+json"
    assert patched["spec"]["size"] == 2 and patched["metadata"]["generation"] == 2

    status = api.patch_namespaced_custom_object_status(
        GROUP, VERSION, "default", PLURAL, "w1", {"status": {"ready": True}, "spec": {"size": 99}}
    )
    assert status["status"] == {"ready": True} and status["spec"]["size"] == 2

    with pytest.raises(ApiException) as err:  # stale: the status patch moved the resourceVersion on
        api.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", patched)
    assert err.value.status == 409
    current = api.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    current["spec"]["size"] = 3
    replaced = api.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", current)
    assert replaced["spec"]["size"] == 3 and replaced["status"] == {"ready": True}
    with pytest.raises(ApiException) as err:
        api.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", current)
    assert err.value.status == 409
    # Custom resources allow no unconditional update, unlike most built-in kinds.
    current = api.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    del current["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as err:
        api.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", current)
    assert err.value.status == 422

    scale = api.patch_namespaced_custom_object_scale(GROUP, VERSION, "default", PLURAL, "w1", {"spec": {"replicas": 4}})
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 4
    assert api.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")["spec"]["replicas"] == 4

    # Custom resources do not support strategic merge patches, as on the real server.
    with pytest.raises(ApiException) as err:
        api.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "default",
            PLURAL,
            "w1",
            {"spec": {}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert err.value.status == 415

    deleted = api.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    assert deleted["status"] == "Success"
    with pytest.raises(ApiException) as err:
        api.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    assert err.value.status == 404
    assert '"widgets.example.com \\"w1\\" not found"' in err.value.body


def test_unknown_custom_resources_are_404(fake_api_client: kubernetes.client.ApiClient) -> None:
    with pytest.raises(ApiException) as err:
        CustomObjectsApi(fake_api_client).list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    assert err.value.status == 404


def test_crd_deletion_stops_serving(with_crd: kubernetes.client.ApiClient) -> None:
    api = CustomObjectsApi(with_crd)
    api.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1"))
    ApiextensionsV1Api(with_crd).delete_custom_resource_definition("widgets.example.com")
    with pytest.raises(ApiException) as err:
        api.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    assert err.value.status == 404


def test_invalid_crd_is_rejected(fake_api_client: kubernetes.client.ApiClient) -> None:
    crd = widget_crd()
    crd["metadata"]["name"] = "wrong.example.com"
    with pytest.raises(ApiException) as err:
        ApiextensionsV1Api(fake_api_client).create_custom_resource_definition(crd)
    assert err.value.status == 422


def test_cluster_scoped_crd(fake_api_client: kubernetes.client.ApiClient) -> None:
    ApiextensionsV1Api(fake_api_client).create_custom_resource_definition(widget_crd(scope="Cluster"))
    api = CustomObjectsApi(fake_api_client)
    api.create_cluster_custom_object(GROUP, VERSION, PLURAL, widget("global"))
    assert api.get_cluster_custom_object(GROUP, VERSION, PLURAL, "global")["metadata"].get("namespace") is None
    with pytest.raises(ApiException) as err:
        api.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("x"))
    assert err.value.status == 404


def test_dynamic_client_discovery_and_crud(with_crd: kubernetes.client.ApiClient, tmp_path: Path) -> None:
    dyn = DynamicClient(with_crd, cache_file=str(tmp_path / "discovery.json"))
    widgets = dyn.resources.get(api_version="example.com/v1", kind="Widget")
    assert widgets.namespaced and widgets.name == "widgets" and widgets.preferred
    assert set(widgets.subresources) == {"status", "scale"}
    assert dyn.resources.get(api_version="example.com/v1beta1", kind="Widget").preferred is False
    created = widgets.create(body=widget("w1"), namespace="default")
    assert created.metadata.name == "w1"
    patched = widgets.patch(
        name="w1", namespace="default", body={"spec": {"size": 5}}, content_type="application/merge-patch+json"
    )
    assert patched.spec.size == 5
    assert [w.metadata.name for w in widgets.get(namespace="default").items] == ["w1"]
    applied = dyn.server_side_apply(
        widgets, body={**widget("w1"), "spec": {"color": "red"}}, namespace="default", field_manager="celmut"
    )
    assert applied.spec.color == "red" and applied.spec.size == 5
    events = list(widgets.watch(namespace="default", name="w1", timeout=5, watcher=_FirstOnly()))
    assert [e["type"] for e in events] == ["ADDED"] and events[0]["object"].metadata.name == "w1"
    widgets.delete(name="w1", namespace="default")
    assert widgets.get(namespace="default").items == []

    pods = dyn.resources.get(api_version="v1", kind="Pod")
    assert {"status", "eviction"} <= set(pods.subresources)
    pods.create(body=pod("p1"), namespace="default")
    out = pods.patch(name="p1", namespace="default", body={"metadata": {"labels": {"x": "y"}}})
    assert out.metadata.labels.to_dict() == {"x": "y"}
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    assert deployments.namespaced and "scale" in deployments.subresources
    leases = dyn.resources.get(api_version="coordination.k8s.io/v1", kind="Lease")
    assert leases.name == "leases"
    with pytest.raises(ResourceNotFoundError):
        dyn.resources.get(api_version="example.com/v1", kind="Gadget")


def test_discovery_documents(fake_api_client: kubernetes.client.ApiClient) -> None:
    core = CoreV1Api(fake_api_client)
    resources = {r.name: r for r in core.get_api_resources().resources}
    assert resources["pods"].namespaced and resources["pods"].kind == "Pod" and "watch" in resources["pods"].verbs
    assert resources["pods"].short_names == ["po"]
    assert resources["pods/eviction"].kind == "Eviction" and resources["pods/eviction"].group == "policy"
    assert resources["pods/status"].verbs == ["get", "patch", "update"]
    assert not resources["nodes"].namespaced
    groups = {g.name for g in kubernetes.client.ApisApi(fake_api_client).get_api_versions().groups}
    assert {"apps", "batch", "coordination.k8s.io", "policy", "events.k8s.io", "apiextensions.k8s.io"} <= groups
    assert "admissionregistration.k8s.io" in groups
    apps = {r.name for r in AppsV1Api(fake_api_client).get_api_resources().resources}
    assert {"deployments", "deployments/scale", "replicasets", "statefulsets", "daemonsets"} <= apps
    ApiextensionsV1Api(fake_api_client).create_custom_resource_definition(widget_crd())
    group = kubernetes.client.ApisApi(fake_api_client).get_api_versions()
    example = next(g for g in group.groups if g.name == "example.com")
    assert example.preferred_version.version == "v1"
    assert [v.version for v in example.versions] == ["v1", "v1beta1"]


@pytest.mark.parametrize("admission", [False, True], ids=["store", "admission-chain"])
def test_a_patch_through_another_version_of_the_crd_applies_to_the_object_as_that_version_serves_it(
    fake_apiserver: FakeApiServer, admission: bool
) -> None:
    """A custom object created through v1alpha1 and patched (its status, as a controller does) through v1:
    the API server converts the stored object to the request's version first (conversion None: only
    apiVersion changes), so the patch is accepted — not refused for the apiVersion it was stored with."""
    from tests.kube.crds import policy_crds

    if admission:
        fake_apiserver.enable_webhooks()
    for definition in policy_crds():
        fake_apiserver.store.create(definition)
    api = CustomObjectsApi(fake_apiserver.api_client())
    group, plural = "policies.kyverno.io", "mutatingpolicies"
    body = {"apiVersion": f"{group}/v1alpha1", "kind": "MutatingPolicy", "metadata": {"name": "p"}, "spec": {}}
    api.create_cluster_custom_object(group, "v1alpha1", plural, body)
    patched = api.patch_cluster_custom_object_status(
        group, "v1", plural, "p", {"status": {"conditionStatus": {"ready": True}}}
    )
    assert patched["apiVersion"] == f"{group}/v1" and patched["status"] == {"conditionStatus": {"ready": True}}
    labelled = api.patch_cluster_custom_object(group, "v1", plural, "p", {"metadata": {"labels": {"a": "b"}}})
    assert labelled["metadata"]["labels"] == {"a": "b"}
    assert api.get_cluster_custom_object(group, "v1alpha1", plural, "p")["apiVersion"] == f"{group}/v1alpha1"
