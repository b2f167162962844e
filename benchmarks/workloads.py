"""Shared benchmark inputs: a realistic ~6 KB Pod and the expressions measured on it."""

from __future__ import annotations

import json
import uuid
from typing import Any

import orjson


def realistic_pod(name: str = "checkout-7d4b9c6f5-x2x9q", env: int = 16) -> dict[str, Any]:
    """A ~6 KB Pod: 3 containers with env (``env`` plain variables and one from a field each),
    resources, probes, mounts; labels and annotations."""

    def container(index: int, image: str) -> dict[str, Any]:
        return {
            "name": f"app-{index}",
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "ports": [{"containerPort": 8080 + index, "protocol": "TCP", "name": f"http-{index}"}],
            "env": [{"name": f"SETTING_{j}", "value": f"value-{j}-for-container-{index}"} for j in range(env)]
            + [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080 + index}, "periodSeconds": 10},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080 + index}, "periodSeconds": 5},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}, {"name": "cache", "mountPath": "/cache"}],
        }

    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "labels": {
                "app": "web",
                "app.kubernetes.io/name": "checkout",
                "app.kubernetes.io/version": "2.14.1",
                "pod-template-hash": "7d4b9c6f5",
                "team": "payments",
            },
            "annotations": {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "kubectl.kubernetes.io/restartedAt": "2026-11-01T10:00:00Z",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "checkout-7d4b9c6f5",
                    "uid": "5b7c1e0e-1111-2222-3333-444455556666",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "serviceAccountName": "checkout",
            "containers": [
                container(0, "registry.example.com/shop/checkout:2.14.1"),
                container(1, "busybox:1.36"),
                container(2, "nginx:1.27"),
            ],
            "volumes": [
                {"name": "config", "configMap": {"name": "checkout-config"}},
                {"name": "cache", "emptyDir": {}},
            ],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "shop", "effect": "NoSchedule"}],
        },
    }
    return pod


def pod_with_env(env: int = 12) -> dict[str, Any]:
    """The all-pods benchmark Pod: :func:`realistic_pod` with 12 env vars per container (11 values and one field
    reference)."""
    return realistic_pod(env=env - 1)


MATCH_EXPRESSION = (
    'has(object.metadata.labels) && object.metadata.labels["app"] == "web" && '
    'object.spec.containers.exists(c, c.image.startsWith("nginx"))'
)
# The JSONPatch-building map/filter, written with map literals so stock cel-python can run it too.
PATCH_EXPRESSION_MAPS = (
    "object.spec.containers.filter(c, !has(c.securityContext)).map(c, "
    '{"op": dyn("add"), "path": dyn("/spec/containers/" + c.name + "/securityContext"), '
    '"value": dyn({"runAsNonRoot": true, "allowPrivilegeEscalation": false})})'
)
PATCH_EXPRESSION_TYPED = (
    "object.spec.containers.filter(c, !has(c.securityContext)).map(c, "
    'JSONPatch{op: "add", path: "/spec/containers/" + c.name + "/securityContext", '
    'value: {"runAsNonRoot": true, "allowPrivilegeEscalation": false}})'
)


def pod_size_bytes() -> int:
    return len(json.dumps(realistic_pod()))


def admission_review(pod: dict[str, Any]) -> bytes:
    """A realistic AdmissionReview (CREATE of ``pod`` by the ReplicaSet controller)."""
    request = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
        "requestResource": {"group": "", "version": "v1", "resource": "pods"},
        "name": pod["metadata"]["name"],
        "namespace": pod["metadata"]["namespace"],
        "operation": "CREATE",
        "userInfo": {
            "username": "system:serviceaccount:kube-system:replicaset-controller",
            "uid": "2d7b1a5e-1c9f-4d8e-9d6b-7f1f3a0b2c11",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
        },
        "object": pod,
        "oldObject": None,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions", "fieldManager": "kube-controller-manager"},
    }
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
