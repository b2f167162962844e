"""A CustomResourceDefinition as data: :class:`CRD` and its :class:`Version` render the
``apiextensions.k8s.io/v1`` object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from celmut.install.schema import Schema

PART_OF = {"app.kubernetes.io/part-of": "celmut"}


@dataclass(frozen=True)
class Version:
    name: str
    schema: Schema
    storage: bool = False
    deprecated: bool = False
    printer_columns: tuple[dict[str, Any], ...] = ()
    status_subresource: bool = True
    selectable_fields: tuple[str, ...] = ()  # JSON paths ``kubectl get --field-selector`` may use (k8s >= 1.31)


@dataclass(frozen=True)
class CRD:
    group: str
    kind: str
    plural: str
    scope: str  # Cluster | Namespaced
    versions: tuple[Version, ...]
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def file_name(self) -> str:
        """As Kyverno's generator names them: ``<group>_<plural>.yaml``."""
        return f"{self.group}_{self.plural}.yaml"

    def to_dict(self) -> dict[str, Any]:
        names: dict[str, Any] = {
            "kind": self.kind,
            "listKind": f"{self.kind}List",
            "plural": self.plural,
            "singular": self.kind.lower(),
        }
        if self.short_names:
            names["shortNames"] = list(self.short_names)
        if self.categories:
            names["categories"] = list(self.categories)
        versions = []
        for version in self.versions:
            entry: dict[str, Any] = {"name": version.name, "served": True, "storage": version.storage}
            if version.deprecated:
                entry["deprecated"] = True
            if version.printer_columns:
                entry["additionalPrinterColumns"] = list(version.printer_columns)
            entry["schema"] = {"openAPIV3Schema": version.schema}
            if version.selectable_fields:
                entry["selectableFields"] = [{"jsonPath": path} for path in version.selectable_fields]
            if version.status_subresource:
                entry["subresources"] = {"status": {}}
            versions.append(entry)
        metadata: dict[str, Any] = {"name": self.name, "labels": dict(PART_OF)}
        if self.annotations:
            metadata["annotations"] = dict(self.annotations)
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": metadata,
            "spec": {"group": self.group, "names": names, "scope": self.scope, "versions": versions},
        }
