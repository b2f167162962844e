"""Kyverno CLI values files (``cli.kyverno.io/v1alpha1`` ``Values``) as celmut understands them.

Supported: ``globalValues`` and per-policy/per-resource ``values`` for ``request.operation``,
``namespaceSelector`` (namespace labels for selectors), and ``subresources`` (a resource of a
subresource kind, such as ``Binding``, is admitted as ``pods/binding``). Other keys are kept in
``variables`` and bound as policy variables when a policy declares a variable of that name.

A field of the wrong shape (a scalar file, ``policies`` that is not a list …) is a
:class:`~celmut.sources.documents.DocumentError` naming the file and the field. Kyverno reads the file
with ``UnmarshalStrict`` (``cmd/cli/kubectl-kyverno/values/load.go`` → ``utils/common`` ``LoadYAML``), so
struct keys match case-insensitively and an unknown one is an error (:mod:`celmut.sources.go_json`); the
keys of ``globalValues``, ``values``, ``foreachValues`` and ``labels`` are data and stay as written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from celmut.sources.documents import DocumentError, describe_type, load_single
from celmut.sources.go_json import OBJECT_META_FIELDS, TYPE_META_FIELDS, strict_fields

# cmd/cli/kubectl-kyverno/apis/v1alpha1: values_spec.go (ValuesSpec, inlined in Values and a Test's
# ``values``), policy.go, resource.go, rule.go, namespace_selector.go, subresource.go (metav1.APIResource).
SPEC_FIELDS = ("globalValues", "policies", "namespaceSelector", "subresources")
POLICY_FIELDS = ("name", "resources", "rules")
RESOURCE_FIELDS = ("name", "values")
RULE_FIELDS = ("name", "values", "foreachValues")
NAMESPACE_SELECTOR_FIELDS = ("name", "labels")
SUBRESOURCE_FIELDS = ("subresource", "parentResource")
API_RESOURCE_FIELDS = (
    "name", "singularName", "namespaced", "group", "version", "kind", "verbs", "shortNames", "categories",
    "storageVersionHash",
)  # fmt: skip


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

    def struct(self, value: Any, where: str, fields: tuple[str, ...]) -> dict[str, Any]:
        """A Go struct: keys folded onto ``fields``, an unknown key an error."""
        return strict_fields(self.mapping(value, where), fields, where, self.path)

    def items(self, parent: dict[str, Any], key: str, where: str, fields: tuple[str, ...]) -> list[dict[str, Any]]:
        value = parent.get(key)
        if value is None:
            return []
        field_path = f"{where}.{key}" if where else key
        if not isinstance(value, list):
            raise DocumentError(self.path, f"{field_path}: must be a list, not {describe_type(value)}")
        return [self.struct(item, f"{field_path}[{i}]", fields) for i, item in enumerate(value)]


def load_values(path: str | Path) -> Values:
    """The values file at ``path`` (a file holding exactly one Values document)."""
    return parse_values(load_single(path), str(path))


def parse_values(doc: Any, path: str = "<values>", *, inline: bool = False) -> Values:
    """A Values document; ``inline`` for a Test's ``values:`` (a bare ValuesSpec, no apiVersion/kind)."""
    values = Values()
    shape = _Shape(path)
    fields = SPEC_FIELDS if inline else (*TYPE_META_FIELDS, "metadata", *SPEC_FIELDS)
    doc = shape.struct(doc, "", fields) if isinstance(doc, dict) else shape.mapping(doc, "the values document")
    if not doc:
        return values
    if not inline:
        shape.struct(doc.get("metadata"), "metadata", OBJECT_META_FIELDS)
    values.global_values = dict(shape.mapping(doc.get("globalValues"), "globalValues"))
    for i, policy in enumerate(shape.items(doc, "policies", "", POLICY_FIELDS)):
        shape.items(policy, "rules", f"policies[{i}]", RULE_FIELDS)
        for j, resource in enumerate(shape.items(policy, "resources", f"policies[{i}]", RESOURCE_FIELDS)):
            key = (str(policy.get("name", "")), str(resource.get("name", "")))
            where = f"policies[{i}].resources[{j}].values"
            values.per_resource[key] = dict(shape.mapping(resource.get("values"), where))
    for i, selector in enumerate(shape.items(doc, "namespaceSelector", "", NAMESPACE_SELECTOR_FIELDS)):
        labels = shape.mapping(selector.get("labels"), f"namespaceSelector[{i}].labels")
        values.namespace_labels[str(selector.get("name", ""))] = dict(labels)
    for i, item in enumerate(shape.items(doc, "subresources", "", SUBRESOURCE_FIELDS)):
        parent = shape.struct(item.get("parentResource"), f"subresources[{i}].parentResource", API_RESOURCE_FIELDS)
        sub = shape.struct(item.get("subresource"), f"subresources[{i}].subresource", API_RESOURCE_FIELDS)
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
