"""Read-your-writes for the admissions that count a workload's pods (issue 38).

A spot split or distribution group is decided on the workload's pods as the webhook knows them. Its
watched pod cache is behind the API server by the time the watch takes to deliver an event, and that
is when it matters: the ReplicaSet controller replaces a pod the moment the API server has marked it
deleted (``pkg/controller/controller_utils.go`` ``FilterActivePods``), and the replacement reaches the
webhook before, or after, its own watch has delivered the deletion. So an admission that lists pods
reads them from the API server too (:func:`stored_pods`: one consistent list, label-selected, in the
cache's projection), and :func:`celmut.kube.admitted_pods.reconcile` combines it with the cache and
with the pods this process admitted that are not stored yet.

**One read serves every request that arrived before it started** (:class:`StoredReads`). Whatever
made a pod's creator send its request — the deletion a ReplicaSet replaces, the scale-up — was stored
before the request arrived here, so a consistent list started after the request's arrival shows it.
The list is read before the decision takes its workload's lock (reads run in parallel; the lock is
held only while deciding), and a decision uses the latest list, or the one under way, if it started
after its request arrived: a slow-start batch arriving together shares one. What the cache learnt
after the list started (a pod it shows Terminating or gone, a pod stored after it) and the pods
admitted since are reconciled with it.

The projection of a metadata-only pod cache has no ``status``, so its lists (watched and stored) leave
out Failed and Succeeded pods by field selector (:data:`METADATA_FIELD_SELECTORS`), which a whole
object shows in its ``status.phase``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from celmut.kube.client import Cluster, ClusterError

log = logging.getLogger("celmut.kube")

#: Only pods that are not Failed/Succeeded can count, and PartialObjectMetadata cannot say which: such a
#: cache lists and watches the others (the watch turns a pod that becomes Failed into DELETED).
METADATA_FIELD_SELECTORS = {("v1", "pods"): "status.phase!=Failed,status.phase!=Succeeded"}

Obj = dict[str, Any]


def stored_pods(
    cluster: Cluster, namespace: str, labels: Mapping[str, str] | None, metadata_only: bool
) -> tuple[list[Obj], str] | None:
    """The pods the API server has stored now (a consistent read), as the pod cache projects them, and the
    list's resourceVersion; None (logged) when it cannot be read: the decision then falls back to the
    watched cache."""
    selector = ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items()))
    fields = METADATA_FIELD_SELECTORS[("v1", "pods")] if metadata_only else ""
    try:
        listed = cluster.list_all(
            "v1", "pods", namespace, label_selector=selector, field_selector=fields, metadata_only=metadata_only
        )
    except ClusterError as ex:
        log.warning(
            "cannot read the workload's pods from the API server; deciding on the watched cache",
            extra={"namespace": namespace, "labelSelector": selector, "error": str(ex)},
        )
        return None
    items = []
    for item in listed.get("items") or []:
        metadata = item.get("metadata") or {}
        metadata.pop("managedFields", None)
        if metadata_only:
            items.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata})
        else:
            items.append({"apiVersion": "v1", "kind": "Pod", **item})
    return items, str((listed.get("metadata") or {}).get("resourceVersion") or "")


@dataclass(frozen=True)
class StoredRead:
    """One list of stored pods: when it started and finished (``time.perf_counter()``), the pods, the pods the
    cache held just before it (``known``: a cached pod the list lacks was deleted; one the cache got
    later was stored after it, unless ``version`` says it is older than the list), and the list's
    resourceVersion."""

    started: float
    pods: list[Obj]
    known: frozenset[tuple[str, str]]
    finished: float = 0.0  # when its answer came: the server listed somewhere between the two
    version: str = ""  # the list's resourceVersion ('' when the server gave none)


ReadKey = tuple[str, tuple[tuple[str, str], ...], bool]  # namespace, labels, metadata-only


class _Pending:
    """A read under way: the decisions that may use it wait for it instead of reading too."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.done = threading.Event()
        self.read: StoredRead | None = None


class StoredReads:
    """The pod lists read for decisions, one at a time per list: a decision uses the latest (or the one
    under way) if it started after its request arrived, else reads (see the module docstring)."""

    def __init__(self, cluster: Cluster, keep_seconds: float = 30.0, max_lists: int = 1024) -> None:
        self.cluster = cluster
        self.keep_seconds = keep_seconds
        self.max_lists = max_lists
        self._reads: dict[ReadKey, StoredRead] = {}
        self._pending: dict[ReadKey, _Pending] = {}
        self._lock = threading.Lock()

    def read(
        self, key: ReadKey, arrived: float | None, known: Callable[[], frozenset[tuple[str, str]]], timeout: float
    ) -> StoredRead | None:
        """A list of ``key`` that started after ``arrived`` (None: this one reads); ``known`` gives the
        cache's pods just before a read starts; None when the API server could not be read."""
        with self._lock:
            latest = self._reads.get(key)
            if latest is not None and arrived is not None and latest.started >= arrived:
                return latest
            pending = self._pending.get(key)
            if pending is None or arrived is None or pending.started < arrived:
                mine = pending = self._pending[key] = _Pending(time.perf_counter())
            else:
                mine = None
        if mine is None:  # another decision's read serves this one
            pending.done.wait(timeout)
            return pending.read
        try:
            seen = known()
            namespace, labels, metadata_only = key
            listed = stored_pods(self.cluster, namespace, dict(labels), metadata_only)
            if listed is not None:
                pods, version = listed
                mine.read = StoredRead(mine.started, pods, seen, time.perf_counter(), version)
                self._keep(key, mine.read)
            return mine.read
        finally:
            with self._lock:
                if self._pending.get(key) is mine:
                    del self._pending[key]
            mine.done.set()

    def latest(self, key: ReadKey, read: StoredRead | None) -> StoredRead | None:
        """The newest of ``read`` and the latest read of ``key`` (a decision that waited for its lock
        decides on the newest list it may use)."""
        if read is None:
            return None
        with self._lock:
            newer = self._reads.get(key)
        return newer if newer is not None and newer.started > read.started else read

    def _keep(self, key: ReadKey, read: StoredRead) -> None:
        with self._lock:
            previous = self._reads.get(key)
            if previous is not None and previous.started > read.started:
                return  # a later read finished first
            self._reads.pop(key, None)
            self._reads[key] = read
            if len(self._reads) > self.max_lists:
                oldest = time.perf_counter() - self.keep_seconds
                self._reads = {k: r for k, r in self._reads.items() if r.started > oldest}
                while len(self._reads) > self.max_lists:
                    self._reads.pop(next(iter(self._reads)))
