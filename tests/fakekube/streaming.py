"""Watch streams: ``GET ...?watch=true`` answered as chunked newline-delimited JSON events.

The stream starts with synthetic ADDED events for the current objects (no resourceVersion, ``"0"`` or
``sendInitialEvents=true``, the latter followed by a BOOKMARK annotated ``k8s.io/initial-events-end``) or
replays history after the given resourceVersion; a resourceVersion older than the history window is
answered, like the real server does, with HTTP 200 and one ERROR event carrying a 410 Expired Status. Then
live events follow until ``timeoutSeconds`` (a BOOKMARK first when bookmarks are allowed), the client
goes away, or the server ends the watch (``drop_watches``: cleanly, or by cutting the connection).
BOOKMARKs are sent every ``server.bookmark_interval`` seconds of quiet when ``allowWatchBookmarks=true``.
"""

from __future__ import annotations

import select
import ssl
import time
from typing import TYPE_CHECKING, Any

from . import errors, metadata
from .routes import Target, query_flag, query_int, query_value
from .selectors import combine, parse_field_selector, parse_label_selector
from .watch import WatchClosed, Watcher, bookmark_line, error_line

if TYPE_CHECKING:
    from .server import FakeApiServer

Query = dict[str, list[str]]


class WatchStreamMixin:
    """The watch half of :class:`~tests.fakekube.handler.ApiHandler`."""

    api: FakeApiServer
    wfile: Any
    connection: Any
    close_connection: bool
    #: Set once a watch response has begun: an error after that can only cut the connection.
    streaming: bool = False
    #: The watch was asked for metadata only (Accept ``as=PartialObjectMetadata``).
    metadata_only: bool = False
    headers: Any

    if TYPE_CHECKING:  # provided by ApiHandler / BaseHTTPRequestHandler

        def _verb(self, target: Target, verb: str) -> None: ...
        def _abort(self) -> None: ...
        def send_response(self, code: int, message: str | None = None) -> None: ...
        def send_header(self, keyword: str, value: str) -> None: ...
        def end_headers(self) -> None: ...

    def _write_chunk(self, data: bytes) -> None:
        if self.metadata_only:
            data = metadata.partial_event(data)
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def _watch(self, target: Target, query: Query, user: str | None) -> None:
        self._verb(target, "watch")
        rtype, store = target.rtype, self.api.store
        pred = combine(
            parse_label_selector(query_value(query, "labelSelector")),
            parse_field_selector(query_value(query, "fieldSelector"), rtype.kind),
        )
        timeout = query_int(query, "timeoutSeconds")
        bookmarks = query_flag(query, "allowWatchBookmarks")
        initial = query_flag(query, "sendInitialEvents")
        if initial and query_value(query, "resourceVersionMatch") != "NotOlderThan":
            raise errors.bad_request(
                "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
            )
        watcher = Watcher(rtype, target.namespace, pred, user)
        self.metadata_only = metadata.wants(self.headers.get("Accept") or "", "PartialObjectMetadata")
        deadline = time.monotonic() + (timeout if timeout is not None else self.api.default_watch_timeout)
        try:
            current, replay = store.open_watch(watcher, query_value(query, "resourceVersion"), initial)
        except errors.ApiError as exc:
            if exc.code != 410:
                raise
            self._start_stream()
            self._write_chunk(error_line(exc.status()))
            self._write_chunk(b"")
            return
        self.api._stream_opened(watcher)
        try:
            self._start_stream()
            for entry in current:
                line = watcher.initial_line(entry)
                if line:
                    self._write_event(watcher, line)
            if initial:
                self._write_chunk(bookmark_line(rtype, watcher.position, initial_events_end=True))
            for event in replay:  # a watch opened while watches are behind is behind for these too
                line = watcher.render(event)
                if line:
                    self._write_event(watcher, line)
            self._stream(watcher, deadline, bookmarks)
        except WatchClosed as closed:
            if closed.abrupt:
                self._abort()
            else:
                self._write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True
        finally:
            store.close_watch(watcher)
            self.api._stream_closed(watcher)

    def _start_stream(self) -> None:
        self.streaming = True
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _write_event(self, watcher: Watcher, line: bytes) -> None:
        """Write one event's line once no hold keeps it back (FakeApiServer.watches_behind)."""
        while (hold := self.api.held_watches.get(watcher.rtype.plural)) is not None and not hold.take(watcher):
            time.sleep(0.01)
        self._write_chunk(line)

    def _stream(self, watcher: Watcher, deadline: float, bookmarks: bool) -> None:
        store, rtype = self.api.store, watcher.rtype
        interval = self.api.bookmark_interval
        next_bookmark = time.monotonic() + interval
        while True:
            now = time.monotonic()
            if now >= deadline:
                if bookmarks:
                    rv = store.bookmark_version(watcher)
                    if rv is not None:
                        self._write_chunk(bookmark_line(rtype, rv))
                self._write_chunk(b"")
                return
            if rtype.plural in self.api.held_watches:  # behind: no bookmark either while events wait
                next_bookmark = time.monotonic() + interval
            event = watcher.next(min(0.2, deadline - now))
            if event is None:
                if self._client_gone():
                    self.close_connection = True
                    return
                if bookmarks and time.monotonic() >= next_bookmark:
                    rv = store.bookmark_version(watcher)
                    if rv is not None:
                        self._write_chunk(bookmark_line(rtype, rv))
                    next_bookmark = time.monotonic() + interval
                continue
            line = watcher.render(event)
            if line:
                self._write_event(watcher, line)
