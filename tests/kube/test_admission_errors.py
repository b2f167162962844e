"""The webhook's admission errors as coalesced Events (celmut/kube/admission_errors.py), through the fake
API server and the real client: which admissions are recorded, one Event per (resource, policy) whatever
the number of admissions and replicas, and the round trip the controller reads back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from celmut.kube.admission_errors import AdmissionError, AdmissionErrorRecorder, errors_of, event_of, parse_event
from celmut.kube.client import Cluster
from celmut.runtime import AdmissionInput
from tests.fakekube import FakeApiServer


@dataclass
class Outcome:
    policy: str
    status: str
    reason: str = ""
    path: str = ""
    binding: str = ""


@dataclass
class Result:
    outcomes: list[Outcome] = field(default_factory=list)
    allowed: bool = True


def cm(name: str = "cm", version: str = "7") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "team", "resourceVersion": version},
    }


FAILED = Outcome("ns/p (autogen defaults)", "error", "no such key: x", "spec.mutations[0]")


@pytest.mark.parametrize(
    ("case", "request_", "result", "expected"),
    [
        (
            "an error under Ignore: recorded with the policy's report key, the message with its path",
            AdmissionInput.from_object(cm(), "CREATE"),
            Result([FAILED, Outcome("other", "applied")]),
            [("ns/p", "spec.mutations[0]: no such key: x", "", False)],
        ),
        (
            "an UPDATE: the version it replaced names the change",
            AdmissionInput.from_object(cm(), "UPDATE", old_object=cm(version="6")),
            Result([FAILED]),
            [("ns/p", "spec.mutations[0]: no such key: x", "6", False)],
        ),
        (
            "denied under Fail: recorded as denied",
            AdmissionInput.from_object(cm(), "CREATE"),
            Result([FAILED], allowed=False),
            [("ns/p", "spec.mutations[0]: no such key: x", "", True)],
        ),
        ("no error: nothing", AdmissionInput.from_object(cm(), "CREATE"), Result([Outcome("p", "applied")]), []),
        (
            "a dry run: nothing (kyverno mpol handler needsReports)",
            AdmissionInput.from_object(cm(), "CREATE", dry_run=True),
            Result([FAILED]),
            [],
        ),
        (
            "a DELETE: nothing (needsReports)",
            AdmissionInput.from_object(None, "DELETE", old_object=cm()),
            Result([FAILED]),
            [],
        ),
        (
            "generateName, no name yet: nothing to find the resource by",
            AdmissionInput.from_object({**cm(), "metadata": {"generateName": "cm-", "namespace": "team"}}),
            Result([FAILED]),
            [],
        ),
    ],
)
def test_which_admissions_are_recorded(case: str, request_: Any, result: Result, expected: list[Any]) -> None:
    errors = errors_of(request_, result, now=100)
    assert [(e.policy, e.message, e.old_version, e.denied) for e in errors] == expected, case
    for error in errors:
        assert (error.api_version, error.kind, error.resource, error.namespace, error.name, error.time) == (
            "v1",
            "ConfigMap",
            "configmaps",
            "team",
            "cm",
            100,
        )
        assert parse_event(event_of(error, 1, error.time)) == error  # what the controller reads back


def error(time: int, message: str = "boom") -> AdmissionError:
    return AdmissionError("v1", "ConfigMap", "configmaps", "team", "cm", "p", message, time=time)


def event_writes(server: FakeApiServer) -> int:
    return sum(len(server.requests_matching(m, "/events")) for m in ("POST", "PUT"))


def test_many_admissions_and_two_replicas_make_one_event(fake_apiserver: FakeApiServer, cluster: Cluster) -> None:
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    first, second = AdmissionErrorRecorder(cluster), AdmissionErrorRecorder(cluster)
    for t in range(50):
        first.record(error(1000 + t))
    assert first.flush() == 1 and event_writes(fake_apiserver) == 1  # 50 admissions, one create
    second.record(error(2000, "later"))
    second.record(error(2001, "latest"))
    assert second.flush() == 1  # another replica: AlreadyExists, then it adds to the same Event
    first.record(error(3000, "last"))
    assert first.flush() == 1  # its known version is stale: read again, then replace
    [event] = fake_apiserver.store.list("events", "team")
    assert event["count"] == 53 and event["reason"] == "PolicyError" and event["type"] == "Warning"
    parsed = parse_event(event)
    assert parsed is not None and (parsed.message, parsed.time) == ("last", 3000)
    assert event["firstTimestamp"] == "1970-01-01T00:16:40Z"  # the first admission's, kept across updates
