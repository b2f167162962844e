"""An in-memory :class:`~celmut.cel.lookups.ResourceLookup` over a fixed list of Kubernetes objects.

The CLI serves ``resource.Get/List/Post`` from files with it (Kyverno's CLI does the same with its
fake context), and tests use it as the cluster. Objects are matched the way the API server would
serve them: by ``apiVersion``, plural resource name (derived from ``kind``), namespace, name and an
equality label selector. A missing object raises :class:`ResourceNotFound` with the API server's
message (``configmaps "x" not found``), which ``resource.Get`` turns into ``null`` as Kyverno does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from celmut import kinds
from celmut.cel.lookups import ResourceConflict, ResourceNotFound
from celmut.jsonutil import json_copy


def kind_to_resource(kind: str) -> str:
    """The plural resource of a kind (see :func:`celmut.kinds.guess_resource`)."""
    return kinds.guess_resource(kind)


class StaticResources:
    """Kubernetes objects in memory, served like an API server (reads, creates and upserts).

    Objects are indexed by (apiVersion, resource) then (namespace, name), so lookups do not scan;
    reads return copies, so callers cannot change what is stored.
    """

    def __init__(
        self,
        objects: Iterable[Mapping[str, Any]] = (),
        plurals: Mapping[str, str] | None = None,
        kind_table: kinds.KindTable = kinds.BUILTIN,
    ) -> None:
        """``kind_table`` names custom kinds (built from their CRDs); ``plurals`` overrides the plural
        of a kind (``{"Gateway.gateway.networking.k8s.io": "gateways"}`` or just ``{"Gateway":
        "gateways"}``)."""
        self._plurals = dict(plurals or {})
        self._kind_table = kind_table
        self._index: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = {}
        self._kinds: dict[tuple[str, str], str] = {}
        for obj in objects:
            self.add(obj)

    # --- loading ----------------------------------------------------------------------------------

    def _key(self, obj: Mapping[str, Any]) -> tuple[tuple[str, str], tuple[str, str]]:
        api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        resource = self.plural(api_version, kind)
        self._kinds[(api_version, resource)] = kind
        return (api_version, resource), (namespace, str(meta.get("name") or ""))

    def add(self, obj: Mapping[str, Any]) -> None:
        """Add a copy of an object (replacing one with the same identity); a ``…List`` adds each item."""
        self._store(obj, copy=True)

    put = add  # an upsert: the store keeps the latest version of each object

    def keep(self, obj: Mapping[str, Any]) -> None:
        """:meth:`put` without the copy: the caller hands ``obj`` over and changes it no more.

        For the objects an offline run admits, which nothing changes once admitted: copying each
        cost a tenth of ``celmut apply`` (issue 30). Reads still return copies."""
        self._store(obj, copy=False)

    def _store(self, obj: Mapping[str, Any], *, copy: bool) -> None:
        if not isinstance(obj, Mapping):
            raise TypeError("a Kubernetes object must be a mapping")
        items = obj.get("items")
        if str(obj.get("kind", "")).endswith("List") and isinstance(items, list):
            for item in items:
                self._store(item, copy=copy)
            return
        resource_key, object_key = self._key(obj)
        stored = json_copy(dict(obj)) if copy or type(obj) is not dict else obj
        self._index.setdefault(resource_key, {})[object_key] = stored

    @property
    def objects(self) -> list[dict[str, Any]]:
        return [json_copy(o) for objects in self._index.values() for o in objects.values()]

    # --- naming ---------------------------------------------------------------------------------

    def plural(self, api_version: str, kind: str) -> str:
        group, _ = kinds.split_api_version(api_version)
        for key in (f"{kind}.{group}" if group else kind, kind):
            if key in self._plurals:
                return self._plurals[key]
        return self._kind_table.resource_for(api_version, kind)

    def _kind_for(self, api_version: str, resource: str) -> str | None:
        return self._kinds.get((api_version, resource))

    # --- ResourceLookup ---------------------------------------------------------------------------

    def _namespace_matches(self, api_version: str, resource: str, stored: str, wanted: str) -> bool:
        """An object written without a namespace is cluster-scoped, or in "default" as kubectl assumes."""
        if stored == wanted:
            return True
        kind = self._kinds.get((api_version, resource), "")
        return not stored and wanted == "default" and self._kind_table.is_namespaced(api_version, kind)

    def get(self, api_version: str, resource: str, namespace: str, name: str) -> dict[str, Any]:
        objects = self._index.get((api_version, resource), {})
        obj = objects.get((namespace, name))
        if obj is None and self._namespace_matches(api_version, resource, "", namespace):
            obj = objects.get(("", name))
        if obj is None:
            raise ResourceNotFound(f'{kinds.qualified_resource(api_version, resource)} "{name}" not found')
        return json_copy(obj)

    def list(
        self, api_version: str, resource: str, namespace: str, labels: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        items = []
        for (object_namespace, _), obj in self._index.get((api_version, resource), {}).items():
            if namespace and not self._namespace_matches(api_version, resource, object_namespace, namespace):
                continue
            object_labels = (obj.get("metadata") or {}).get("labels") or {}
            if labels and any(object_labels.get(k) != val for k, val in labels.items()):
                continue
            items.append(obj)
        items.sort(
            key=lambda o: (
                (o.get("metadata") or {}).get("namespace") or "",
                (o.get("metadata") or {}).get("name") or "",
            )
        )
        kind = self._kind_for(api_version, resource)
        return {
            "apiVersion": api_version,
            "kind": f"{kind}List" if kind else "List",
            "metadata": {"resourceVersion": ""},
            "items": [json_copy(i) for i in items],
        }

    def post(self, api_version: str, resource: str, namespace: str, data: dict[str, Any]) -> dict[str, Any]:
        obj = json_copy(dict(data))
        qualified = kinds.qualified_resource(api_version, resource)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict) or not meta.get("name"):
            raise ResourceConflict(f"{qualified} is invalid: metadata.name: Required value: name is required")
        if obj.get("apiVersion", api_version) != api_version or (
            obj.get("kind") and self.plural(api_version, str(obj["kind"])) != resource
        ):
            raise ResourceConflict(f"{qualified} is invalid: the object's apiVersion/kind does not match the request")
        obj.setdefault("apiVersion", api_version)
        if not obj.get("kind"):
            kind = self._kind_for(api_version, resource)
            if kind is None:
                raise ResourceConflict(f"{qualified} is invalid: Object 'Kind' is missing")
            obj["kind"] = kind
        if namespace:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise ResourceConflict(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
        resource_key, object_key = self._key(obj)
        if object_key in self._index.get(resource_key, {}):
            raise ResourceConflict(f'{qualified} "{meta["name"]}" already exists')
        self._index.setdefault(resource_key, {})[object_key] = obj
        return json_copy(obj)

    def resource_for_kind(self, api_version: str, kind: str) -> str | None:
        return self.plural(api_version, kind) if kind else None
