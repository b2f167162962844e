"""The objects lookups see when the page is connected to a cluster: the page's own first (the cluster
pane, and what a run admitted), then the cluster's, read-only.

``resource.Get`` and ``namespaceObject`` take the page's object when it has one of that name (a pasted
Namespace stands in for the cluster's), else the cluster's; ``resource.List`` returns the cluster's
list with the page's objects added or put in place of those of the same name, so the pods a workload
run admits are counted with the ones already running. ``resource.Post`` is refused: nothing of the
playground writes to a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from celmut.cel.lookups import ResourceLookup, ResourceNotFound
from celmut.service.static_resources import StaticResources


class Layered:
    """A :class:`~celmut.cel.lookups.ResourceLookup`: ``local`` over ``remote`` (see the module)."""

    def __init__(self, remote: ResourceLookup, local: StaticResources | None = None) -> None:
        self.remote = remote
        self.local = local or StaticResources()

    def get(self, api_version: str, resource: str, namespace: str, name: str) -> dict[str, Any]:
        try:
            return self.local.get(api_version, resource, namespace, name)
        except ResourceNotFound:
            return self.remote.get(api_version, resource, namespace, name)

    def list(
        self, api_version: str, resource: str, namespace: str, labels: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        listed = self.remote.list(api_version, resource, namespace, labels)
        mine = self.local.list(api_version, resource, namespace, labels).get("items") or []
        if not mine:
            return listed
        names = {_identity(item) for item in mine}
        items = [item for item in listed.get("items") or [] if _identity(item) not in names]
        return {**listed, "items": items + mine}

    def post(self, api_version: str, resource: str, namespace: str, data: dict[str, Any]) -> dict[str, Any]:
        return self.remote.post(api_version, resource, namespace, data)

    def resource_for_kind(self, api_version: str, kind: str) -> str | None:
        return self.local.resource_for_kind(api_version, kind) or self.remote.resource_for_kind(api_version, kind)


def _identity(item: Mapping[str, Any]) -> tuple[str, str]:
    meta = item.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")
