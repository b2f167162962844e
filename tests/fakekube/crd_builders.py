"""Custom resource definitions the admission tests register: an open schema, served at two versions."""

from __future__ import annotations

from typing import Any


def open_crd(group: str, plural: str, kind: str, versions: tuple[str, ...] = ("v1", "v2")) -> dict[str, Any]:
    """A namespaced CRD that keeps any field, served at ``versions`` (the first stored): what
    ``matchPolicy: Equivalent`` matching across versions needs."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": version == versions[0],
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
                for version in versions
            ],
        },
    }
