"""GlobalContextEntries in the fake API server: the CRD celmut ships, entries, and a loopback JSON
service for ``apiCall.service`` entries."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from celmut.install.kyverno_crds import kyverno_crds
from tests.fakekube import FakeApiServer

Obj = dict[str, Any]


def install_gce_crd(fake: FakeApiServer) -> None:
    """The GlobalContextEntry CRD as celmut ships it (crds/kyverno.io_globalcontextentries.yaml)."""
    definition = next(crd.to_dict() for crd in kyverno_crds() if crd.kind == "GlobalContextEntry")
    if not fake.store.exists("customresourcedefinitions", definition["metadata"]["name"]):
        fake.store.create(definition)


def entry(name: str, spec: Obj, version: str = "v2alpha1") -> Obj:
    return {
        "apiVersion": f"kyverno.io/{version}",
        "kind": "GlobalContextEntry",
        "metadata": {"name": name},
        "spec": spec,
    }


def resource_entry(name: str, namespace: str, *projections: tuple[str, str]) -> Obj:
    """An entry caching the ConfigMaps of ``namespace``, with (name, JMESPath) projections."""
    spec: Obj = {"kubernetesResource": {"group": "", "version": "v1", "resource": "configmaps", "namespace": namespace}}
    if projections:
        spec["projections"] = [{"name": n, "jmesPath": p} for n, p in projections]
    return entry(name, spec)


def api_entry(name: str, call: Obj, *projections: tuple[str, str]) -> Obj:
    spec: Obj = {"apiCall": {"refreshInterval": "1h", **call}}
    if projections:
        spec["projections"] = [{"name": n, "jmesPath": p} for n, p in projections]
    return entry(name, spec)


def configmap(name: str, namespace: str, **data: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


class JsonService:
    """A loopback HTTP service answering every GET and POST with ``body`` (JSON); records the requests."""

    def __init__(self, body: Any, status: int = 200) -> None:
        self.body, self.status = body, status
        self.requests: list[tuple[str, str, bytes]] = []
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                service.requests.append((self.command, self.path, self.rfile.read(length) if length else b""))
                payload = json.dumps(service.body).encode()
                self.send_response(service.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    @contextmanager
    def running(self) -> Iterator[JsonService]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()
