"""Where an admission is evaluated (:mod:`celmut.server.mutate`): on the event loop for one short
time slice, and again from the start on a worker thread when it needs longer or would wait for I/O.

What a user sees must not depend on where it ran: the rescheduled admission answers the same patch,
applied once (nothing of the interrupted attempt leaks into the answer), and its deadline still
counts from its arrival. The counter ``celmut_admissions_rescheduled`` says which path was taken.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

from tests.server.support import RunningServer, admission_request, decoded_patch, pod, running_server
from tests.server.test_webhook import write

POLICY = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {{name: label}}
spec:
  failurePolicy: Fail
  autogen: {{podControllers: {{controllers: []}}}}
  matchConstraints:
    resourceRules: [{{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}}]
  variables:
  - {{name: burn, expression: "{burn}"}}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        variables.burn ? [JSONPatch{{op: "add", path: "/metadata/labels/seen", value: "yes"}}] : []
"""
CHEAP = "true"
# a few hundred milliseconds of CEL on the CPU: far past the 5 ms slice, far within every limit
COSTLY = "lists.range(300).map(i, [i]).distinct().size() > 0"


def _rescheduled(server: RunningServer) -> float:
    return server.metrics.rescheduled._value.get()  # type: ignore[attr-defined,no-any-return]


def _serve(tmp_path: Path, burn: str) -> AbstractContextManager[RunningServer]:
    write(tmp_path, "label", POLICY.format(burn=burn))
    return running_server(tmp_path, [str(tmp_path / "policies")], timeout_seconds=30)


def test_a_cheap_admission_is_answered_on_the_event_loop(tmp_path: Path) -> None:
    """Most of ten, not all: the slice is CPU time (a process the OS took the CPU from is not
    rescheduled), but a loaded CI machine may still make ten cheap admissions cost more than 5 ms of it."""
    with _serve(tmp_path, CHEAP) as server:
        for index in range(10):
            review = server.review(admission_request(pod(name=f"p{index}")))
            assert decoded_patch(review) == [{"op": "add", "path": "/metadata/labels/seen", "value": "yes"}]
        assert _rescheduled(server) <= 2


def test_an_admission_past_its_time_slice_is_answered_once_from_a_worker_thread(tmp_path: Path) -> None:
    with _serve(tmp_path, COSTLY) as server:
        review = server.review(admission_request(pod(name="slow")))
        assert review["response"]["allowed"] is True
        assert decoded_patch(review) == [{"op": "add", "path": "/metadata/labels/seen", "value": "yes"}]
        assert _rescheduled(server) == 1
        # the next admission goes to the pool at once (InlineGate): it is not rescheduled again
        review = server.review(admission_request(pod(name="next")))
        assert decoded_patch(review) == [{"op": "add", "path": "/metadata/labels/seen", "value": "yes"}]
        assert _rescheduled(server) == 1
