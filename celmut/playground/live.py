"""The playground connected to a cluster, read-only (``celmut playground --kubeconfig K [--context C]``).

The page lists the cluster's namespaces and the objects of a namespace, and loads one (or all of a
kind, up to a run's limit) into the resources pane; every run then reads the cluster for lookups
(``resource.Get/List``, ``namespaceObject``, namespace selectors) behind the objects of the page
(:class:`celmut.playground.layered.Layered`). Nothing is ever written: the client is a
:class:`celmut.kube.read_only.ReadOnlyCluster`, which refuses any verb but GET before sending it,
and ``resource.Post`` is refused as in ``celmut apply --cluster``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from celmut import kinds
from celmut.errors import ConfigurationError
from celmut.kube.client import ClusterError
from celmut.kube.read_only import Connection, ReadOnlyLookup, connect
from celmut.playground.layered import Layered
from celmut.playground.session import MAX_RESOURCES
from celmut.sources.yaml_dumper import ObjectDumper

# What the page offers to load, as (apiVersion, resource): the kinds a mutating policy usually
# matches, and the workloads it can run as their pods. Secrets are left out on purpose.
LOADABLE: tuple[tuple[str, str], ...] = (
    ("v1", "pods"),
    ("apps/v1", "deployments"),
    ("apps/v1", "statefulsets"),
    ("apps/v1", "replicasets"),
    ("apps/v1", "daemonsets"),
    ("batch/v1", "jobs"),
    ("batch/v1", "cronjobs"),
    ("v1", "services"),
    ("v1", "configmaps"),
    ("v1", "serviceaccounts"),
)
# Fields only the API server writes: a loaded object is shown as a person would write it to admit it.
SERVER_FIELDS = ("managedFields", "resourceVersion", "generation", "selfLink")


class ClusterUnavailable(Exception):
    """The cluster could not answer (the message says what was asked and why)."""


CRD_SECONDS = 60.0  # how long the cluster's CRDs (for completion of custom resources' fields) are kept


@dataclass
class LiveCluster:
    """The connection and what the page asks of it."""

    connection: Connection
    _crds: tuple[float, list[dict[str, Any]]] | None = field(default=None, repr=False)

    @classmethod
    def connect(cls, kubeconfig: str | None, context: str | None) -> LiveCluster:
        try:
            return cls(connect(kubeconfig, context))
        except ClusterError as ex:
            raise ConfigurationError(f"--kubeconfig {kubeconfig or '(default)'}: {ex.message}") from None

    def describe(self) -> dict[str, Any]:
        return {"connected": True, "context": self.connection.context, "server": self.connection.server}

    def lookups(self) -> Layered:
        """A run's lookups: the page's objects over the cluster's (a new layer per run)."""
        return Layered(ReadOnlyLookup(self.connection.cluster, command="celmut playground"))

    def _list(self, api_version: str, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        try:
            items: list[dict[str, Any]] = self.connection.cluster.list_all(api_version, resource, namespace)["items"]
        except ClusterError as ex:
            where = f"in {namespace}" if namespace else "in the cluster"
            raise ClusterUnavailable(f"listing {resource} {where}: {ex}") from None
        return items

    def crds(self) -> list[dict[str, Any]]:
        """The cluster's CustomResourceDefinitions (kept a minute; none when they cannot be read)."""
        now = time.monotonic()
        if self._crds is None or now - self._crds[0] > CRD_SECONDS:
            try:
                found = self._list("apiextensions.k8s.io/v1", "customresourcedefinitions")
            except ClusterUnavailable:
                found = []  # completion goes on with the built-in kinds
            self._crds = (now, found)
        return self._crds[1]

    def namespaces(self) -> list[str]:
        return sorted(str((n.get("metadata") or {}).get("name", "")) for n in self._list("v1", "namespaces"))

    def objects(self, namespace: str, resource: str) -> dict[str, Any]:
        """``{"kind", "names"}``: the objects of ``resource`` in ``namespace``, by name."""
        api_version = _loadable(resource)
        names = sorted(
            str((o.get("metadata") or {}).get("name", "")) for o in self._list(api_version, resource, namespace)
        )
        return {"kind": kinds.kind_for(api_version, resource), "names": names}

    def load(self, namespace: str, resource: str, name: str) -> dict[str, Any]:
        """``{"yaml", "count"}``: one object (or, without a name, every one of the kind, up to a run's
        limit) as YAML documents, without the fields only the API server writes."""
        api_version = _loadable(resource)
        kind = kinds.kind_for(api_version, resource)
        if name:
            try:
                found = [self.connection.cluster.get(api_version, resource, namespace, name)]
            except ClusterError as ex:
                raise ClusterUnavailable(f"reading {resource} {namespace}/{name}: {ex}") from None
        else:
            found = self._list(api_version, resource, namespace)
        shown = [_as_written(o, api_version, kind) for o in found[:MAX_RESOURCES]]
        text = "---\n".join(_dump(o) for o in shown)
        return {"yaml": text, "count": len(shown), "total": len(found)}


def _loadable(resource: str) -> str:
    for api_version, known in LOADABLE:
        if known == resource:
            return api_version
    raise ClusterUnavailable(f"{resource}: not one of the kinds the page loads ({', '.join(r for _, r in LOADABLE)})")


def _as_written(obj: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_FIELDS}
    out = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    out.update({k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")})
    return out


def _dump(obj: dict[str, Any]) -> str:
    import yaml

    return str(yaml.dump(obj, Dumper=ObjectDumper, sort_keys=False, default_flow_style=False, allow_unicode=True))
