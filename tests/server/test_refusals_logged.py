"""A request the webhook refuses with a 4xx is counted in /metrics and logged: one structured line saying
what was wrong (the field, the uid when readable, the size), never the body itself — a Secret's data in
a malformed review must not reach the log."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from celmut.logs import JsonFormatter
from tests.server.support import RunningServer, running_server
from tests.server.test_webhook import POLICY, write

SECRET = "hunter2-do-not-log"


class _Lines(logging.Handler):
    """The JSON lines celmut's logger writes (what a log collector would get)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(JsonFormatter())
        self.lines: list[dict[str, object]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[RunningServer]:
    write(tmp_path, "noop", POLICY.format(name="noop", failure="Ignore", expression="'[]'"))
    with running_server(tmp_path, [str(tmp_path / "policies")], max_body_bytes=64 * 1024) as server:
        yield server


@pytest.fixture
def logged() -> Iterator[_Lines]:
    handler, logger = _Lines(), logging.getLogger("celmut.server")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _review(request: object) -> bytes:
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()


SECRET_OBJECT = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"password": SECRET}}
VALID = {
    "operation": "CREATE",
    "kind": {"group": "", "version": "v1", "kind": "Secret"},
    "resource": {"group": "", "version": "v1", "resource": "secrets"},
    "object": SECRET_OBJECT,
}
BAD_BODIES = [
    ("not JSON", b'{"request": {"object": "' + SECRET.encode() + b'"', "", ""),
    ("no uid", _review(VALID), "request.uid", ""),
    (
        "a field of the wrong type, uid readable",
        _review({**VALID, "uid": "u-1", "userInfo": SECRET}),
        "request.userInfo",
        "u-1",
    ),
]


@pytest.mark.parametrize(("what", "body", "field", "uid"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_a_400_is_logged_once_without_the_body(
    served: RunningServer, logged: _Lines, what: str, body: bytes, field: str, uid: str
) -> None:
    with served.client() as client:
        answer = client.post("/mutate", content=body, headers={"content-type": "application/json"})
        assert answer.status_code == 400, what
        assert 'celmut_admission_requests_total{operation="",result="bad_request"} 1.0' in client.get("/metrics").text
    [line] = [line for line in logged.lines if line.get("status") == 400]
    assert line["level"] == "warning" and "invalid AdmissionReview" in str(line["msg"]) and line["error"]
    assert (line["field"], line["uid"], line["bodyBytes"]) == (field, uid, len(body))
    assert SECRET not in json.dumps(logged.lines)


def test_a_413_is_logged_too(served: RunningServer, logged: _Lines) -> None:
    body = _review({"uid": "u-2", "operation": "CREATE", "object": {**SECRET_OBJECT, "pad": "x" * 70_000}})
    with served.client() as client:
        assert client.post("/mutate", content=body).status_code == 413
    [line] = [line for line in logged.lines if line.get("status") == 413]
    assert "exceeds the limit of 65536 bytes" in str(line["error"]) and SECRET not in json.dumps(logged.lines)
