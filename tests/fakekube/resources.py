"""The resource types the fake API server serves: built-in kinds plus those of created CRDs, and discovery.

A :class:`ResourceType` is one (group, version, plural) with its kind, scope, verbs and subresources; the
:class:`Registry` looks them up by URL parts, by apiVersion/kind or by a short name, registers the types a
CustomResourceDefinition defines, and renders the discovery documents (``/api``, ``/apis``, ...).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS: tuple[str, ...] = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

#: Subresources whose requests address a different kind: name -> (group, version, kind, verbs).
_SUBRESOURCE_KINDS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "eviction": ("policy", "v1", "Eviction", ("create",)),
    "scale": ("autoscaling", "v1", "Scale", ("get", "patch", "update")),
    "finalize": ("", "", "", ("update",)),
}
_MAIN_KIND_SUBRESOURCE_VERBS: tuple[str, ...] = ("get", "patch", "update")


@dataclass(frozen=True)
class ResourceType:
    """One served resource: ``group``/``version``/``plural`` plus its kind, scope, verbs and subresources."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    #: Built-in kinds are typed: their list items carry no apiVersion/kind, as the real server sends them.
    builtin: bool = True
    #: Kinds whose registry sets ``ReturnDeletedObject``: DELETE answers with the object, not a Status.
    returns_deleted_object: bool = False
    #: For a CRD's scale subresource: (specReplicasPath, statusReplicasPath, labelSelectorPath).
    scale_paths: tuple[str, str, str] | None = field(default=None, compare=False)

    @property
    def api_version(self) -> str:
        """``v1`` or ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        """The kind of a list response, e.g. ``PodList``."""
        return f"{self.kind}List"

    @property
    def gvr(self) -> tuple[str, str, str]:
        """The (group, version, plural) key."""
        return (self.group, self.version, self.plural)

    @property
    def storage_key(self) -> tuple[str, str, str]:
        """Where its objects are kept: every served version of a CRD shares one storage (its objects are
        read through any of them), as on the API server; a built-in kind is kept per version."""
        return (self.group, self.version if self.builtin else "", self.plural)

    def singular_name(self) -> str:
        """``singularName`` as discovery reports it."""
        return self.singular or self.kind.lower()

    def discovery_entries(self) -> list[dict[str, Any]]:
        """The APIResource entries of this type and its subresources."""
        main: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular_name(),
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }
        if self.short_names:
            main["shortNames"] = list(self.short_names)
        if self.categories:
            main["categories"] = list(self.categories)
        entries = [main]
        for sub in self.subresources:
            group, version, kind, verbs = _SUBRESOURCE_KINDS.get(sub, ("", "", "", _MAIN_KIND_SUBRESOURCE_VERBS))
            entry: dict[str, Any] = {"name": f"{self.plural}/{sub}", "singularName": "", "namespaced": self.namespaced}
            if kind:
                entry.update(group=group, version=version, kind=kind)
            else:
                entry["kind"] = self.kind
            entry["verbs"] = list(verbs)
            entries.append(entry)
        return entries


def _t(
    group: str,
    plural: str,
    kind: str,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    subs: tuple[str, ...] = (),
    all_category: bool = False,
    verbs: tuple[str, ...] = ALL_VERBS,
    returns_deleted: bool = False,
) -> ResourceType:
    return ResourceType(
        group=group,
        version="v1",
        plural=plural,
        kind=kind,
        namespaced=namespaced,
        short_names=short,
        categories=("all",) if all_category else (),
        subresources=subs,
        verbs=verbs,
        returns_deleted_object=returns_deleted,
    )


_NS_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")

BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _t("", "namespaces", "Namespace", False, ("ns",), ("finalize", "status"), verbs=_NS_VERBS, returns_deleted=True),
    _t(
        "",
        "pods",
        "Pod",
        True,
        ("po",),
        ("eviction", "resize", "status", "ephemeralcontainers", "exec", "attach", "portforward"),
        True,
        returns_deleted=True,
    ),
    _t("", "configmaps", "ConfigMap", True, ("cm",)),
    _t("", "secrets", "Secret"),
    _t("", "replicationcontrollers", "ReplicationController", True, ("rc",), ("status", "scale"), True),
    _t("", "services", "Service", True, ("svc",), ("status",), True, returns_deleted=True),
    _t("", "endpoints", "Endpoints", True, ("ep",)),
    _t("", "events", "Event", True, ("ev",)),
    _t("", "serviceaccounts", "ServiceAccount", True, ("sa",), returns_deleted=True),
    _t("", "nodes", "Node", False, ("no",), ("status",)),
    _t("", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",), ("status",)),
    _t("", "persistentvolumes", "PersistentVolume", False, ("pv",), ("status",)),
    _t("apps", "deployments", "Deployment", True, ("deploy",), ("scale", "status"), True),
    _t("apps", "replicasets", "ReplicaSet", True, ("rs",), ("scale", "status"), True),
    _t("apps", "statefulsets", "StatefulSet", True, ("sts",), ("scale", "status"), True),
    _t("apps", "daemonsets", "DaemonSet", True, ("ds",), ("status",), True),
    _t("batch", "jobs", "Job", True, (), ("status",), True),
    _t("batch", "cronjobs", "CronJob", True, ("cj",), ("status",), True),
    _t("coordination.k8s.io", "leases", "Lease"),
    _t("policy", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",), ("status",)),
    _t("events.k8s.io", "events", "Event", True, ("ev",)),
    _t("networking.k8s.io", "ingresses", "Ingress", True, ("ing",), ("status",)),
    _t("networking.k8s.io", "networkpolicies", "NetworkPolicy", True, ("netpol",)),
    _t("rbac.authorization.k8s.io", "roles", "Role"),
    _t("rbac.authorization.k8s.io", "rolebindings", "RoleBinding"),
    _t("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", False),
    _t("rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", False),
    _t("authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview", False, verbs=("create",)),
    _t("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False),
    _t("admissionregistration.k8s.io", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False),
    _t("admissionregistration.k8s.io", "mutatingadmissionpolicies", "MutatingAdmissionPolicy", False, (), ("status",)),
    _t("admissionregistration.k8s.io", "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", False),
    _t(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        ("crd", "crds"),
        ("status",),
    ),
)

CRD_GVR = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key in Kubernetes' version order: GA > beta > alpha (higher numbers first), then others by name."""
    match = _VERSION_RE.match(version)
    if not match:
        return (3, 0, 0, version)
    major = int(match.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    minor = int(match.group(3) or 0)
    return (stage, -major, -minor, "")


class Registry:
    """The served resource types, looked up by URL parts, apiVersion/kind or a kubectl-style name."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._types: dict[tuple[str, str, str], ResourceType] = {t.gvr: t for t in BUILTIN_TYPES}
        self._crd_types: dict[str, list[ResourceType]] = {}

    # -- lookups -----------------------------------------------------------------------------------
    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The type served at ``/apis/{group}/{version}/{plural}`` (or ``/api/v1/{plural}``)."""
        return self._types.get((group, version, plural))

    def by_storage_key(self, key: tuple[str, str, str]) -> ResourceType | None:
        """A served type whose objects are kept under ``key`` (None when no version serves them any more)."""
        return next((t for t in self._types.values() if t.storage_key == key), None)

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The type of objects with this ``apiVersion`` and ``kind``."""
        group, _, version = api_version.rpartition("/")
        for rtype in list(self._types.values()):
            if rtype.group == group and rtype.version == version and rtype.kind == kind:
                return rtype
        return None

    def resolve(self, name: str) -> ResourceType:
        """A type from ``pods``, ``po``, ``deployments.apps``, ``apps/v1/deployments`` or ``v1/pods``."""
        if "/" in name:
            *gv, plural = name.split("/")
            group, version = (gv[0], gv[1]) if len(gv) == 2 else ("", gv[0])
            found = self.lookup(group, version, plural)
            if found is None:
                raise KeyError(name)
            return found
        plural, _, group = name.partition(".")
        candidates = [
            t
            for t in self._types.values()
            if (plural in (t.plural, t.singular_name(), t.kind.lower()) or plural in t.short_names)
            and (not group or t.group == group)
        ]
        if not candidates:
            raise KeyError(name)
        # Prefer the core group, then the preferred version (events: v1 core over events.k8s.io).
        candidates.sort(key=lambda t: (t.group != "", version_priority(t.version)))
        return candidates[0]

    def types(self) -> list[ResourceType]:
        """All served types."""
        return list(self._types.values())

    # -- CRDs --------------------------------------------------------------------------------------
    def register_crd(self, crd: dict[str, Any]) -> list[ResourceType]:
        """Serve the versions a CustomResourceDefinition defines (replacing an earlier registration)."""
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        new_types: list[ResourceType] = []
        for ver in spec.get("versions") or []:
            if not ver.get("served", True):
                continue
            subs = ver.get("subresources") or {}
            scale = subs.get("scale")
            scale_paths = None
            if scale is not None:
                scale_paths = (
                    scale.get("specReplicasPath", ".spec.replicas"),
                    scale.get("statusReplicasPath", ".status.replicas"),
                    scale.get("labelSelectorPath", ""),
                )
            new_types.append(
                ResourceType(
                    group=spec.get("group", ""),
                    version=ver["name"],
                    plural=names.get("plural", ""),
                    kind=names.get("kind", ""),
                    namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                    singular=names.get("singular") or names.get("kind", "").lower(),
                    short_names=tuple(names.get("shortNames") or ()),
                    categories=tuple(names.get("categories") or ()),
                    subresources=tuple(s for s in ("status", "scale") if s in subs),
                    builtin=False,
                    scale_paths=scale_paths,
                )
            )
        with self._lock:
            types = dict(self._types)
            for old in self._crd_types.pop(crd["metadata"]["name"], []):
                types.pop(old.gvr, None)
            for rtype in new_types:
                types[rtype.gvr] = rtype
            self._crd_types[crd["metadata"]["name"]] = new_types
            self._types = types
        return new_types

    def unregister_crd(self, crd_name: str) -> list[ResourceType]:
        """Stop serving a deleted CRD's types; returns them."""
        with self._lock:
            removed = self._crd_types.pop(crd_name, [])
            types = dict(self._types)
            for rtype in removed:
                types.pop(rtype.gvr, None)
            self._types = types
        return removed

    # -- discovery ---------------------------------------------------------------------------------
    def _group_versions(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for rtype in self._types.values():
            if rtype.group:
                versions = groups.setdefault(rtype.group, [])
                if rtype.version not in versions:
                    versions.append(rtype.version)
        for versions in groups.values():
            versions.sort(key=version_priority)
        return groups

    def api_group(self, group: str) -> dict[str, Any] | None:
        """The ``APIGroup`` document of ``/apis/{group}``, or None."""
        versions = self._group_versions().get(group)
        if not versions:
            return None
        listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": listed,
            "preferredVersion": listed[0],
        }

    def api_group_list(self) -> dict[str, Any]:
        """The ``APIGroupList`` document of ``/apis``."""
        groups = [self.api_group(g) for g in self._group_versions()]
        for group in groups:
            if group is not None:
                del group["kind"], group["apiVersion"]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        """The ``APIResourceList`` document of a group version, or None when it is not served."""
        types = [t for t in self._types.values() if t.group == group and t.version == version]
        if not types:
            return None
        resources: list[dict[str, Any]] = []
        for rtype in types:
            resources.extend(rtype.discovery_entries())
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }
