"""The HTTP allow-list is an operator setting (issue 17, item 6): ``serve``/``controller`` flags.

Before, ``http.Get`` could never succeed from the webhook: the allow-list existed only in the Python
API. A policy calls a local stub (a loopback address, private: it needs ``--http-allow-network``)."""

from __future__ import annotations

import base64
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from celmut import cel
from celmut.controller.run import Controller, ControllerConfig
from celmut.main import main
from celmut.service.settings import ServiceSettings, surface_engine
from tests.controller.support import connect
from tests.fakekube import FakeApiServer
from tests.server.support import JsonHandler, Served, admission_request, pod
from tests.server.test_webhook import POLICY, write


class _Team(JsonHandler):
    def do_GET(self) -> None:
        self.reply(b'{"team": "payments"}')


@pytest.fixture
def team_api() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Team)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/teams/"
    finally:
        server.shutdown()
        server.server_close()


def _admit(served: Served) -> dict[str, Any]:
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": admission_request(pod())})
    with served.tls() as connection:
        head = f"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        connection.sendall(f"{head}Connection: close\r\n\r\n{body}".encode())
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    answer = b"".join(chunks)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    result: dict[str, Any] = json.loads(answer.split(b"\r\n\r\n", 1)[1])["response"]
    return result


def test_serve_flags_let_cel_call_an_allowed_url_and_nothing_else(
    tmp_path: Path, serve: Any, team_api: str
) -> None:
    expression = (
        f"'[JSONPatch{{op: \"add\", path: \"/metadata/annotations\", "
        f"value: {{\"team\": http.Get(\"{team_api}web\").team}}}}]'"
    )
    write(tmp_path, "team", POLICY.format(name="team", failure="Ignore", expression=expression))
    denied = _admit(serve())
    assert denied["allowed"] is True and "patch" not in denied
    assert "the HTTP allow-list is empty" in denied["warnings"][0]
    private = _admit(serve("--http-allow", team_api))
    assert "a loopback address (private networks are not allowed)" in private["warnings"][0]
    allowed = _admit(serve("--http-allow", team_api, "--http-allow-network", "127.0.0.0/8"))
    patch = json.loads(base64.b64decode(allowed["patch"]))
    assert patch == [{"op": "add", "path": "/metadata/annotations", "value": {"team": "payments"}}]


@pytest.mark.parametrize("command", ["serve", "controller"])
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--http-allow-network", "10.96.0.0/33"], "is not a CIDR"),
        (["--http-allow", "ftp://files.example.com/"], "is not an http(s) URL"),
        (["--http-timeout", "0"], "--http-timeout must be positive"),
    ],
)
def test_a_bad_allow_list_is_refused_at_start(
    command: str, flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--policies", "/nonexistent", *flags]) == 2
    assert message in capsys.readouterr().err


def test_the_controller_evaluates_with_the_allow_list_it_was_given(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    policy = cel.HttpPolicy(allow=("https://teams.example.com/",), allow_networks=("10.96.0.0/12",))
    cluster = connect(fake_apiserver, tmp_path)
    try:
        service = ServiceSettings(
            policy_paths=(str(tmp_path),), engine=surface_engine(services=cel.Services(http_policy=policy))
        )
        controller = Controller(ControllerConfig(service), cluster)
        controller.store.reload(force=True)
        engine = controller.store.engine
        assert engine is not None and engine.options.services.http_policy is policy
    finally:
        cluster.close()
