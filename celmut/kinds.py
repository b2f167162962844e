"""Kubernetes kind ↔ resource naming and scope, without an API server.

Built-in kinds use their real plural and scope; other kinds fall back to the API server's own
guess (``UnsafeGuessKindToResource``: lower-case, ``-s``/``-es``/``-ies``; a vowel before a final
``y`` keeps it, ``Gateway`` → ``gateways``, as real CRDs spell it) unless the :class:`KindTable` in
use was built with their CRD. The module functions (:func:`resource_for`, …) know built-in kinds only.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import orjson


@dataclass(frozen=True)
class GroupVersionKind:
    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclass(frozen=True)
class GroupVersionResource:
    group: str
    version: str
    resource: str


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def qualified_resource(api_version: str, resource: str) -> str:
    """``configmaps`` or ``deployments.apps``, as the API server names a resource in messages."""
    group, _ = split_api_version(api_version)
    return f"{resource}.{group}" if group else resource


def gvk_of(obj: Mapping[str, Any]) -> GroupVersionKind:
    group, version = split_api_version(str(obj.get("apiVersion", "")))
    return GroupVersionKind(group, version, str(obj.get("kind", "")))


_IRREGULAR_PLURALS = {"Endpoints": "endpoints", "PodMetrics": "pods", "NodeMetrics": "nodes"}

CLUSTER_SCOPED_KINDS = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "StorageClass",
        "CSIDriver",
        "CSINode",
        "VolumeAttachment",
        "PriorityClass",
        "RuntimeClass",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "APIService",
        "CertificateSigningRequest",
        "IngressClass",
        "ComponentStatus",
        "FlowSchema",
        "PriorityLevelConfiguration",
        "TokenReview",
        "SubjectAccessReview",
        "SelfSubjectAccessReview",
        "SelfSubjectRulesReview",
        "MutatingPolicy",
        "ClusterPolicy",
        "PodMutation",
        "DeviceClass",
        "ResourceSlice",
        "IPAddress",
        "ServiceCIDR",
        "ValidatingPolicy",
        "GeneratingPolicy",
        "ImageValidatingPolicy",
        "DeletingPolicy",
        "GlobalContextEntry",
    }
)


def guess_resource(kind: str) -> str:
    """The API server's plural guess for a kind."""
    if kind in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[kind]
    singular = kind.lower()
    if not singular:
        return ""
    if singular.endswith("s"):
        return singular + "es"
    if singular.endswith("y") and (len(singular) < 2 or singular[-2] not in "aeiou"):
        return singular[:-1] + "ies"
    return singular + "s"


def _version_key(directory: str) -> tuple[int, ...]:
    """``v1.37.0-local`` → (1, 37, 0)."""
    return tuple(int(part) for part in directory[1:].split("-", 1)[0].split(".") if part.isdigit())


@functools.cache
def bundled_definitions(kubernetes_version: str | None = None) -> dict[str, Any]:
    """The OpenAPI definitions of built-in kinds shipped by ``kubernetes-validate`` (newest version
    unless one is asked for), read once: the cache holds immutable upstream data, never state."""
    root = _schema_root()
    versions = [p.name for p in root.iterdir() if p.name.endswith("-local")]
    wanted = f"v{kubernetes_version}-local" if kubernetes_version else None
    chosen = wanted if wanted in versions else max(versions, key=_version_key)
    definitions: dict[str, Any] = orjson.loads(root.joinpath(chosen, "_definitions.json").read_bytes())["$defs"]
    return definitions


def _schema_root() -> Traversable:
    """kubernetes-validate's schema directory, found without importing the package: its
    ``__init__`` imports jsonschema (~0.1 s), and celmut only reads its data files."""
    spec = importlib.util.find_spec("kubernetes_validate")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if locations and Path(locations[0], "kubernetes-json-schema").is_dir():
        return Path(locations[0], "kubernetes-json-schema")
    return resources.files("kubernetes_validate").joinpath("kubernetes-json-schema")  # e.g. a zipped install


@functools.cache
def _builtin_kind_index() -> dict[tuple[str, str], str]:
    """(group, plural) → kind for every built-in kind, from the bundled Kubernetes schemas."""
    index: dict[tuple[str, str], str] = {}
    for node in bundled_definitions().values():
        for gvk in node.get("x-kubernetes-group-version-kind", ()):
            kind = gvk.get("kind", "")
            index[(gvk.get("group", ""), _IRREGULAR_PLURALS.get(kind) or guess_resource(kind))] = kind
    return index


class KindTable:
    """Kind ↔ resource naming and scope: built-in kinds, then the CustomResourceDefinitions it was
    built with. Immutable once built: whoever knows CRDs (a policy store, an offline cluster) builds
    its own table, so nothing is shared between stores or left behind by a reload."""

    def __init__(self, crds: Iterable[Mapping[str, Any]] = ()) -> None:
        self._crds: dict[tuple[str, str], tuple[str, bool]] = {}  # (group, kind) → (plural, namespaced)
        self._resource_kinds: dict[tuple[str, str], str] = {}  # (group, plural) → kind
        for crd in crds:
            spec = crd.get("spec") or {}
            names = spec.get("names") or {}
            group, kind, plural = spec.get("group", ""), names.get("kind", ""), names.get("plural", "")
            if kind and plural:
                self._crds[(group, kind)] = (plural, spec.get("scope", "Namespaced") == "Namespaced")
                self._resource_kinds[(group, plural)] = kind

    def kind_for(self, api_version: str, resource: str) -> str:
        """The kind served as ``resource`` (plural); a capitalised singular guess when unknown."""
        group, _ = split_api_version(api_version)
        kind = self._resource_kinds.get((group, resource)) or _builtin_kind_index().get((group, resource))
        if kind:
            return kind
        singular = resource[:-3] + "y" if resource.endswith("ies") else resource.removesuffix("s")
        return singular[:1].upper() + singular[1:]

    def resource_for(self, api_version: str, kind: str) -> str:
        group, _ = split_api_version(api_version)
        crd = self._crds.get((group, kind))
        return crd[0] if crd else guess_resource(kind)

    def is_namespaced(self, api_version: str, kind: str) -> bool:
        group, _ = split_api_version(api_version)
        crd = self._crds.get((group, kind))
        if crd is not None:
            return crd[1]
        return kind not in CLUSTER_SCOPED_KINDS

    def gvr_of(self, obj: Mapping[str, Any]) -> GroupVersionResource:
        gvk = gvk_of(obj)
        return GroupVersionResource(gvk.group, gvk.version, self.resource_for(gvk.api_version, gvk.kind))


BUILTIN = KindTable()  # built-in kinds, and the API server's guess for everything else

kind_for = BUILTIN.kind_for
resource_for = BUILTIN.resource_for
is_namespaced = BUILTIN.is_namespaced
gvr_of = BUILTIN.gvr_of
