"""Small manifest builders shared by the fake API server tests."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def pod(
    name: str, labels: dict[str, str] | None = None, namespace: str | None = None, image: str = "nginx:1.27"
) -> Obj:
    """A minimal valid Pod."""
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = labels
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "app", "image": image, "env": [{"name": "A", "value": "1"}]}]},
    }


def config_map(name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> Obj:
    """A ConfigMap."""
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {}}


def widget_crd(scope: str = "Namespaced") -> Obj:
    """A CRD for ``widgets.example.com`` (v1 served+storage, v1beta1 served) with status and scale."""
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    subresources = {
        "status": {},
        "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
    }
    names = {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]}
    return _widgets_crd(
        scope,
        names,
        [
            {"name": "v1", "served": True, "storage": True, "schema": schema, "subresources": subresources},
            {"name": "v1beta1", "served": True, "storage": False, "schema": schema},
        ],
    )


def structural_widget_crd(spec_properties: Obj) -> Obj:
    """A CRD for ``widgets.example.com`` (v1 only) whose ``spec`` has the structural schema
    ``spec_properties``: what celmut types and merges a Widget by."""
    spec_schema = {"type": "object", "properties": spec_properties}
    schema = {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}}
    names = {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"}
    return _widgets_crd("Namespaced", names, [{"name": "v1", "served": True, "storage": True, "schema": schema}])


def _widgets_crd(scope: str, names: Obj, versions: list[Obj]) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": scope, "names": names, "versions": versions},
    }


def widget(name: str, size: int = 1, labels: dict[str, str] | None = None) -> Obj:
    """A Widget custom object."""
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta, "spec": {"size": size, "replicas": 1}}
