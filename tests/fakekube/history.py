"""Objects, the global resourceVersion, the bounded event history, watches and lists.

:class:`History` is the storage half of the :class:`~tests.fakekube.store.Store`: it commits object versions
(stamping the next resourceVersion, recording an :class:`~tests.fakekube.watch.Event` and pushing it to the
watchers of the type), serves lists with the real server's ``resourceVersion``/``resourceVersionMatch``/
``limit``/``continue`` semantics (older states are rebuilt by undoing history, so pages are consistent) and
registers watches, replaying history from a resourceVersion. Reading before the history window is a 410.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from . import errors
from .resources import ResourceType
from .selectors import Predicate
from .watch import ADDED, DELETED, Entry, Event, Watcher

Key = tuple[str, str]
Obj = dict[str, Any]


@dataclass
class ListResult:
    """One page of a list: entries in key order, the list's resourceVersion and pagination data."""

    entries: list[Entry]
    resource_version: int
    continue_token: str | None = None
    remaining: int | None = None


class History:
    """Committed objects by type and key, the resourceVersion counter, the event history and watchers."""

    def __init__(self, history_size: int = 50_000) -> None:
        self._lock = threading.RLock()
        self._rv = 0
        self._objects: dict[tuple[str, str, str], dict[Key, Entry]] = {}
        self._history: deque[Event] = deque(maxlen=max(history_size, 1))
        self._floor = 0
        self._watchers: dict[tuple[str, str, str], set[Watcher]] = {}

    @property
    def resource_version(self) -> int:
        """The latest committed resourceVersion."""
        return self._rv

    @property
    def oldest_resource_version(self) -> int:
        """The oldest resourceVersion a watch or an Exact list can still start from."""
        return self._floor

    def _commit(self, rtype: ResourceType, ns: str, name: str, obj: Obj, etype: str, prev: Entry | None) -> Entry:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        entry = Entry.of(obj)
        bucket = self._objects.setdefault(rtype.storage_key, {})
        if etype == DELETED:
            bucket.pop((ns, name), None)
        else:
            bucket[(ns, name)] = entry
        event = Event(self._rv, rtype, ns, name, etype, entry, prev)
        if len(self._history) == self._history.maxlen:
            self._floor = self._history[0].rv
        self._history.append(event)
        for watcher in self._watchers.get(rtype.storage_key, ()):
            if watcher.namespace is None or watcher.namespace == ns:
                watcher.push(event)
        return entry

    def _state_at(self, rtype: ResourceType, rv: int) -> dict[Key, Entry]:
        state = dict(self._objects.get(rtype.storage_key, {}))
        for event in reversed(self._history):
            if event.rv <= rv:
                break
            if event.rtype.storage_key != rtype.storage_key:
                continue
            key = (event.namespace, event.name)
            if event.type == ADDED:
                state.pop(key, None)
            elif event.prev is not None:
                state[key] = event.prev
        return state

    def list_entries(
        self,
        rtype: ResourceType,
        namespace: str | None = None,
        predicate: Predicate | None = None,
        limit: int = 0,
        continue_token: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> ListResult:
        """A (page of a) list with the real server's resourceVersion/limit/continue semantics."""
        start: Key | None = None
        with self._lock:
            if continue_token:
                rv, start = _decode_continue(continue_token)
                if rv == LATEST:  # an inconsistent continue: the rest of the list as it is now
                    rv = self._rv
                    state = dict(self._objects.get(rtype.storage_key, {}))
                elif rv < self._floor:
                    raise errors.gone(INCONSISTENT_CONTINUE, _encode_continue(LATEST, start))
                else:
                    state = self._state_at(rtype, rv)
            elif resource_version_match == "Exact":
                rv = _parse_rv(resource_version)
                if rv < self._floor:
                    raise errors.gone("The resourceVersion for the provided list is too old.")
                if rv > self._rv:
                    raise _too_large(rv, self._rv)
                state = self._state_at(rtype, rv)
            else:
                if resource_version not in (None, "", "0") and _parse_rv(resource_version) > self._rv:
                    raise _too_large(_parse_rv(resource_version), self._rv)
                rv = self._rv
                state = dict(self._objects.get(rtype.storage_key, {}))
        keys = sorted(k for k in state if namespace is None or k[0] == namespace)
        if start is not None:
            keys = [k for k in keys if k > start]
        result: list[Entry] = []
        for index, key in enumerate(keys):
            entry = state[key]
            if predicate is not None and not predicate(entry.obj):
                continue
            if limit and len(result) == limit:
                remaining = None if predicate is not None else len(keys) - index
                return ListResult(result, rv, _encode_continue(rv, key_of(result[-1])), remaining)
            result.append(entry)
        return ListResult(result, rv)

    # -- history and watches -----------------------------------------------------------------------
    def compact(self) -> int:
        """Forget the event history: watches/Exact lists from older resourceVersions now get 410."""
        with self._lock:
            self._history.clear()
            self._floor = self._rv
            return self._rv

    def open_watch(self, watcher: Watcher, since: str | None, initial: bool) -> tuple[list[Entry], list[Event]]:
        """Register a watcher; returns (current objects for synthetic ADDED events, replayed history)."""
        with self._lock:
            gvr = watcher.rtype.storage_key
            replay: list[Event] = []
            current: list[Entry] = []
            if since in (None, "", "0") or initial:
                bucket = self._objects.get(gvr, {})
                current = [bucket[k] for k in sorted(bucket) if watcher.namespace in (None, k[0])]
            else:
                rv = _parse_rv(since)
                if rv < self._floor:
                    raise errors.gone(f"too old resource version: {rv} ({self._floor})")
                replay = [
                    e
                    for e in self._history
                    if e.rv > rv and e.rtype.storage_key == gvr and watcher.namespace in (None, e.namespace)
                ]
            if since not in (None, "", "0") and not initial:
                watcher.skip_until = _parse_rv(since)
            watcher.position = self._rv
            self._watchers.setdefault(gvr, set()).add(watcher)
            return current, replay

    def close_watch(self, watcher: Watcher) -> None:
        """Unregister a watcher."""
        with self._lock:
            self._watchers.get(watcher.rtype.storage_key, set()).discard(watcher)

    def watchers(self) -> list[Watcher]:
        """All registered watchers."""
        with self._lock:
            return [w for group in self._watchers.values() for w in group]

    def bookmark_version(self, watcher: Watcher) -> int | None:
        """The resourceVersion a BOOKMARK may carry now: the latest one, if nothing is queued for it."""
        with self._lock:
            return self._rv if watcher.queue.empty() else None


def key_of(entry: Entry) -> Key:
    """(namespace, name) of an entry."""
    meta = entry.obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])


def _parse_rv(value: str | None) -> int:
    try:
        return int(value or "0")
    except ValueError:
        raise errors.bad_request(f'invalid resource version "{value}"') from None


def _too_large(rv: int, current: int) -> errors.ApiError:
    return errors.ApiError(
        504,
        f"Too large resource version: {rv}, current: {current}",
        "Timeout",
        {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        },
    )


LATEST = -1  # a continue token's resourceVersion for "the latest" (storage/etcd3/errors.go)
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)


def _encode_continue(rv: int, start: Key) -> str:
    token = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": list(start)})
    return base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, Key]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error):
        raise errors.bad_request(f"continue key is not valid: {token}") from None
