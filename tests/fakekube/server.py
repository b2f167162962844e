"""The fake API server: an HTTP(S) server on 127.0.0.1 plus the test-side control API.

Usage::

    with FakeApiServer(tls=True) as server:
        server.store.create({"apiVersion": "v1", "kind": "Pod", ...})          # in-process setup
        api = kubernetes.client.CoreV1Api(server.api_client())                 # the real client
        server.fail_next("PATCH", r"/pods/web$", 409, reason="Conflict")      # fault injection
        ...
        assert not server.requests_matching("PATCH")                          # request log

Control API: ``url``, ``kubeconfig(path)``, ``client_configuration()``, ``api_client()``, ``store``,
``requests``/``requests_matching()``/``clear_requests()``, ``fail_next()``/``clear_faults()``,
``drop_watches()``, ``compact()``, ``set_latency()``, ``hold()``, ``add_token()``, ``watchers()``/``wait_for_watchers()``.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import kubernetes.client
import yaml

from tests.waiting import HANG_SECONDS

from .admission import AdmissionChain, ApiWrites
from .controllers import ControllerManager
from .errors import DEFAULT_REASONS, ApiError
from .handler import ApiHandler
from .resources import Registry
from .store import Store
from .tls import tls_material
from .watch import Watcher, WatchHold

if TYPE_CHECKING:  # celmut's runtime loads only for tests that enable native MAP evaluation
    from .native_map import NativeAdmissionPolicies
    from .validating_webhooks import ValidatingWebhooks
    from .webhooks import MutatingWebhooks

DEFAULT_TOKEN = "fakekube-admin-token"
DEFAULT_USER = "kubernetes-admin"


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    token: str | None
    user: str | None
    content_type: str
    body: bytes
    time: float
    accept: str = ""  # the Accept header (metadata-only reads: tests/fakekube/metadata.py)

    def json(self) -> Any:
        """The body decoded as JSON (None when empty)."""
        import json

        return json.loads(self.body) if self.body else None


@dataclass
class Fault:
    """An injected failure: the next ``times`` requests matching ``method``/``path`` get ``status``."""

    method: str
    path: re.Pattern[str]
    status: int
    times: int | None
    reason: str | None
    message: str | None
    headers: dict[str, str] = field(default_factory=dict)
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        """Whether a request is one this fault is for."""
        return self.method in ("*", method) and self.path.search(path) is not None


@dataclass
class Hold:
    """Requests matching ``method``/``path`` wait (recorded, not yet handled) until :meth:`release`: a
    test orders what a client does while its requests are in flight (a slow API server, made exact)."""

    method: str
    path: re.Pattern[str]
    released: threading.Event = field(default_factory=threading.Event)
    waiting: int = 0  # requests held right now

    def matches(self, method: str, path: str) -> bool:
        return self.method in ("*", method) and self.path.search(path) is not None

    def release(self) -> None:
        self.released.set()

    def __enter__(self) -> Hold:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], api: FakeApiServer) -> None:
        self.api = api
        super().__init__(address, ApiHandler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Connections cut by either side are routine here."""


class FakeApiServer:
    """A Kubernetes API server stand-in speaking the real REST + watch protocol, for tests."""

    def __init__(
        self,
        *,
        tls: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
        history_size: int = 50_000,
        strict_namespaces: bool = False,
        require_auth: bool = False,
        bookmark_interval: float = 5.0,
        default_watch_timeout: float = 1800.0,
        webhooks: bool = False,
        native_map: bool = False,
        garbage_collection: bool = False,
    ) -> None:
        self.registry = Registry()
        self.store = Store(self.registry, history_size=history_size, strict_namespaces=strict_namespaces)
        self.store.garbage_collection = garbage_collection  # ownerReferences: dependents go with their owner
        # Opt-in pieces of a real cluster (see admission.py, controllers.py): off by default, so a plain
        # fake API server stores what it is sent, unchanged.
        self.admission = AdmissionChain()
        self.writes = ApiWrites(self.store, self.admission)
        self.controllers = ControllerManager(self.store, self.writes)
        self.webhooks: MutatingWebhooks | None = None
        self.validating_webhooks: ValidatingWebhooks | None = None
        self.native_map: NativeAdmissionPolicies | None = None
        if webhooks:
            self.enable_webhooks()
        if native_map:
            self.enable_native_map()
        self.tls = tls
        self.host = host
        self.port = port
        self.require_auth = require_auth
        self.bookmark_interval = bookmark_interval
        self.default_watch_timeout = default_watch_timeout
        self.version_info: dict[str, str] = {
            "major": "1",
            "minor": "33",
            "gitVersion": "v1.33.0-fakekube",
            "gitCommit": "0" * 40,
            "gitTreeState": "clean",
            "buildDate": "2025-04-23T00:00:00Z",
            "goVersion": "go1.24.2",
            "compiler": "gc",
            "platform": "linux/amd64",
        }
        self.tokens: dict[str, str] = {DEFAULT_TOKEN: DEFAULT_USER}
        self._lock = threading.Lock()
        self._requests: list[RequestRecord] = []
        self._faults: list[Fault] = []
        self._holds: list[Hold] = []
        self._latency = 0.0
        self.held_watches: dict[str, WatchHold] = {}  # resources whose watch events wait (watches_behind)
        self._streams: set[Watcher] = set()
        self._connections: set[socket.socket] = set()
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None

    # -- the opt-in admission chain --------------------------------------------------------------
    def enable_webhooks(self) -> MutatingWebhooks:
        """Call the registered MutatingWebhookConfigurations on every CREATE/UPDATE (see webhooks.py), then
        the ValidatingWebhookConfigurations with the final object (validating_webhooks.py)."""
        from .validating_webhooks import ValidatingWebhooks
        from .webhooks import MutatingWebhooks

        if self.webhooks is None:
            self.webhooks = MutatingWebhooks(self.store)
            self.admission.add(self.webhooks)
            self.validating_webhooks = ValidatingWebhooks(self.store, self.webhooks)
            self.admission.add_validator(self.validating_webhooks)
        return self.webhooks

    def enable_native_map(self) -> NativeAdmissionPolicies:
        """Evaluate the stored MutatingAdmissionPolicies natively, before the webhooks (see native_map.py)."""
        from .native_map import NativeAdmissionPolicies

        if self.native_map is None:
            self.native_map = NativeAdmissionPolicies(self.store)
            self.admission.add(self.native_map)
        return self.native_map

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> FakeApiServer:
        """Bind (an ephemeral port unless one was given) and serve in a background thread."""
        httpd = _HttpServer((self.host, self.port), self)
        self._tmpdir = tempfile.TemporaryDirectory(prefix="fakekube-")
        if self.tls:
            material = tls_material()
            cert = Path(self._tmpdir.name, "tls.crt")
            key = Path(self._tmpdir.name, "tls.key")
            cert.write_bytes(material.cert_pem)
            key.write_bytes(material.key_pem)
            Path(self._tmpdir.name, "ca.crt").write_bytes(material.ca_pem)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            httpd.socket = context.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
        self.port = httpd.server_address[1]
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.name = f"fakekube-{self.port}"
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close every watch and connection and stop serving."""
        if self._httpd is None:
            return
        for watcher in self.store.watchers():
            watcher.close(abrupt=False)
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- client side -------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """``http(s)://127.0.0.1:<port>``."""
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    @property
    def ca_file(self) -> str | None:
        """Path of the CA certificate (PEM) when serving TLS."""
        if not self.tls or self._tmpdir is None:
            return None
        return str(Path(self._tmpdir.name, "ca.crt"))

    def add_token(self, token: str, user: str) -> None:
        """Let requests with ``Authorization: Bearer <token>`` be recorded as made by ``user``."""
        self.tokens[token] = user

    def kubeconfig(self, path: str | os.PathLike[str], token: str = DEFAULT_TOKEN, user: str | None = None) -> Path:
        """Write a kubeconfig for this server (bearer token; the CA when TLS) and return its path."""
        if user is not None:
            self.add_token(token, user)
        cluster: dict[str, Any] = {"server": self.url}
        if self.tls:
            cluster["certificate-authority-data"] = base64.b64encode(tls_material().ca_pem).decode()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fakekube", "cluster": cluster}],
            "users": [{"name": "fakekube-user", "user": {"token": token}}],
            "contexts": [
                {
                    "name": "fakekube",
                    "context": {"cluster": "fakekube", "user": "fakekube-user", "namespace": "default"},
                }
            ],
            "current-context": "fakekube",
        }
        target = Path(path)
        target.write_text(yaml.safe_dump(config))
        return target

    def client_configuration(self, token: str = DEFAULT_TOKEN) -> kubernetes.client.Configuration:
        """A ``kubernetes.client.Configuration`` for this server."""
        config = kubernetes.client.Configuration(host=self.url)
        config.api_key = {"authorization": f"Bearer {token}"}
        if self.tls:
            config.ssl_ca_cert = self.ca_file
        return config

    def api_client(self, token: str = DEFAULT_TOKEN) -> kubernetes.client.ApiClient:
        """A ``kubernetes.client.ApiClient`` for this server."""
        return kubernetes.client.ApiClient(self.client_configuration(token))

    # -- request log and faults --------------------------------------------------------------------
    @property
    def requests(self) -> list[RequestRecord]:
        """Every request received so far, in order."""
        with self._lock:
            return list(self._requests)

    def requests_matching(self, method: str | None = None, path: str | None = None) -> list[RequestRecord]:
        """The logged requests with this method and a path matching this regex (``re.search``)."""
        pattern = re.compile(path) if path else None
        return [
            r
            for r in self.requests
            if (method is None or r.method == method.upper()) and (pattern is None or pattern.search(r.path))
        ]

    def clear_requests(self) -> None:
        """Forget the request log."""
        with self._lock:
            self._requests.clear()

    def fail_next(
        self,
        method: str,
        path_regex: str,
        status: int,
        times: int | None = 1,
        reason: str | None = None,
        message: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Fault:
        """Answer the next ``times`` (None: all) requests matching with ``status`` and a Status body.

        ``method`` may be ``"*"``; ``path_regex`` is searched in the URL path. ``status=0`` cuts the
        connection without an answer instead."""
        fault = Fault(method.upper(), re.compile(path_regex), status, times, reason, message, dict(headers or {}))
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        """Remove every injected fault."""
        with self._lock:
            self._faults.clear()

    def set_latency(self, seconds: float) -> None:
        """Delay every request by ``seconds`` before handling it."""
        self._latency = seconds

    def hold(self, method: str, path_regex: str) -> Hold:
        """Hold every request matching (``method`` may be ``"*"``; ``path_regex`` is searched in the URL
        path) until the returned :class:`Hold` is released (or its ``with`` block ends)."""
        held = Hold(method.upper(), re.compile(path_regex))
        with self._lock:
            self._holds = [h for h in self._holds if not h.released.is_set()] + [held]
        return held

    @contextlib.contextmanager
    def watches_behind(self, resource: str) -> Iterator[WatchHold]:
        """Hold the events of every watch on ``resource`` (a plural: ``pods``) until the block ends, then
        send them in order: a watcher that is behind, as a busy client is behind the API server. A watch
        opened during the block is behind too: the events it replays wait as well. The
        :class:`WatchHold` yielded lets events through one at a time (``release``)."""
        hold = self.held_watches[resource] = WatchHold()
        try:
            yield hold
        finally:
            del self.held_watches[resource]

    def _record(
        self,
        method: str,
        path: str,
        query: dict[str, list[str]],
        token: str | None,
        ctype: str,
        body: bytes,
        accept: str = "",
    ) -> str | None:
        user = self.tokens.get(token) if token is not None else "system:anonymous"
        record = RequestRecord(method, path, query, token, user, ctype, body, time.time(), accept)
        with self._lock:
            self._requests.append(record)
        return user

    def _before_request(self, method: str, path: str) -> None:
        if self._latency:
            time.sleep(self._latency)
        with self._lock:
            holds = [h for h in self._holds if h.matches(method, path) and not h.released.is_set()]
            for held in holds:
                held.waiting += 1
        for held in holds:
            held.released.wait()
            with self._lock:
                held.waiting -= 1
        with self._lock:
            fault = next((f for f in self._faults if f.matches(method, path)), None)
            if fault is None:
                return
            fault.hits += 1
            if fault.times is not None:
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
        reason = fault.reason or DEFAULT_REASONS.get(fault.status, "Unknown")
        message = fault.message or f"injected fault: {reason} for {method} {path}"
        raise ApiError(fault.status, message, reason, {}, fault.headers)

    # -- watches -----------------------------------------------------------------------------------
    def _stream_opened(self, watcher: Watcher) -> None:
        with self._lock:
            self._streams.add(watcher)

    def _stream_closed(self, watcher: Watcher) -> None:
        with self._lock:
            self._streams.discard(watcher)

    def _connection_opened(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)

    def _connection_closed(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)

    def watchers(self, resource: str | None = None) -> list[Watcher]:
        """The open watch streams (of one resource type, e.g. ``"pods"``, if given)."""
        with self._lock:
            streams = list(self._streams)
        if resource is None:
            return streams
        rtype = self.store.resolve(resource)
        return [w for w in streams if w.rtype.gvr == rtype.gvr]

    def wait_for_watchers(self, resource: str, count: int = 1, timeout: float = HANG_SECONDS) -> bool:
        """Wait until at least ``count`` watch streams on ``resource`` are open."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.watchers(resource)) >= count:
                return True
            time.sleep(0.01)
        return False

    def drop_watches(self, abrupt: bool = True) -> int:
        """End every open watch: cut the connection (``abrupt``) or end the stream cleanly. Returns how many."""
        streams = self.watchers()
        for watcher in streams:
            watcher.close(abrupt=abrupt)
        return len(streams)

    def compact(self) -> int:
        """Forget the event history (see :meth:`Store.compact`); returns the current resourceVersion."""
        return self.store.compact()
