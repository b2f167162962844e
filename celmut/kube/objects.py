"""One object and the policies of a cluster, read once: what ``celmut explain --from-cluster`` needs.

:func:`resolve_resource` turns what a kubectl user types (``pod``, ``pods``, ``po``, ``Pod``,
``deployment.apps``, ``deployments.v1.apps``) into the API resource, through discovery as kubectl
does (``k8s.io/cli-runtime/pkg/resource`` + the RESTMapper: core first, then each group's preferred
version; a name, a singular name, a kind or a short name). :func:`read_policies` lists every policy
kind celmut reads (:data:`celmut.kube.policy_source.POLICY_KINDS`, MutatingAdmissionPolicies
included: an explanation names them too), without writing any status back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from celmut.errors import CelmutError
from celmut.kube.client import Cluster, NotFound
from celmut.kube.policy_source import POLICY_KINDS, document_path
from celmut.sources.documents import Document

_VERSION = re.compile(r"v\d+((alpha|beta)\d+)?")


class UnknownResource(CelmutError):
    """The cluster serves no resource by that name."""


@dataclass(frozen=True)
class ApiResource:
    api_version: str
    resource: str
    kind: str
    namespaced: bool


def _candidates(cluster: Cluster, group: str | None, version: str | None) -> list[tuple[str, dict[str, Any]]]:
    """(groupVersion, APIResourceList) in kubectl's order: core first, then each group's preferred version."""
    lists: list[tuple[str, dict[str, Any]]] = []
    if group in (None, ""):
        lists.append(("v1", cluster.request("GET", "/api/v1") or {}))
    if group == "":
        return lists
    for entry in (cluster.request("GET", "/apis") or {}).get("groups") or []:
        if group is not None and entry.get("name") != group:
            continue
        chosen = next((v for v in entry.get("versions") or [] if v.get("version") == version), None)
        chosen = chosen or entry.get("preferredVersion") or {}
        group_version = chosen.get("groupVersion")
        if group_version and (version is None or chosen.get("version") == version):
            try:
                lists.append((group_version, cluster.request("GET", f"/apis/{group_version}") or {}))
            except NotFound:  # a group that went away between the two calls
                continue
    return lists


def resolve_resource(cluster: Cluster, name: str) -> ApiResource:
    """The resource ``name`` means (``resource[.version].group`` narrows it to a group)."""
    token, _, rest = name.partition(".")
    version, group = "", rest
    first, _, remainder = rest.partition(".")
    if remainder and _VERSION.fullmatch(first):
        version, group = first, remainder
    wanted = token.lower()
    for group_version, listing in _candidates(cluster, group if rest else None, version or None):
        for item in listing.get("resources") or []:
            if "/" in str(item.get("name", "")):
                continue  # a subresource
            names = {item.get("name"), item.get("singularName"), str(item.get("kind", "")).lower()}
            names |= set(item.get("shortNames") or [])
            if wanted in names:
                return ApiResource(group_version, str(item["name"]), str(item["kind"]), bool(item.get("namespaced")))
    raise UnknownResource(f'the server doesn\'t have a resource type "{name}"')


def read_object(cluster: Cluster, kind_and_name: str, namespace: str) -> dict[str, Any]:
    """The object ``KIND/NAME`` (in ``namespace`` when its kind is namespaced), with apiVersion and kind."""
    kind, slash, name = kind_and_name.partition("/")
    if not slash or not kind or not name:
        raise UnknownResource(f"expected KIND/NAME (e.g. pod/web), got {kind_and_name!r}")
    resource = resolve_resource(cluster, kind)
    obj = cluster.get(resource.api_version, resource.resource, namespace if resource.namespaced else "", name)
    return {"apiVersion": resource.api_version, "kind": resource.kind, **obj}


def read_namespace(cluster: Cluster, name: str) -> dict[str, Any] | None:
    """The Namespace object (its labels decide namespaceSelectors), or None when it cannot be read."""
    if not name:
        return None
    try:
        return cluster.get("v1", "namespaces", "", name)
    except NotFound:
        return None


def read_policies(cluster: Cluster, *, admission_policies: bool = True) -> list[Document]:
    """Every policy document celmut reads from the cluster, listed once (kinds not served are empty)."""
    documents: list[Document] = []
    for spec in POLICY_KINDS:
        if not admission_policies and spec.group == "admissionregistration.k8s.io":
            continue
        items = _list_kind(cluster, spec.group, spec.resource, spec.versions, spec.label_selector)
        for obj in items:
            documents.append(Document(document_path(spec.kind, obj), 0, obj))
    return sorted(documents, key=lambda d: d.path)


def _list_kind(
    cluster: Cluster, group: str, resource: str, versions: tuple[str, ...], label_selector: str
) -> list[dict[str, Any]]:
    for version in versions:
        api_version = f"{group}/{version}" if group else version
        try:
            listed = cluster.list_all(api_version, resource, label_selector=label_selector)
        except NotFound:  # that version (or the whole kind) is not served
            continue
        kind = listed.get("kind", "").removesuffix("List")
        return [{"apiVersion": api_version, "kind": kind, **item} for item in listed.get("items") or []]
    return []
