"""Watched caches of cluster objects (an informer): list, then watch from the list's resourceVersion.

Watches survive the real world: a watch that ends (timeout, server restart) resumes from the last
resourceVersion seen; ``410 Gone`` re-lists; connection failures back off exponentially (with
jitter, up to 30 s) before resuming. Memory is bounded: ``metadata.managedFields`` is dropped and at
most ``max_objects`` objects are kept (beyond that new objects are not cached and the cache reports
itself overflowed). A ``metadata_only`` cache lists and watches ``PartialObjectMetadata``
(apiVersion, kind, metadata: what placement counting and owner lookups read) and keeps only that:
a realistic Pod costs ~10x less (docs/operations/sizing.md). With ``deliver_whole`` it lists and watches whole
objects and still keeps only their metadata: its handlers get each object whole as it arrives (the
controller evaluates it then, and never holds it), the previous one as kept. Event handlers run on the
watch thread.
"""

from __future__ import annotations

import logging
import random
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import orjson

from celmut import kinds
from celmut.kube.client import Cluster, ClusterError, Forbidden, Gone, NotFound

log = logging.getLogger("celmut.kube")

Handler = Callable[[str, dict[str, Any], dict[str, Any] | None], None]  # (ADDED|MODIFIED|DELETED, object, old)
Key = tuple[str, str]  # (namespace, name)
T = TypeVar("T")


def _key(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _version(obj: dict[str, Any]) -> Any:
    return (obj.get("metadata") or {}).get("resourceVersion")


def _shared(value: Any) -> Any:
    """``value`` with its strings interned: the pods of one workload repeat their labels, annotations
    and owner references, and a metadata-only cache is mostly such strings (~1 KiB less per Pod)."""
    if isinstance(value, str):
        return sys.intern(value)
    if isinstance(value, dict):
        return {sys.intern(k): _shared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shared(v) for v in value]
    return value


class _Sharing:
    """Equal labels, annotations and owner references held once: the pods of a workload carry the same
    ones, so a metadata-only cache keeps one dict for the 50 pods of a ReplicaSet instead of 50 (bounded:
    the last ``size`` different values). Held values are shared between cached objects: never mutated."""

    def __init__(self, size: int = 8192) -> None:
        self.size = size
        self._seen: OrderedDict[Any, Any] = OrderedDict()

    def metadata(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """``metadata`` with its strings interned and its maps and lists shared."""
        return {sys.intern(k): self._value(v) for k, v in metadata.items()}

    def _value(self, value: Any) -> Any:
        if isinstance(value, str):
            return sys.intern(value)
        if not isinstance(value, (dict, list)) or not value:
            return _shared(value)
        try:  # its JSON text: one call in C, where a walk building a hashable twin cost ~20 us a pod
            key = orjson.dumps(value)
        except TypeError:
            return _shared(value)
        found = self._seen.get(key)
        if found is not None:
            self._seen.move_to_end(key)
            return found
        shared = _shared(value)
        self._seen[key] = shared
        if len(self._seen) > self.size:
            self._seen.popitem(last=False)
        return shared


class WatchedCache:
    """The objects of one resource, kept up to date by a background watch."""

    def __init__(
        self,
        cluster: Cluster,
        api_version: str,
        resource: str,
        *,
        namespace: str = "",
        label_selector: str = "",
        field_selector: str = "",
        max_objects: int = 200_000,
        watch_timeout: int = 300,
        max_backoff: float = 30.0,
        metadata_only: bool = False,
        deliver_whole: bool = False,
        index_label: str = "",
    ) -> None:
        self.cluster = cluster
        self.api_version = api_version
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector  # an object that stops matching is DELETED by the watch
        self.max_objects = max_objects
        self.watch_timeout = watch_timeout
        self.max_backoff = max_backoff
        self.metadata_only = metadata_only
        # a metadata-only cache fed whole objects: handlers see them whole, the cache keeps their metadata
        self.deliver_whole = metadata_only and deliver_whole
        # (namespace, value of this label) -> keys: a lookup selecting by it reads only those objects
        # (a spot preset lists the pods of one pod-template-hash; a scan would read the namespace)
        self.index_label = index_label
        self._index: dict[tuple[str, str], dict[Key, None]] = {}
        self.kind = kinds.kind_for(api_version, resource)
        self._objects: dict[Key, dict[str, Any]] = {}
        self._sharing = _Sharing()  # used by the watch thread only
        self._lock = threading.Lock()
        self._handlers: list[Handler] = []
        self._locked_handlers: list[Handler] = []  # called as each change is stored, under the lock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.synced = threading.Event()
        self._settled = threading.Event()  # listed once, or found not served
        self.absent = False  # the API server does not serve this resource
        self.denied = ""  # why celmut may not list or watch it (403: RBAC), while that lasts
        self.overflowed = False
        self.resource_version = ""
        self.generation = 0  # bumped on every change: a cheap fingerprint
        self.relists = 0

    # --- lifecycle ------------------------------------------------------------------------------

    def add_handler(self, handler: Handler, *, locked: bool = False) -> None:
        """Called on the watch thread with (event, object, previous object or None) for every change;
        ``locked``: while the change is stored, under the cache's lock, so that what the handler keeps
        and what the cache holds change together (:meth:`snapshot`). A locked handler must be quick
        and take no lock that is held while waiting for this cache."""
        (self._locked_handlers if locked else self._handlers).append(handler)

    def handlers(self) -> list[tuple[Handler, bool]]:
        """The handlers added, each with whether it is ``locked`` (to move them to a cache replacing this
        one: the admitted-pods overlay's locked handler among them)."""
        return [(h, True) for h in self._locked_handlers] + [(h, False) for h in self._handlers]

    def start(self) -> WatchedCache:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"watch-{self.resource}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def wait_synced(self, timeout: float) -> bool:
        """True once the first list is in (or the resource turned out not to be served). A list that is
        forbidden ends the wait at once (False): no caller waits on RBAC that may never come."""
        self._settled.wait(timeout)
        return self.synced.is_set() or self.absent

    @property
    def settled(self) -> bool:
        """Listed, found not served, or found forbidden: nothing more to wait for."""
        return self.synced.is_set() or self.absent or bool(self.denied)

    # --- reads ----------------------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._objects.get((namespace, name))

    def items(self, namespace: str = "", labels: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """The objects of a namespace (all: ""); with ``labels`` naming :attr:`index_label`, at least
        those carrying that value (the caller still filters by every label)."""
        with self._lock:
            return self._items(namespace, labels)

    def holding(self, namespace: str, labels: Mapping[str, str] | None, use: Callable[[list[dict[str, Any]]], T]) -> T:
        """``use(items)`` with :meth:`items`, under the cache's lock: no change is stored (nor its locked
        handlers run) until it returns."""
        with self._lock:
            return use(self._items(namespace, labels))

    def _items(self, namespace: str, labels: Mapping[str, str] | None) -> list[dict[str, Any]]:
        if self.index_label and labels and self.index_label in labels and namespace:
            keys = self._index.get((namespace, labels[self.index_label]), {})
            return [self._objects[key] for key in keys]
        if not namespace:
            return list(self._objects.values())
        return [o for (ns, _), o in self._objects.items() if ns == namespace]

    def _indexed(self, key: Key, obj: dict[str, Any] | None, add: bool) -> None:
        """Add or remove ``key`` under its object's value of :attr:`index_label` (lock held)."""
        if not self.index_label or obj is None:
            return
        value = ((obj.get("metadata") or {}).get("labels") or {}).get(self.index_label)
        if not isinstance(value, str):
            return
        slot = (key[0], value)
        if add:
            self._index.setdefault(slot, {})[key] = None
        else:
            keys = self._index.get(slot)
            if keys is not None:
                keys.pop(key, None)
                if not keys:
                    del self._index[slot]

    def __len__(self) -> int:
        return len(self._objects)

    # --- the watch loop -------------------------------------------------------------------------

    @property
    def _wire_metadata_only(self) -> bool:
        """Lists and watches ask for ``PartialObjectMetadata``."""
        return self.metadata_only and not self.deliver_whole

    def _whole(self, obj: dict[str, Any]) -> dict[str, Any]:
        """An object as listed or watched: typed list items come without apiVersion and kind."""
        obj.setdefault("apiVersion", self.api_version)
        obj.setdefault("kind", self.kind)
        (obj.get("metadata") or {}).pop("managedFields", None)
        return obj

    def _normalise(self, obj: dict[str, Any]) -> dict[str, Any]:
        """What the cache keeps of an object."""
        if self.metadata_only:  # PartialObjectMetadata, or a whole object from a server that cannot project
            metadata = obj.get("metadata") or {}
            metadata.pop("managedFields", None)
            return {"apiVersion": self.api_version, "kind": self.kind, "metadata": self._sharing.metadata(metadata)}
        return self._whole(obj)

    def _notify(
        self, event: str, obj: dict[str, Any], old: dict[str, Any] | None = None, *, locked: bool = False
    ) -> None:
        for handler in self._locked_handlers if locked else self._handlers:
            try:
                handler(event, obj, old)
            except Exception:  # a broken handler must not stop the watch
                log.exception("cache event handler failed", extra={"resource": self.resource})

    def _store(self, event: str, obj: dict[str, Any]) -> None:
        delivered = self._whole(obj) if self.deliver_whole else None
        obj = self._normalise(obj)
        key = _key(obj)
        with self._lock:
            old = self._objects.get(key)
            if event == "DELETED":
                self._objects.pop(key, None)
                self._indexed(key, old, add=False)
            elif key in self._objects or len(self._objects) < self.max_objects:
                self._indexed(key, old, add=False)
                self._objects[key] = obj
                self._indexed(key, obj, add=True)
            else:
                if not self.overflowed:
                    log.error("cache is full; new objects are not cached", extra={"resource": self.resource})
                self.overflowed = True
                return
            self.generation += 1
            self._notify(event, obj, old, locked=True)
        self._notify(event, delivered if delivered is not None else obj, old)

    def _relist(self) -> None:
        """List every object (a page at a time) and replace the cache with them. Handlers hear of what
        changed: a ``deliver_whole`` cache tells them page by page, while each page's whole objects are at
        hand (they are not kept), the others once the cache holds the new list."""
        fresh: dict[Key, dict[str, Any]] = {}
        changes: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
        version = ""
        with self._lock:
            old = self._objects
        for page in self.cluster.pages(  # one page decoded at a time: normalised objects only are kept
            self.api_version,
            self.resource,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            metadata_only=self._wire_metadata_only,
        ):
            for item in page.get("items") or []:
                delivered = self._whole(item) if self.deliver_whole else None
                obj = self._normalise(item)
                key = _key(obj)
                fresh[key] = obj
                previous = old.get(key)
                if previous is None:
                    changes.append(("ADDED", delivered or obj, None))
                elif _version(previous) != _version(obj):
                    changes.append(("MODIFIED", delivered or obj, previous))
            version = str((page.get("metadata") or {}).get("resourceVersion") or "")
            if self.deliver_whole:
                for change in changes:
                    self._notify(*change)
                changes.clear()
        with self._lock:
            self._objects = dict(list(fresh.items())[: self.max_objects])
            self._index = {}
            for key, obj in self._objects.items():
                self._indexed(key, obj, add=True)
            self.overflowed = len(fresh) > self.max_objects
            self.generation += 1
            for key, obj in self._objects.items():
                if key not in old:
                    self._notify("ADDED", obj, locked=True)
        self.resource_version = version
        self.relists += 1
        for change in changes:
            self._notify(*change)
        for key, obj in old.items():
            if key not in fresh:
                self._notify("DELETED", obj)

    def _run(self) -> None:
        backoff = 0.2
        jitter = random.Random()  # its own generator: watch threads never touch the global random state
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._relist()
                    need_list = False
                    self.absent = False
                    if self.denied:
                        log.info("allowed to list the resource now", extra={"resource": self.resource})
                    self.denied = ""
                    self.synced.set()
                    self._settled.set()
                for event in self.cluster.watch(
                    self.api_version,
                    self.resource,
                    self.namespace,
                    resource_version=self.resource_version,
                    label_selector=self.label_selector,
                    field_selector=self.field_selector,
                    timeout_seconds=self.watch_timeout,
                    metadata_only=self._wire_metadata_only,
                ):
                    if self._stop.is_set():
                        return
                    kind, obj = event.get("type"), event.get("object") or {}
                    version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                    if kind in ("ADDED", "MODIFIED", "DELETED"):
                        self._store(str(kind), obj)
                    if version:
                        self.resource_version = version
                    backoff = 0.2
            except Gone:
                log.info("watch expired; re-listing", extra={"resource": self.resource})
                need_list = True
            except NotFound:
                self.absent = True  # not served (e.g. a CRD that is not installed): look again later
                self._settled.set()
                need_list = True
                self._stop.wait(30.0)
            except Forbidden as ex:
                # RBAC: no waiter is held up by it (the policies that name the resource say so in their
                # status, controller/unreadable.py); tried again with backoff, for a role granted later
                if not self.denied:
                    log.warning("not allowed to list or watch", extra={"resource": self.resource, "error": str(ex)})
                self.denied = ex.message
                self._settled.set()
                need_list = True
                self._stop.wait(backoff * (0.5 + jitter.random()))
                backoff = min(backoff * 2, self.max_backoff)
            except ClusterError as ex:
                log.warning("watch interrupted; retrying", extra={"resource": self.resource, "error": str(ex)})
                self._stop.wait(backoff * (0.5 + jitter.random()))
                backoff = min(backoff * 2, self.max_backoff)
