"""What the background reports remember per resource, compactly: the leader holds one entry per resource
(100,000 at 100,000 pods), so each is a tuple shared or small until it cannot be (issue 35)."""

from __future__ import annotations

import sys
import threading
from typing import Any, NamedTuple

from celmut.runtime.report_objects import ResourceRef
from celmut.runtime.report_results import ReportResult


class Versions:
    """uid -> {name: version}, compact: a leader holds one per resource (100,000 at 100,000 pods), and most
    say one version for every name (each policy evaluated the same state): a (version, names) tuple, the
    names shared between resources, until they do not (a dict)."""

    def __init__(self) -> None:
        self._by_uid: dict[str, tuple[str, tuple[str, ...]] | dict[str, str]] = {}
        self._names: dict[tuple[str, ...], tuple[str, ...]] = {}

    def get(self, uid: str, name: str) -> str | None:
        held = self._by_uid.get(uid)
        if isinstance(held, tuple):
            return held[0] if name in held[1] else None
        return held.get(name) if held is not None else None

    def set(self, uid: str, name: str, version: str) -> None:
        held = self._by_uid.get(uid)
        if held is None:
            self._by_uid[sys.intern(uid)] = (version, self._shared((name,)))
            return
        if isinstance(held, tuple):
            if held[0] == version:
                if name not in held[1]:
                    self._by_uid[uid] = (version, self._shared(held[1] + (name,)))
                return
            if held[1] == (name,):
                self._by_uid[uid] = (version, held[1])
                return
            held = dict.fromkeys(held[1], held[0])
        held[name] = version
        versions = set(held.values())
        self._by_uid[uid] = (version, self._shared(tuple(held))) if len(versions) == 1 else held

    def pop(self, uid: str) -> None:
        self._by_uid.pop(uid, None)

    def _shared(self, names: tuple[str, ...]) -> tuple[str, ...]:
        return self._names.setdefault(names, names)


class Successors:
    """uid -> the resourceVersion that replaced each of its last ``limit`` versions, as a flat tuple
    (before, after, before, after, …): one change seen is one small tuple, not a dict."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._by_uid: dict[str, tuple[str, ...]] = {}

    def get(self, uid: str, before: str) -> str | None:
        pairs = self._by_uid.get(uid, ())
        for index in range(len(pairs) - 2, -1, -2):
            if pairs[index] == before:
                return pairs[index + 1]
        return None

    def add(self, uid: str, before: str, after: str) -> None:
        pairs = self._by_uid.get(uid, ())
        kept = tuple(v for i in range(0, len(pairs), 2) if pairs[i] != before for v in pairs[i : i + 2])
        self._by_uid[sys.intern(uid)] = (*kept, before, after)[-2 * self.limit :]

    def pop(self, uid: str) -> None:
        self._by_uid.pop(uid, None)


class Rescanned:
    """The resources rescanned as they changed while a full scan waits (a mutation pass is patching them):
    the scan need not evaluate them again at the version they were rescanned at. Tracked from
    :meth:`start` until :meth:`stop` (uids only: the versions are the reports' evaluated ones)."""

    def __init__(self) -> None:
        self._uids: set[str] | None = None

    @property
    def tracking(self) -> bool:
        return self._uids is not None

    def start(self) -> None:
        if self._uids is None:
            self._uids = set()

    def stop(self) -> None:
        self._uids = None

    def restart(self) -> None:
        """Policies changed: what was evaluated before says nothing about them."""
        if self._uids is not None:
            self._uids = set()

    def add(self, uid: str) -> None:
        if self._uids is not None and uid:
            self._uids.add(uid)

    def __contains__(self, uid: str) -> bool:
        return self._uids is not None and uid in self._uids


Where = tuple[str, str, str, str]  # apiVersion, resource, namespace, name
Batch = dict[str, list[ReportResult]]  # policy key -> its results on one resource


class PatchedResults(NamedTuple):
    """The results of a target a worker just patched, held for the rescan of its change."""

    since: int  # the pass they were handed over in
    ref: ResourceRef
    results: Batch
    version: str  # the target's resourceVersion as patched


class PatchesInFlight:
    """The targets workers are patching now, and the rescans the watch delivered of them meanwhile: the
    watch may bring a patched target before the worker that sent the patch hands over its ``patched-target``
    result. Such a rescan is held until the worker is done (:meth:`finish`), so the target's report is
    written once, with both, whatever the threads' timing."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._patching: dict[Where, int] = {}
        self._held: dict[Where, tuple[dict[str, Any], Batch]] = {}

    def start(self, where: Where) -> None:
        with self._lock:
            self._patching[where] = self._patching.get(where, 0) + 1

    def hold(self, where: Where, obj: dict[str, Any], batch: Batch) -> bool:
        """Hold a rescan's results of ``obj`` while a worker patches it (True); False: none does."""
        with self._lock:
            if where not in self._patching:
                return False
            _, earlier = self._held.get(where, (obj, {}))
            self._held[where] = (obj, {**earlier, **batch})  # the newer rescan's results win
            return True

    def finish(self, where: Where) -> tuple[dict[str, Any], Batch] | None:
        """A worker is done with ``where``: the rescan held for it, once no other worker patches it."""
        with self._lock:
            left = self._patching.get(where, 0) - 1
            if left > 0:
                self._patching[where] = left
                return None
            self._patching.pop(where, None)
            return self._held.pop(where, None)

    def drop(self, where: Where) -> None:
        """The target is gone: nothing held for it is written."""
        with self._lock:
            self._held.pop(where, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._patching)
