"""Connections are bounded (issue 17, item 4; item 7 for disconnects).

``celmut serve`` runs as its own process so that its RSS can be read. With 2,000 idle connections
open (half past their TLS handshake, half that never start it) the RSS stays under a stated bound
and a normal client is served; idle, slowloris and slow-body connections are closed by the
server; one connection over ``--max-connections`` evicts the one idle longest. Before: no timeout
before the first request, 256 KiB zero-filled per TLS connection (2,000 idle: +570 MB, kept after
they closed), nothing closed, no cap.
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
from pathlib import Path

import pytest

from tests.server.support import admission_request, pod, read_all, running_server
from tests.server.test_webhook import POLICY, write

IDLE_CONNECTIONS = 2000
RSS_BOUND_MB = 200  # over the server's RSS before the connections (measured: about 100)




def _closed_by_server(connection: socket.socket) -> bool:
    """Wait (up to the socket's timeout) for the server to close the connection."""
    try:
        while connection.recv(4096):
            pass
    except (ConnectionResetError, ssl.SSLError):
        return True
    except TimeoutError:
        return False
    return True


def test_two_thousand_idle_connections_stay_under_the_rss_bound_and_a_client_is_served(serve) -> None:  # type: ignore[no-untyped-def]
    served = serve()
    before = served.rss_mb()
    idle: list[socket.socket] = []
    try:
        for _ in range(IDLE_CONNECTIONS // 2):
            idle.append(socket.create_connection(("127.0.0.1", served.port)))  # never starts TLS
        for _ in range(IDLE_CONNECTIONS // 2):
            idle.append(served.tls())  # TLS done, no request
        assert served.get().startswith(b"HTTP/1.1 200 OK")
        grown = served.rss_mb() - before
        assert grown < RSS_BOUND_MB, f"{IDLE_CONNECTIONS} idle connections grew the RSS by {grown} MB"
    finally:
        for connection in idle:
            connection.close()


def test_idle_slowloris_and_slow_body_connections_are_closed(serve) -> None:  # type: ignore[no-untyped-def]
    served = serve("--tls-handshake-timeout", "1", "--header-timeout", "1", "--body-timeout", "1")
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as no_handshake:
        assert _closed_by_server(no_handshake)
    with served.tls() as no_request:
        assert _closed_by_server(no_request)
    with served.tls() as slowloris:
        slowloris.sendall(b"POST /mutate HTTP/1.1\r\nHost: webhook\r\n")
        for _ in range(40):  # a header line every 0.1 s, never the blank line that ends them
            try:
                slowloris.sendall(b"X-Padding: 1\r\n")
            except OSError:
                break
            time.sleep(0.1)
        assert _closed_by_server(slowloris)
    with served.tls() as slow_body:
        slow_body.sendall(b"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Length: 1000\r\n\r\n{")
        answer = read_all(slow_body)
        assert answer.startswith(b"HTTP/1.1 408") and b"not received within 1 seconds" in answer


def test_one_connection_over_the_cap_evicts_the_one_idle_longest(serve) -> None:  # type: ignore[no-untyped-def]
    served = serve("--max-connections", "20", "--header-timeout", "60")
    oldest = served.tls()
    others = [served.tls() for _ in range(19)]
    try:
        assert served.get().startswith(b"HTTP/1.1 200 OK")  # the 21st connection
        oldest.settimeout(30)
        assert _closed_by_server(oldest)
    finally:
        for connection in [oldest, *others]:
            connection.close()


def test_a_client_disconnecting_mid_body_is_logged_at_debug_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Item 7: before, uvicorn logged "Exception in ASGI application" (ClientDisconnect) at error."""
    write(tmp_path, "noop", POLICY.format(name="noop", failure="Ignore", expression="'[]'"))
    with running_server(tmp_path, [str(tmp_path / "policies")]) as server:
        port = int(server.url.rsplit(":", 1)[1])
        context = ssl.create_default_context(cafile=str(server.ca_file))
        with caplog.at_level(logging.DEBUG):
            with context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1") as c:
                c.sendall(b"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Length: 100000\r\n\r\n" + b"{" * 10)
            deadline = time.monotonic() + 30
            while not any("disconnected" in r.getMessage() for r in caplog.records):
                assert time.monotonic() < deadline, "the disconnect was never logged"
                time.sleep(0.05)
            assert server.review(admission_request(pod()))["response"]["allowed"] is True
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert any(r.levelno == logging.DEBUG and "disconnected" in r.getMessage() for r in caplog.records)


def test_request_headers_over_the_bound_are_refused_with_431(serve) -> None:  # type: ignore[no-untyped-def]
    """httptools puts no bound on headers (h11 had one): celmut answers 431 past 64 KiB and closes,
    and a request with ordinary headers on a new connection is served."""
    served = serve()
    with served.tls() as flood:
        flood.sendall(b"POST /mutate HTTP/1.1\r\nHost: webhook\r\n")
        try:
            for _ in range(100):  # 100 KiB of headers, never the blank line that ends them
                flood.sendall(b"X-Padding: " + b"a" * 1010 + b"\r\n")
        except OSError:
            pass  # the server closed while we were still sending
        answer = read_all(flood)
        assert answer.startswith(b"HTTP/1.1 431"), answer[:80]
    assert served.get().startswith(b"HTTP/1.1 200 OK")
