"""The cluster as ``celmut apply --cluster`` and ``celmut playground --kubeconfig`` read it: straight API
reads, never a write.

:class:`ReadOnlyCluster` is the client itself made unable to write: every request goes through one
method, which sends GET (and HEAD) only and refuses any other verb before a byte leaves, whatever code
asks (a create, a patch, a delete, an eviction): the guarantee does not rest on each caller.
:func:`connect` makes one from a kubeconfig and says which context and server it reads.

:class:`ReadOnlyLookup` serves CEL's ``resource.Get/List`` (and namespace lookups) with one request
each, no watched caches (a one-shot command has nothing to keep warm), and refuses ``resource.Post``:
``apply`` is a dry run wherever its input comes from, so nothing it evaluates may change the cluster.
:func:`list_matching` lists the objects a policy's ``matchConstraints.resourceRules`` name, as
``kyverno apply --cluster`` lists the kinds its policies match
(``cmd/cli/kubectl-kyverno/utils/common/fetch.go``: ``whenClusterIsTrue``, ``getResourcesOfTypeFromCluster``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import kubernetes.config
import urllib3

from celmut import kinds
from celmut.cel.lookups import LookupFailed
from celmut.kube.client import Cluster, ClusterError, NotFound
from celmut.kube.lookup import read_object
from celmut.policy.match import ResourceRule

READ_METHODS = frozenset({"GET", "HEAD"})


class WriteRefused(ClusterError):
    """A request that would change the cluster, refused before it was sent."""

    def __init__(self, method: str, path: str) -> None:
        super().__init__(0, "ReadOnly", f"{method} {path}: this client only reads the cluster (nothing is written)")


class ReadOnlyCluster(Cluster):
    """A :class:`~celmut.kube.client.Cluster` that sends GET and HEAD only (see the module)."""

    def _send(self, method: str, path: str, *args: Any, **kwargs: Any) -> urllib3.BaseHTTPResponse:
        if method.upper() not in READ_METHODS:
            raise WriteRefused(method, path)
        return super()._send(method, path, *args, **kwargs)


@dataclass(frozen=True)
class Connection:
    """A read-only client, the kubeconfig context it reads (its name) and the API server's URL."""

    cluster: ReadOnlyCluster
    context: str
    server: str


def connect(kubeconfig: str | None, context: str | None = None, *, timeout: float = 15.0) -> Connection:
    """A :class:`ReadOnlyCluster` for a kubeconfig context (the current one when ``context`` is None);
    :class:`~celmut.kube.client.ClusterError` naming the file when it cannot be used."""
    base = Cluster.connect(kubeconfig, context=context, timeout=timeout)
    name = context or ""
    if not name:
        try:
            _, current = kubernetes.config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
            name = str((current or {}).get("name") or "")
        except (kubernetes.config.ConfigException, OSError, TypeError, KeyError, ValueError):
            name = "in-cluster"
    cluster = ReadOnlyCluster(base.api_client, timeout=timeout)
    return Connection(cluster, name, str(base.api_client.configuration.host))


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
