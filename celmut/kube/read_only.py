"""The cluster as the CLI reads it for ``celmut apply --cluster``: straight API reads, never a write.

:class:`ReadOnlyLookup` serves CEL's ``resource.Get/List`` (and namespace lookups) with one request
each, no watched caches (a one-shot command has nothing to keep warm), and refuses ``resource.Post``:
``apply`` is a dry run wherever its input comes from, so nothing it evaluates may change the cluster.
:func:`list_matching` lists the objects a policy's ``matchConstraints.resourceRules`` name, as
``kyverno apply --cluster`` lists the kinds its policies match
(``cmd/cli/kubectl-kyverno/utils/common/fetch.go``: ``whenClusterIsTrue``, ``getResourcesOfTypeFromCluster``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from celmut import kinds
from celmut.cel.lookups import LookupFailed
from celmut.kube.client import Cluster, ClusterError, NotFound
from celmut.kube.lookup import read_object
from celmut.policy.match import ResourceRule


class ReadOnlyLookup:
    """:class:`celmut.cel.lookups.ResourceLookup` over direct GETs; ``post`` is refused."""

    def __init__(self, cluster: Cluster, *, command: str = "celmut apply --cluster") -> None:
        self.cluster = cluster
        self.command = command

    def get(self, api_version: str, resource: str, namespace: str, name: str) -> dict[str, Any]:
        return read_object(self.cluster, api_version, resource, namespace, name)

    def list(
        self, api_version: str, resource: str, namespace: str, labels: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        selector = ",".join(f"{k}={v}" for k, v in (labels or {}).items())
        try:
            items = self.cluster.list_all(api_version, resource, namespace, label_selector=selector)["items"]
        except ClusterError as ex:
            raise LookupFailed(f"listing {resource} in {namespace or 'all namespaces'}: {ex}") from None
        kind = kinds.kind_for(api_version, resource)
        return {"apiVersion": api_version, "kind": f"{kind}List", "metadata": {}, "items": items}

    def post(self, api_version: str, resource: str, namespace: str, data: dict[str, Any]) -> dict[str, Any]:
        raise LookupFailed(
            f"resource.Post of {kinds.qualified_resource(api_version, resource)}: {self.command} only reads the "
            "cluster (it never creates objects); run the policy in the webhook or the controller to create it"
        )

    def resource_for_kind(self, api_version: str, kind: str) -> str | None:
        return kinds.resource_for(api_version, kind) if kind else None


def list_matching(
    cluster: Cluster, rules: Iterable[ResourceRule], namespace: str = ""
) -> tuple[list[dict[str, Any]], list[str]]:
    """The objects the ``rules`` name (in ``namespace``, or everywhere), each once and with apiVersion
    and kind, and a note per rule part that cannot be listed (a wildcard needs discovery, a
    subresource is not an object, a resource the cluster does not serve)."""
    found: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    notes: list[str] = []
    for rule in rules:
        for group in rule.api_groups:
            for version in rule.api_versions:
                for resource in rule.resources:
                    api_version = f"{group}/{version}" if group else version
                    if "*" in (group, version) or "*" in resource:
                        notes.append(f"{resource}.{api_version}: a wildcard rule, not listed (name the resource)")
                        continue
                    if "/" in resource:
                        continue  # a subresource: its parent is listed by its own rule
                    try:
                        listed = cluster.list_all(api_version, resource, namespace)
                    except NotFound:
                        notes.append(f"{resource}.{api_version}: not served by the cluster")
                        continue
                    kind = str(listed.get("kind") or "").removesuffix("List") or kinds.kind_for(api_version, resource)
                    for item in listed.get("items") or []:
                        meta = item.get("metadata") or {}
                        if rule.resource_names and meta.get("name") not in rule.resource_names:
                            continue
                        key = (api_version, resource, str(meta.get("namespace", "")), str(meta.get("name", "")))
                        found.setdefault(key, {"apiVersion": api_version, "kind": kind, **item})
    return list(found.values()), notes
