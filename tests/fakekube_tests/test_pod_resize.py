"""``pods/resize`` as kube-apiserver v1.36 serves it (kubernetes ``pkg/registry/core/pod/strategy.go``
``podResizeStrategy``, ``pkg/apis/core/validation/validation.go`` ``ValidatePodResize``), through the real
client: what a plain pod update refuses, the resize subresource takes — and only that."""

from __future__ import annotations

from typing import Any

import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from tests.fakekube import FakeApiServer


def pod(**requests: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx",
                    "resources": {"requests": {"cpu": "100m", "memory": "16Mi", **requests}, "limits": {"cpu": "500m"}},
                }
            ]
        },
    }


def patch(core: kubernetes.client.CoreV1Api, ops: list[dict[str, Any]], resize: bool) -> dict[str, Any]:
    """A JSON patch of the pod, or of its resize subresource (the client's typed API)."""
    send = core.patch_namespaced_pod_resize if resize else core.patch_namespaced_pod
    return dict(core.api_client.sanitize_for_serialization(send("web", "default", ops)))


CPU = {"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": "200m"}


def test_a_resources_change_is_refused_on_the_pod_and_taken_through_resize(fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.store.create(pod())
    core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
    with pytest.raises(ApiException) as refused:
        patch(core, [CPU], resize=False)
    assert refused.value.status == 422 and "pod updates may not change fields" in refused.value.body
    resized = patch(core, [CPU], resize=True)
    assert resized["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "200m"


def test_resize_keeps_only_container_resources(fake_apiserver: FakeApiServer) -> None:
    """``dropNonResizeUpdates``: a label or an image in the same update is dropped, not refused."""
    fake_apiserver.store.create(pod())
    core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
    ops = [CPU, {"op": "add", "path": "/metadata/labels/team", "value": "a"},
           {"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:2"}]  # fmt: skip
    resized = patch(core, ops, resize=True)
    assert resized["metadata"]["labels"] == {"app": "web"}
    assert resized["spec"]["containers"][0]["image"] == "nginx"
    assert resized["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "200m"


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        (
            [{"op": "remove", "path": "/spec/containers/0/resources/requests/memory"}],
            "resource requests cannot be removed",
        ),
        (
            [{"op": "add", "path": "/spec/containers/0/resources/requests/ephemeral-storage", "value": "1Gi"}],
            "only cpu and memory resources are mutable",
        ),
        (
            [
                {"op": "remove", "path": "/spec/containers/0/resources/requests"},
                {"op": "remove", "path": "/spec/containers/0/resources/limits"},
            ],
            "Pod QOS Class may not change as a result of resizing",
        ),
    ],
    ids=["requests removed", "not cpu or memory", "QoS class changed"],
)
def test_validate_pod_resize_refuses(fake_apiserver: FakeApiServer, ops: list[dict[str, Any]], message: str) -> None:
    fake_apiserver.store.create(pod())
    core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
    with pytest.raises(ApiException) as refused:
        patch(core, ops, resize=True)
    assert refused.value.status == 422 and message in refused.value.body
