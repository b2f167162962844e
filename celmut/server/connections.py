"""Bounded connections for the webhook: how many, and how long each may idle at every stage.

The webhook runs on uvloop with uvicorn's httptools protocol (llhttp, the parser Node.js uses):
the pure-Python h11 protocol and asyncio's loop cost 2-3x the CPU per request
(``benchmarks/webhook_bench.py``, issue 30). uvicorn closes a connection only when it stays idle
after a response (``timeout_keep_alive``); before the first request, while headers trickle in
(slowloris) or while a body is sent byte by byte, it waits for ever, and httptools puts no bound on
the size of a request's headers. The :class:`ConnectionLimits` below close a connection when:

* its TLS handshake takes longer than ``handshake_timeout`` (the loop's ``ssl_handshake_timeout``);
* the headers of a request are not complete ``header_timeout`` after the connection opened or, on a
  kept-alive connection, after the first byte of the next request arrived;
* the request line and headers exceed :data:`MAX_HEADER_BYTES` (answered 431, as h11's limit was);
* the body is not complete ``body_timeout`` after the headers (the app answers 408);
* it idles between requests longer than ``keep_alive_timeout`` (uvicorn's own timer).

At most ``max_connections`` connections are open: one more evicts the connection that has idled
longest without a request in progress (else it is refused), so idle connections can never lock a
real client out. Connections still in their TLS handshake are bounded by the handshake timeout.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import functools
import socket
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from celmut.server.limits import ConnectionLimits


class CoalescingTransport:
    """A transport that sends what was written during one event-loop step as one write.

    uvicorn's HTTP protocols write a response's headers and its body separately; over TLS each write
    is a record and a ``send`` system call, ~10% of the webhook's CPU per admission each
    (py-spy, ``benchmarks/webhook_bench.py``). Writes are joined and sent once the step ends, or at
    once when the connection closes. Everything else is the wrapped transport's.
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(data)

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        if pending and not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


# The request line and headers of one request (h11's default was 16 KiB; Kubernetes sends ~1 KiB).
MAX_HEADER_BYTES = 64 * 1024
_HEADERS_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: 31\r\n\r\nRequest header fields too large"
)


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the header deadline and size bound, the connection cap and
    eviction."""

    limits = ConnectionLimits()
    accepted = 0  # connections accepted so far (TLS handshake or not), on the server's own subclass

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        type(self).accepted += 1
        self._deadline: asyncio.TimerHandle | None = None
        self._header_bytes = 0  # of the request whose headers are being read; -1 while none is
        self._idle_since = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]
        self._idle_since = self.loop.time()
        if len(self.connections) > self.limits.max_connections:
            self._make_room()
        self._arm(self.limits.header_timeout)

    def data_received(self, data: bytes) -> None:
        # Counted while a request's headers are read: from the connection's first byte, and from the
        # parser's start of each next request (on_message_begin) until its headers are complete. The
        # chunk is parsed first: one read may hold the end of the headers and much of the body (a large
        # AdmissionReview), and a body is never counted — nor one still arriving after an early 413.
        # What is parsed before a refusal is one read at most.
        super().data_received(data)
        if self._header_bytes >= 0 and self.parser is not None:
            self._header_bytes += len(data)
            if self._header_bytes > MAX_HEADER_BYTES:
                self._refuse_headers()

    def on_message_begin(self) -> None:
        if self._header_bytes < 0:  # the next request on a kept-alive connection: its first byte is here
            self._header_bytes = 0
            self._arm(self.limits.header_timeout)
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._header_bytes = -1  # the app bounds the body (body_timeout)
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        self._idle_since = self.loop.time()
        super().on_response_complete()

    def _refuse_headers(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if not self.transport.is_closing():
            self.transport.write(_HEADERS_TOO_LARGE)
            self.transport.close()

    def _arm(self, seconds: float) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(seconds, self._expire)

    def _expire(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()

    def _busy(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _make_room(self) -> None:
        """Close the connection idle the longest; refuse this one when every other one is busy."""
        idle = [
            c for c in self.connections if isinstance(c, LimitedHttpToolsProtocol) and c is not self and not c._busy()
        ]
        if not idle:
            self.transport.close()
            return
        oldest = min(idle, key=lambda c: c._idle_since)
        oldest.transport.close()


def protocol_class(limits: ConnectionLimits) -> type[LimitedHttpToolsProtocol]:
    """The protocol uvicorn instantiates per connection, bound to ``limits`` (one class per server)."""
    return type("CelmutHttpProtocol", (LimitedHttpToolsProtocol,), {"limits": limits, "accepted": 0})


# asyncio gives every TLS connection a 256 KiB receive buffer, zero-filled when the connection is
# accepted (``SSLProtocol.max_size``): 2,000 idle connections held 512 MB. A TLS record carries at most
# 16 KiB, so a buffer of that size reads as well and costs a sixteenth. (uvloop, which serves the
# webhook, mallocs its buffer without touching it; this bounds the asyncio loop the tests also run.)
TLS_READ_BUFFER_BYTES = 16 * 1024


class LimitedServer(uvicorn.Server):
    """uvicorn's server, with a TLS handshake timeout on its listening sockets (uvicorn does not pass
    asyncio's ``ssl_handshake_timeout``) and TLS read buffers of :data:`TLS_READ_BUFFER_BYTES`."""

    def __init__(self, config: uvicorn.Config, limits: ConnectionLimits) -> None:
        super().__init__(config)
        self.limits = limits

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        asyncio.sslproto.SSLProtocol.max_size = TLS_READ_BUFFER_BYTES  # this process serves only the webhook
        loop: Any = asyncio.get_running_loop()
        create_server = loop.create_server
        loop.create_server = functools.partial(create_server, ssl_handshake_timeout=self.limits.handshake_timeout)
        try:
            await super().startup(sockets)
        finally:
            del loop.create_server  # the bound method of the loop's class again
