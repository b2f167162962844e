"""Minimal CustomResourceDefinitions for the kinds celmut reads, to install in the fake API server."""

from __future__ import annotations

from typing import Any

from celmut.kube.policy_source import POLICY_KINDS, WatchedKind

_NAMESPACED = {"NamespacedMutatingPolicy", "PolicyException", "PodPinningPlan"}


def crd(spec: WatchedKind, versions: tuple[str, ...] | None = None) -> dict[str, Any]:
    served = versions or spec.versions[:1]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{spec.resource}.{spec.group}"},
        "spec": {
            "group": spec.group,
            "scope": "Namespaced" if spec.kind in _NAMESPACED else "Cluster",
            "names": {"plural": spec.resource, "singular": spec.kind.lower(), "kind": spec.kind},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": index == 0,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
                for index, version in enumerate(served)
            ],
        },
    }


def policy_crds() -> list[dict[str, Any]]:
    """CRDs for every custom kind celmut watches (the built-in kinds need none)."""
    return [crd(spec) for spec in POLICY_KINDS if spec.group and not spec.group.endswith("k8s.io")]


def spec_of(kind: str) -> WatchedKind:
    return next(spec for spec in POLICY_KINDS if spec.kind == kind)
