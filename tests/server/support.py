"""Start the real webhook (uvicorn, TLS, loopback port) in a thread for a test, or as its own
process (``celmut serve``, :class:`Served`, the ``serve`` fixture of conftest.py), and build reviews."""

from __future__ import annotations

import base64
import http.server
import json
import socket
import ssl
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from celmut.kube import certs
from celmut.server.cluster import ClusterConnection
from celmut.server.metrics import Metrics
from celmut.server.run import ServeConfig, bind, build_store, connect_cluster, make_server
from celmut.service.store import PolicyStore
from tests.service.settings_support import take_service

#: What a test's client waits for an answer beyond the server's deadline before it calls the server hung.
ANSWER_GRACE_SECONDS = 60.0


@dataclass
class RunningServer:
    url: str
    ca_file: Path
    cert_dir: Path
    store: PolicyStore
    metrics: Metrics
    cluster: ClusterConnection | None = None  # with from_cluster=True: its caches and policy source
    # how long the client waits for an answer: the server's own deadline decides what it answers, this only
    # guards against a hang (a loaded machine may take many times longer than a quiet one)
    answer_timeout: float = ANSWER_GRACE_SECONDS

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(
            base_url=self.url,
            verify=ssl.create_default_context(cafile=str(self.ca_file)),
            timeout=self.answer_timeout,
            **kwargs,
        )

    def review(
        self, request: dict[str, Any], path: str = "/mutate", api_version: str = "admission.k8s.io/v1"
    ) -> dict[str, Any]:
        body = {"apiVersion": api_version, "kind": "AdmissionReview", "request": request}
        with self.client() as client:
            answer = client.post(path, json=body)
        assert answer.status_code == 200, answer.text
        return answer.json()


@contextmanager
def running_server(
    tmp_path: Path, policy_paths: list[str], *, material: certs.ServingCertificate | None = None, **settings: Any
) -> Iterator[RunningServer]:
    """``material``: serve with this certificate (replicas behind one Service share the CA)."""
    material = material or certs.self_signed(tmp_path / "tls", ["127.0.0.1", "localhost"])
    options = {"policy_paths": policy_paths, **settings}
    config = ServeConfig(
        service=take_service(options, ServeConfig().service),
        host="127.0.0.1",
        port=0,
        tls_cert=str(material.cert_file),
        tls_key=str(material.key_file),
        reload_interval=0.1,
        **options,
    )
    metrics = Metrics()
    cluster = connect_cluster(config)
    store = build_store(config, metrics, cluster)
    store.reload(force=True)
    server = make_server(config, store, metrics, str(material.cert_file), str(material.key_file), cluster)
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + ANSWER_GRACE_SECONDS  # a hang guard: a loaded machine starts it late
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.01)
    try:
        yield RunningServer(
            f"https://127.0.0.1:{port}",
            material.ca_file,
            material.ca_file.parent,
            store,
            metrics,
            cluster,
            answer_timeout=config.timeout_seconds + ANSWER_GRACE_SECONDS,
        )
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        if cluster is not None:
            cluster.stop()


def pod(name: str = "web", namespace: str = "shop", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}], **spec},
    }


def admission_request(obj: dict[str, Any] | None, operation: str = "CREATE", **extra: Any) -> dict[str, Any]:
    subject = obj if obj is not None else extra.get("oldObject") or {}
    meta = subject.get("metadata") or {}
    request = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "", "version": "v1", "kind": subject.get("kind", "Pod")},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "requestKind": {"group": "", "version": "v1", "kind": subject.get("kind", "Pod")},
        "requestResource": {"group": "", "version": "v1", "resource": "pods"},
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
        "operation": operation,
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": None,
        "dryRun": False,
    }
    request.update(extra)
    return request


def decoded_patch(review: dict[str, Any]) -> list[dict[str, Any]]:
    response = review["response"]
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    return json.loads(base64.b64decode(response["patch"]))


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    port: int
    context: ssl.SSLContext

    def rss_mb(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
        raise AssertionError("no VmRSS")

    def tls(self, timeout: float = 30) -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        return self.context.wrap_socket(raw, server_hostname="127.0.0.1")

    def get(self, path: str = "/healthz") -> bytes:
        with self.tls() as connection:
            connection.sendall(f"GET {path} HTTP/1.1\r\nHost: webhook\r\nConnection: close\r\n\r\n".encode())
            return read_all(connection)



def read_all(connection: socket.socket) -> bytes:
    chunks = []
    while chunk := connection.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


class JsonHandler(http.server.BaseHTTPRequestHandler):
    """A quiet handler for the HTTP services CEL's ``http.Get`` calls in tests: :meth:`reply` sends JSON."""

    def reply(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass
