"""Stored object versions, change events and watchers.

An :class:`Entry` is one immutable stored version of an object together with its JSON encoding (made once
per write, so lists and watch events cost no re-encoding). Every write produces an :class:`Event`; the store
keeps a bounded history of them and pushes each to the :class:`Watcher` objects registered for its resource
type. A watcher turns events into the newline-delimited JSON lines of a watch stream, applying label/field
selectors the way the real watch cache does: an update that makes an object stop (start) matching is
sent as DELETED (ADDED).
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Any

import orjson

from .resources import ResourceType
from .selectors import Predicate

Obj = dict[str, Any]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
ERROR = "ERROR"


def encode(obj: Any) -> bytes:
    """Compact JSON bytes."""
    return orjson.dumps(obj)


@dataclass(slots=True)
class Entry:
    """One stored version of an object; ``obj`` must never be mutated once the entry exists."""

    obj: Obj
    raw: bytes
    _item: bytes | None = None

    @classmethod
    def of(cls, obj: Obj) -> Entry:
        """An entry for ``obj`` (encoded now)."""
        return cls(obj, encode(obj))

    def copy(self) -> Obj:
        """A private deep copy of the object."""
        copied: Obj = orjson.loads(self.raw)
        return copied

    def raw_as(self, rtype: ResourceType) -> bytes:
        """The encoding as ``rtype``'s version serves it: a custom object stored through another version of
        its CRD is converted (``conversion: None`` — only ``apiVersion`` changes), as the API server does."""
        if rtype.builtin or self.obj.get("apiVersion") == rtype.api_version:
            return self.raw
        return encode({**self.obj, "apiVersion": rtype.api_version})

    def copy_as(self, rtype: ResourceType) -> Obj:
        """A private deep copy as ``rtype``'s version serves it (what a PATCH through that version applies to)."""
        served: Obj = orjson.loads(self.raw_as(rtype))
        return served

    def list_item(self, rtype: ResourceType) -> bytes:
        """The encoding inside a list: without apiVersion/kind for built-in kinds, as the real server sends."""
        if not rtype.builtin:
            return self.raw_as(rtype)
        if self._item is None:
            prefix = f'{{"apiVersion":"{rtype.api_version}","kind":"{rtype.kind}",'.encode()
            if self.raw.startswith(prefix):
                self._item = b"{" + self.raw[len(prefix) :]
            else:
                self._item = encode({k: v for k, v in self.obj.items() if k not in ("apiVersion", "kind")})
        return self._item


@dataclass(slots=True)
class Event:
    """One committed write: ``entry`` is the object after it (for DELETED: as deleted), ``prev`` before it."""

    rv: int
    rtype: ResourceType
    namespace: str
    name: str
    type: str
    entry: Entry
    prev: Entry | None


def event_line(event_type: str, raw: bytes) -> bytes:
    """One line of a watch stream."""
    return b'{"type":"' + event_type.encode() + b'","object":' + raw + b"}\n"


def bookmark_line(rtype: ResourceType, rv: int, initial_events_end: bool = False) -> bytes:
    """A BOOKMARK line: only apiVersion, kind and metadata.resourceVersion, as the real server sends."""
    meta: Obj = {"resourceVersion": str(rv)}
    if initial_events_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return event_line(BOOKMARK, encode({"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": meta}))


def error_line(status: Obj) -> bytes:
    """An ERROR line carrying a Status (e.g. 410 Expired)."""
    return event_line(ERROR, encode(status))


_CLOSE = object()


class WatchHold:
    """What :meth:`FakeApiServer.watches_behind` holds back: each watch on the resource sends, of the
    events it has to send from the moment the hold began (live or replayed), only the first
    :attr:`released` until the hold ends."""

    def __init__(self) -> None:
        self.released = 0
        self._sent: dict[Watcher, int] = {}
        self._lock = threading.Lock()

    def release(self, events: int = 1) -> None:
        """Let each watch on the resource send ``events`` more of its held events (in order)."""
        with self._lock:
            self.released += events

    def take(self, watcher: Watcher) -> bool:
        """Whether ``watcher`` may send its next event now (counted as sent when it may)."""
        with self._lock:
            sent = self._sent.get(watcher, 0)
            if sent >= self.released:
                return False
            self._sent[watcher] = sent + 1
            return True


@dataclass(eq=False)
class Watcher:
    """A registered watch on one resource type (and optionally one namespace)."""

    rtype: ResourceType
    namespace: str | None
    predicate: Predicate | None = None
    user: str | None = None
    queue: queue.SimpleQueue[Any] = field(default_factory=queue.SimpleQueue)
    abrupt: bool = False
    closed: threading.Event = field(default_factory=threading.Event)
    #: The resourceVersion of the last event handed to :meth:`render` (or of the start of the watch).
    position: int = 0
    #: Events up to this resourceVersion are not sent (a watch from a resourceVersion not reached yet).
    skip_until: int = 0

    def push(self, event: Event) -> None:
        """Queue an event (called by the store under its lock, so events queue in commit order)."""
        self.queue.put(event)

    def close(self, abrupt: bool = False) -> None:
        """Ask the stream to end: cleanly (terminating chunk) or abruptly (connection cut)."""
        self.abrupt = abrupt
        self.closed.set()
        self.queue.put(_CLOSE)

    def next(self, timeout: float) -> Event | None:
        """The next event, None on timeout; raises :class:`WatchClosed` once closed."""
        try:
            item = self.queue.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            if self.closed.is_set():
                raise WatchClosed(self.abrupt) from None
            return None
        if item is _CLOSE:
            raise WatchClosed(self.abrupt)
        event: Event = item
        return event

    def render(self, event: Event) -> bytes | None:
        """The watch line for an event as this watcher's client sees it, or None when filtered out."""
        self.position = event.rv
        if event.rv <= self.skip_until:
            return None
        pred = self.predicate
        if pred is None:
            return event_line(event.type, event.entry.raw_as(self.rtype))
        if event.type == ADDED:
            return event_line(ADDED, event.entry.raw_as(self.rtype)) if pred(event.entry.obj) else None
        if event.type == DELETED:
            before = event.prev.obj if event.prev is not None else event.entry.obj
            return event_line(DELETED, event.entry.raw_as(self.rtype)) if pred(before) else None
        was = event.prev is not None and pred(event.prev.obj)
        now = pred(event.entry.obj)
        if was and now:
            return event_line(MODIFIED, event.entry.raw_as(self.rtype))
        if now:
            return event_line(ADDED, event.entry.raw_as(self.rtype))
        if was:
            return event_line(DELETED, event.entry.raw_as(self.rtype))
        return None

    def initial_line(self, entry: Entry) -> bytes | None:
        """A synthetic ADDED line for an object that existed when the watch started."""
        if self.predicate is None or self.predicate(entry.obj):
            return event_line(ADDED, entry.raw_as(self.rtype))
        return None


class WatchClosed(Exception):
    """Raised by :meth:`Watcher.next` once the watch has been closed by the server side."""

    def __init__(self, abrupt: bool) -> None:
        super().__init__("watch closed")
        self.abrupt = abrupt
