"""One slow admission delays neither the probes nor other admissions (issue 17, item 1).

A policy calls a local HTTP stub that the test holds (the admission is then inside CEL for as long
as the test wants), or burns its whole CPU budget; meanwhile a benign admission, ``/healthz`` and
``/readyz`` must be answered. The assertions are on order of completion, never on durations: the
benign requests complete while the slow one is still running. Before, CEL ran on the event loop:
everything waited for the slow admission.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from celmut import cel
from tests.server.support import JsonHandler, RunningServer, admission_request, pod, running_server
from tests.server.test_webhook import write
from tests.waiting import HANG_SECONDS


class _Gate(http.server.ThreadingHTTPServer):
    """An HTTP endpoint that answers only once the test releases it (or at once, if ``hold`` is off)."""

    daemon_threads = True

    def __init__(self, hold: bool) -> None:
        super().__init__(("127.0.0.1", 0), _GateHandler)
        self.hold = hold
        self.entered = threading.Event()
        self.release = threading.Event()


class _GateHandler(JsonHandler):
    server: _Gate

    def do_GET(self) -> None:
        self.server.entered.set()
        if self.server.hold:
            self.server.release.wait(60)
        self.reply(b'{"ok": true}')


@pytest.fixture
def gate(request: pytest.FixtureRequest) -> Iterator[_Gate]:
    server = _Gate(hold=request.param)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()


BURNERS = 4  # variables comparing 180,000 pairs of lists each: seconds of CPU, within every limit
BURN = "lists.range(600).map(i, [i]).distinct().size() > 0"
SLOW_POLICY = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {{name: slow}}
spec:
  failurePolicy: Ignore
  autogen: {{podControllers: {{controllers: []}}}}
  matchConstraints:
    resourceRules: [{{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}}]
  matchConditions:
  - {{name: slow, expression: "has(object.metadata.labels.slow)"}}
  variables: {variables}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: {expression}
"""


def _serve(tmp_path: Path, gate: _Gate, burners: int) -> Any:
    url = f"http://127.0.0.1:{gate.server_address[1]}/gate"
    variables = "[" + ", ".join(f"{{name: v{i}, expression: '{BURN}'}}" for i in range(burners)) + "]"
    work = " && ".join([f'string(http.Get("{url}").ok) == "true"'] + [f"variables.v{i}" for i in range(burners)])
    expression = f"'{work} ? [JSONPatch{{op: \"add\", path: \"/metadata/annotations\", value: {{\"slow\": \"done\"}}}}] : []'"
    write(tmp_path, "slow", SLOW_POLICY.format(variables=variables, expression=expression))
    services = cel.Services(http_policy=cel.HttpPolicy(allow=[url], allow_private_networks=True, timeout_seconds=30))
    return running_server(tmp_path, [str(tmp_path / "policies")], timeout_seconds=30, services=services)


def _slow_admission(server: RunningServer, finished: list[str]) -> threading.Thread:
    slow = pod(name="slow")
    slow["metadata"]["labels"]["slow"] = "yes"

    def send() -> None:
        server.review(admission_request(slow))
        finished.append("slow")

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def _benign_requests(server: RunningServer, finished: list[str]) -> None:
    with server.client() as client:
        assert client.get("/healthz").text == "ok"
        finished.append("healthz")
        assert client.get("/readyz").text == "ok"
        finished.append("readyz")
    review = server.review(admission_request(pod(name="benign")))
    assert review["response"]["allowed"] is True and "patch" not in review["response"]
    finished.append("benign")


@pytest.mark.parametrize("gate", [True], indirect=True)
def test_an_admission_waiting_inside_cel_delays_neither_probes_nor_other_admissions(
    tmp_path: Path, gate: _Gate
) -> None:
    finished: list[str] = []
    with _serve(tmp_path, gate, 0) as server:
        slow = _slow_admission(server, finished)
        assert gate.entered.wait(HANG_SECONDS), "the slow admission never reached its HTTP call"
        _benign_requests(server, finished)
        assert finished == ["healthz", "readyz", "benign"]  # the slow one is still waiting for the gate
        gate.release.set()
        slow.join(HANG_SECONDS)
    assert finished == ["healthz", "readyz", "benign", "slow"]


@pytest.mark.parametrize("gate", [False], indirect=True)
def test_an_admission_burning_its_cpu_budget_delays_neither_probes_nor_other_admissions(
    tmp_path: Path, gate: _Gate
) -> None:
    """The slow admission runs CEL on the CPU for seconds: Python switches threads every few
    milliseconds, so the event loop and the benign admission get their turns (before: the event
    loop itself was evaluating)."""
    finished: list[str] = []
    with _serve(tmp_path, gate, BURNERS) as server:
        slow = _slow_admission(server, finished)
        assert gate.entered.wait(HANG_SECONDS), "the slow admission never started"
        _benign_requests(server, finished)
        slow.join(HANG_SECONDS)
    assert finished == ["healthz", "readyz", "benign", "slow"]
