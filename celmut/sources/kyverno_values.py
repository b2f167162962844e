"""Kyverno CLI values files (``cli.kyverno.io/v1alpha1`` ``Values``) as celmut understands them.

Supported: ``globalValues`` and per-policy/per-resource ``values`` for ``request.operation``,
``namespaceSelector`` (namespace labels for selectors), and ``subresources`` (a resource of a
subresource kind, such as ``Binding``, is admitted as ``pods/binding``). Other keys are kept in
``variables`` and bound as policy variables when a policy declares a variable of that name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Subresource:
    kind: str
    parent_resource: str  # plural, e.g. pods
    parent_kind: str
    name: str  # e.g. binding
    version: str
    group: str = ""


@dataclass
class Values:
    global_values: dict[str, Any] = field(default_factory=dict)
    per_resource: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (policy, resource) → values
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    subresources: list[Subresource] = field(default_factory=list)

    def for_resource(self, policy: str, resource: str) -> dict[str, Any]:
        merged = dict(self.global_values)
        merged.update(self.per_resource.get(("", resource), {}))
        merged.update(self.per_resource.get((policy, resource), {}))
        return merged

    def operation(self, resource: str, default: str) -> str:
        for (_, name), values in self.per_resource.items():
            if name == resource and "request.operation" in values:
                return str(values["request.operation"])
        return str(self.global_values.get("request.operation", default))

    def subresource_for(self, kind: str) -> Subresource | None:
        return next((s for s in self.subresources if s.kind == kind), None)

    def namespace_objects(self) -> list[dict[str, Any]]:
        return [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
            for name, labels in self.namespace_labels.items()
        ]


def parse_values(doc: dict[str, Any] | None) -> Values:
    values = Values()
    if not doc:
        return values
    values.global_values = dict(doc.get("globalValues") or {})
    for policy in doc.get("policies") or []:
        for resource in policy.get("resources") or []:
            key = (str(policy.get("name", "")), str(resource.get("name", "")))
            values.per_resource[key] = dict(resource.get("values") or {})
    for selector in doc.get("namespaceSelector") or []:
        values.namespace_labels[str(selector.get("name", ""))] = dict(selector.get("labels") or {})
    for item in doc.get("subresources") or []:
        parent, sub = item.get("parentResource") or {}, item.get("subresource") or {}
        parent_name, _, sub_name = str(sub.get("name", "")).partition("/")
        values.subresources.append(
            Subresource(
                kind=str(sub.get("kind", "")),
                parent_resource=parent_name or str(parent.get("name", "")),
                parent_kind=str(parent.get("kind", "")),
                name=sub_name,
                version=str(sub.get("version") or parent.get("version") or "v1"),
                group=str(sub.get("group") or parent.get("group") or ""),
            )
        )
    return values
