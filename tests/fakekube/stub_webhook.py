"""A minimal HTTPS admission webhook for tests of the fake API server's admission chain.

``StubWebhook(tmp_path, answer)`` serves ``POST <any path>`` on 127.0.0.1 over TLS (its own CA, see
``ca_bundle``); ``answer(request) -> (patch operations | None, denial message | None)`` decides. Every
AdmissionReview request is kept in ``requests``. ``registration()`` builds a MutatingWebhookConfiguration
entry pointing at it.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from celmut.kube import certs

Obj = dict[str, Any]
Answer = Callable[[Obj], tuple[list[Obj] | None, str | None]]


class StubWebhook:
    def __init__(self, directory: Path, answer: Answer, material: certs.ServingCertificate | None = None) -> None:
        """``material``: serve with another stub's certificate (two endpoints of one Service share a CA)."""
        material = material or certs.self_signed(directory, ["127.0.0.1"])
        self.material = material
        self.ca_bundle = base64.b64encode(material.ca_file.read_bytes()).decode()
        self.answer = answer
        self.requests: list[Obj] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = review["request"]
                stub.requests.append(request)
                patch, denial = stub.answer(request)
                response: Obj = {"uid": request["uid"], "allowed": denial is None}
                if denial is not None:
                    response["status"] = {"code": 403, "message": denial}
                elif patch:
                    response["patchType"] = "JSONPatch"
                    response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
                body = json.dumps({"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": response})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(material.cert_file, material.key_file)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> StubWebhook:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def registration(self, name: str, rules: list[Obj], **fields: Any) -> Obj:
        """One webhook entry of a MutatingWebhookConfiguration calling this stub."""
        return {
            "name": name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": f"{self.url}/mutate", "caBundle": self.ca_bundle},
            "sideEffects": "None",
            "rules": rules,
            **fields,
        }


def configuration(name: str, *webhooks: Obj) -> Obj:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": list(webhooks),
    }


def rule(resources: list[str], group: str = "", operations: tuple[str, ...] = ("CREATE",)) -> Obj:
    return {"apiGroups": [group], "apiVersions": ["v1"], "operations": list(operations), "resources": resources}
