"""Kyverno CLI values files (``cli.kyverno.io/v1alpha1`` ``Values``) as celmut understands them.

Supported: ``globalValues`` and per-policy/per-resource ``values`` for ``request.operation``,
``namespaceSelector`` (namespace labels for selectors), and ``subresources`` (a resource of a
subresource kind, such as ``Binding``, is admitted as ``pods/binding``). Other keys are kept in
``variables`` and bound as policy variables when a policy declares a variable of that name.

A field of the wrong shape (a scalar file, ``policies`` that is not a list …) is a
:class:`~celmut.sources.documents.DocumentError` naming the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from celmut.sources.documents import DocumentError, describe_type, load_single


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


class _Shape:
    """Reads a values document, raising a DocumentError that names the file and field of a wrong shape."""

    def __init__(self, path: str) -> None:
        self.path = path

    def mapping(self, value: Any, where: str) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise DocumentError(self.path, f"{where}: must be a map, not {describe_type(value)}")
        return value

    def items(self, parent: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
        value = parent.get(key)
        if value is None:
            return []
        field_path = f"{where}.{key}" if where else key
        if not isinstance(value, list):
            raise DocumentError(self.path, f"{field_path}: must be a list, not {describe_type(value)}")
        return [self.mapping(item, f"{field_path}[{i}]") for i, item in enumerate(value)]


def load_values(path: str | Path) -> Values:
    """The values file at ``path`` (a file holding exactly one Values document)."""
    return parse_values(load_single(path), str(path))


def parse_values(doc: Any, path: str = "<values>") -> Values:
    values = Values()
    shape = _Shape(path)
    doc = shape.mapping(doc, "the values document")
    if not doc:
        return values
    values.global_values = dict(shape.mapping(doc.get("globalValues"), "globalValues"))
    for i, policy in enumerate(shape.items(doc, "policies", "")):
        for j, resource in enumerate(shape.items(policy, "resources", f"policies[{i}]")):
            key = (str(policy.get("name", "")), str(resource.get("name", "")))
            where = f"policies[{i}].resources[{j}].values"
            values.per_resource[key] = dict(shape.mapping(resource.get("values"), where))
    for i, selector in enumerate(shape.items(doc, "namespaceSelector", "")):
        labels = shape.mapping(selector.get("labels"), f"namespaceSelector[{i}].labels")
        values.namespace_labels[str(selector.get("name", ""))] = dict(labels)
    for i, item in enumerate(shape.items(doc, "subresources", "")):
        parent = shape.mapping(item.get("parentResource"), f"subresources[{i}].parentResource")
        sub = shape.mapping(item.get("subresource"), f"subresources[{i}].subresource")
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
