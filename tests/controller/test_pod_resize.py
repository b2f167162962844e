"""mutateExisting targets a policy routes through ``pods/resize`` (Kubernetes 1.33+, kyverno
``pkg/background/mpol/processor.go`` writes them through the subresource its targetMatchConstraints name):
the containers' resources go through the subresource, what else a running pod accepts through the pod, and
a resize the API server refuses fails the target with its message, nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually

from .support import running, write_policies

RESIZE_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods/resize"]}


def resize_policy(name: str, *patches: str) -> dict[str, Any]:
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": name},
        "spec": {
            "evaluation": {"admission": {"enabled": False}, "mutateExisting": {"enabled": True}},
            "autogen": {"podControllers": {"controllers": []}},
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "targetMatchConstraints": {"resourceRules": [RESIZE_RULE]},
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": f"[{', '.join(patches)}]"}}],
        },
    }


def pod() -> dict[str, Any]:
    resources = {"requests": {"cpu": "100m", "memory": "16Mi"}, "limits": {"cpu": "500m", "memory": "64Mi"}}
    container = {"name": "app", "image": "nginx", "resources": resources}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"containers": [container]}}  # fmt: skip


CPU = 'JSONPatch{op: "replace", path: "/spec/containers/0/resources/requests/cpu", value: "200m"}'
LABEL = 'JSONPatch{op: "add", path: "/metadata/labels", value: {"resized": "yes"}}'
NO_LIMITS = 'JSONPatch{op: "remove", path: "/spec/containers/0/resources/limits"}'


def test_resources_go_through_pods_resize_and_a_label_through_the_pod(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake_apiserver.store.create(pod())
    policies = write_policies(tmp_path / "policies", resize_policy("resize-web", CPU, LABEL))
    with running(fake_apiserver, tmp_path, policies) as controller:
        eventually(lambda: any(o.action == "patched" for o in controller.report.outcomes()), what="the resize")
        stored = fake_apiserver.store.get("pods", "web", "default")
    assert stored["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "200m"
    assert stored["metadata"]["labels"] == {"resized": "yes"}
    paths = [r.path for r in fake_apiserver.requests_matching("PATCH", r"/pods/web")]
    assert paths == ["/api/v1/namespaces/default/pods/web/resize", "/api/v1/namespaces/default/pods/web"]


def test_a_refused_resize_fails_the_target_and_writes_nothing(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """Limits cannot be removed by a resize (ValidatePodResize): the API server refuses it, and the label the
    same policy adds is not written either."""
    fake_apiserver.store.create(pod())
    policies = write_policies(tmp_path / "policies", resize_policy("resize-web", NO_LIMITS, LABEL))
    with running(fake_apiserver, tmp_path, policies) as controller:
        eventually(lambda: any(o.action == "failed" for o in controller.report.outcomes()), what="the failure")
        (failed,) = (o for o in controller.report.outcomes() if o.action == "failed")
    assert failed.message.startswith("pods/resize: 422") and failed.failed == ["resize-web"]
    assert failed.message.endswith("spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed")
    assert "labels" not in fake_apiserver.store.get("pods", "web", "default")["metadata"]
