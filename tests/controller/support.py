"""Policies and a running controller for end-to-end tests against the fake API server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from celmut.controller.run import Controller, ControllerConfig
from celmut.kube.client import Cluster
from tests.fakekube import FakeApiServer
from tests.service.settings_support import take_service

RULE_CONFIGMAPS = {
    "apiGroups": [""],
    "apiVersions": ["v1"],
    "operations": ["CREATE", "UPDATE"],
    "resources": ["configmaps"],
}
RULE_PODS = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}


def policy(
    name: str,
    expression: str,
    *,
    rule: dict[str, Any] = RULE_CONFIGMAPS,
    admission: bool = False,
    mutate_existing: bool = True,
    target_expression: str | None = None,
    conditions: list[str] = (),  # type: ignore[assignment]
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "evaluation": {"admission": {"enabled": admission}, "mutateExisting": {"enabled": mutate_existing}},
        "autogen": {"podControllers": {"controllers": []}},
        "matchConstraints": {"resourceRules": [rule]},
        "matchConditions": [{"name": f"c{i}", "expression": c} for i, c in enumerate(conditions)],
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}],
    }
    if target_expression is not None:
        spec["targetMatchConstraints"] = {"expression": target_expression}
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": metadata, "spec": spec}


def add_label(key: str, value: str = "true", *, cel_value: str | None = None) -> str:
    """A JSONPatch expression adding one label (``cel_value``: a CEL expression instead of a string)."""
    value_cel = cel_value or f'"{value}"'
    return (
        f'has(object.metadata.labels) ? [JSONPatch{{op: "add", path: "/metadata/labels/{key}", value: {value_cel}}}]'
        f' : [JSONPatch{{op: "add", path: "/metadata/labels", value: {{"{key}": {value_cel}}}}}]'
    )


def configmap(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


def labels_of(server: FakeApiServer, name: str, namespace: str = "default") -> dict[str, str]:
    return dict(server.store.get("configmaps", name, namespace)["metadata"].get("labels") or {})


def cached_as_stored(controller: Controller, server: FakeApiServer, name: str, namespace: str = "default") -> bool:
    """Whether the controller's ConfigMap cache holds ``name`` as the API server stores it (its watch has
    delivered every write to it, the controller's own included)."""
    cache = controller.caches.existing("v1", "configmaps")
    cached = cache.get(namespace, name) if cache is not None else None
    stored = server.store.get("configmaps", name, namespace)
    return cached is not None and cached["metadata"].get("resourceVersion") == stored["metadata"]["resourceVersion"]


def write_policies(directory: Path, *documents: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for document in documents:
        (directory / f"{document['metadata']['name']}.yaml").write_text(yaml.safe_dump(document))
    return directory


def connect(server: FakeApiServer, tmp_path: Path, name: str = "controller") -> Cluster:
    return Cluster.connect(str(server.kubeconfig(tmp_path / f"kubeconfig-{name}")), timeout=5)


@contextmanager
def running(server: FakeApiServer, tmp_path: Path, policy_dir: Path, **settings: Any) -> Iterator[Controller]:
    options: dict[str, Any] = {"rate": 1000.0, "workers": 1, "reload_interval": 0.05, "scan_interval": 0.0}
    options.update(settings)
    cluster = connect(server, tmp_path, str(options.get("identity", "controller")))
    options["policy_paths"] = [str(policy_dir)]
    controller = Controller(ControllerConfig(service=take_service(options), **options), cluster).start()
    try:
        yield controller
    finally:
        controller.stop()
        cluster.close()
