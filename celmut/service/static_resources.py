"""An in-memory :class:`~celmut.cel.lookups.ResourceLookup` over a fixed list of Kubernetes objects.

The CLI serves ``resource.Get/List/Post`` from files with it (Kyverno's CLI does the same with its
fake context), and tests use it as the cluster. Objects are matched the way the API server would
serve them: by ``apiVersion``, plural resource name (derived from ``kind``), namespace, name and an
equality label selector. A missing object raises :class:`ResourceNotFound` with the API server's
message (``configmaps "x" not found``), which ``resource.Get`` turns into ``null`` as Kyverno does.

Offline runs admit objects one after the other, each stored for the next one's lookups, and a
workload's pods each list the pods before them (the spot presets' split): a list must cost what it
selects, not what is stored. So each resource keeps its objects in list order, (namespace, name), and
by label, like the webhook's watched caches (:mod:`celmut.kube.cache`); and ``resource.List`` reads
them without a copy (:meth:`StaticResources.list_values`), each object converted to CEL's value form
once per version. Other readers get copies.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from celmut import kinds
from celmut.cel.libs.kyverno.json import shared_cel_value
from celmut.cel.lookups import ResourceConflict, ResourceNotFound
from celmut.jsonutil import json_copy

Key = tuple[str, str]  # (namespace, name): also the order a list answers in
ResourceKey = tuple[str, str]  # (apiVersion, plural resource)
Keys = list[Key]  # (``list`` names a method in the class below)
Items = list[Any]


def kind_to_resource(kind: str) -> str:
    """The plural resource of a kind (see :func:`celmut.kinds.guess_resource`)."""
    return kinds.guess_resource(kind)


def _labels(obj: Mapping[str, Any]) -> Mapping[Any, Any]:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels if isinstance(labels, Mapping) else {}


class _Objects:
    """The stored objects of one resource: by (namespace, name), the keys in that order (a list's), the
    keys under each string label value (in that order too), and each object's CEL value form once read.
    An object is replaced, never edited."""

    __slots__ = ("by_key", "by_label", "order", "values")

    def __init__(self) -> None:
        self.by_key: dict[Key, dict[str, Any]] = {}
        self.order: list[Key] = []
        self.by_label: dict[tuple[Any, str], list[Key]] = {}
        self.values: dict[Key, Any] = {}

    def put(self, key: Key, obj: dict[str, Any]) -> None:
        old = self.by_key.get(key)
        if old is None:
            insort(self.order, key)
        else:
            self.values.pop(key, None)
            for pair in _label_pairs(old):
                keys = self.by_label[pair]
                del keys[bisect_left(keys, key)]
        self.by_key[key] = obj
        for pair in _label_pairs(obj):
            insort(self.by_label.setdefault(pair, []), key)

    def candidates(self, labels: Mapping[str, str] | None) -> tuple[Keys, Mapping[str, str]]:
        """The keys, in order, of the objects that may carry ``labels`` (all when there are none): those
        under the selector's least used label; and the labels they must still be checked for."""
        if not labels or not all(isinstance(value, str) for value in labels.values()):
            return self.order, labels or {}
        label, value = min(labels.items(), key=lambda pair: len(self.by_label.get(pair, ())))
        rest = {k: v for k, v in labels.items() if k != label}
        return self.by_label.get((label, value), []), rest

    def value(self, key: Key) -> Any:
        """The object of ``key`` as a CEL value, made on its first read."""
        found = self.values.get(key)
        if found is None:
            found = self.values[key] = shared_cel_value(self.by_key[key])
        return found


def _namespace_range(keys: Keys, namespace: str) -> Keys:
    """The keys of ``namespace`` among sorted ``keys`` (any later namespace sorts at or after
    ``namespace`` followed by NUL)."""
    return keys[bisect_left(keys, (namespace, "")) : bisect_left(keys, (namespace + "\0", ""))]


def _label_pairs(obj: Mapping[str, Any]) -> Iterator[tuple[Any, str]]:
    """The (label, value) pairs an equality selector can match: string values."""
    return ((label, value) for label, value in _labels(obj).items() if isinstance(value, str))


class StaticResources:
    """Kubernetes objects in memory, served like an API server (reads, creates and upserts).

    Objects are indexed by (apiVersion, resource), then (namespace, name) and label, so lookups do not
    scan; reads return copies, so callers cannot change what is stored, except :meth:`list_values`
    (``resource.List``: CEL only reads).
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
        self._index: dict[ResourceKey, _Objects] = {}
        self._kinds: dict[ResourceKey, str] = {}
        for obj in objects:
            self.add(obj)

    # --- loading ----------------------------------------------------------------------------------

    def _key(self, obj: Mapping[str, Any]) -> tuple[ResourceKey, Key]:
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
        self._objects(resource_key).put(object_key, stored)

    def _objects(self, resource_key: ResourceKey) -> _Objects:
        found = self._index.get(resource_key)
        if found is None:
            found = self._index[resource_key] = _Objects()
        return found

    @property
    def objects(self) -> list[dict[str, Any]]:
        return [json_copy(o) for objects in self._index.values() for o in objects.by_key.values()]

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
        objects = self._index.get((api_version, resource))
        stored = objects.by_key if objects is not None else {}
        obj = stored.get((namespace, name))
        if obj is None and self._namespace_matches(api_version, resource, "", namespace):
            obj = stored.get(("", name))
        if obj is None:
            raise ResourceNotFound(f'{kinds.qualified_resource(api_version, resource)} "{name}" not found')
        return json_copy(obj)

    def list(
        self, api_version: str, resource: str, namespace: str, labels: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        objects = self._index.get((api_version, resource))
        keys = self._selected(api_version, resource, objects, namespace, labels)
        return self._list_of(api_version, resource, [json_copy(objects.by_key[k]) for k in keys] if objects else [])

    def list_values(
        self, api_version: str, resource: str, namespace: str, labels: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """:meth:`list` for ``resource.List``: the stored objects themselves, as CEL values (see
        :class:`celmut.cel.lookups.SharedListLookup`)."""
        objects = self._index.get((api_version, resource))
        keys = self._selected(api_version, resource, objects, namespace, labels)
        return self._list_of(api_version, resource, [objects.value(k) for k in keys] if objects else [])

    def _selected(
        self,
        api_version: str,
        resource: str,
        objects: _Objects | None,
        namespace: str,
        labels: Mapping[str, str] | None,
    ) -> Keys:
        """The keys of the objects a list answers, in its order: (namespace, name)."""
        if objects is None:
            return []
        keys, rest = objects.candidates(labels)
        if namespace:  # keys are in (namespace, name) order: a namespace's are together
            within = _namespace_range(keys, namespace)
            keys = (
                _namespace_range(keys, "") + within
                if self._namespace_matches(api_version, resource, "", namespace)
                else within
            )
        if not rest:
            return keys
        return [key for key in keys if all(_labels(objects.by_key[key]).get(k) == v for k, v in rest.items())]

    def _list_of(self, api_version: str, resource: str, items: Items) -> dict[str, Any]:
        kind = self._kind_for(api_version, resource)
        return {
            "apiVersion": api_version,
            "kind": f"{kind}List" if kind else "List",
            "metadata": {"resourceVersion": ""},
            "items": items,
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
        objects = self._objects(resource_key)
        if object_key in objects.by_key:
            raise ResourceConflict(f'{qualified} "{meta["name"]}" already exists')
        objects.put(object_key, obj)
        return json_copy(obj)

    def resource_for_kind(self, api_version: str, kind: str) -> str | None:
        return self.plural(api_version, kind) if kind else None
