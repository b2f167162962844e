"""The compiled build answers every review byte for byte as the pure-Python build does.

The test process runs the installed celmut (its mypyc-compiled modules, in ``make test-compiled``);
a worker process runs the same install with ``CELMUT_PURE=1`` (its Python sources). Both answer the
same AdmissionReview bodies through the webhook's whole per-request work (``Admission.answer``:
decode and checks, candidates, conditions, mutations, patch, response, audit annotations) and must
send the same status and the same bytes. Two corpora: the recorded one (the shipped policies and the
Kyverno CLI test suites' policies on their own resources, created and updated) and reviews fuzzed by
hypothesis (fields of a valid review replaced by arbitrary JSON, as tests/server's fuzzing does).

Without compiled modules (an editable install) both sides would run the same code: the tests skip.
"""

from __future__ import annotations

import base64
import copy
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from celmut.native import PURE_VARIABLE, current_build
from tests.native.review_worker import Reviewer

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "review_worker.py"
KYVERNO_TESTS = ROOT / "tests" / "data" / "kyverno-tests"
GROUPS = [None, "Fail", "Ignore"]

pytestmark = pytest.mark.skipif(
    current_build().kind != "compiled",
    reason=f"no compiled build installed here ({current_build().reason}): run `make test-compiled`",
)


class PureWorker:
    """The pure-Python side: the installed celmut with CELMUT_PURE=1, outside the checkout."""

    def __init__(self, cwd: Path) -> None:
        environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        environment[PURE_VARIABLE] = "1"
        self.process = subprocess.Popen(
            [sys.executable, "-P", str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd, env=environment
        )

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(orjson.dumps(message) + b"\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, "the pure-Python worker exited"
        reply: dict[str, Any] = orjson.loads(line)
        return reply

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


class Sides:
    """The same policy set loaded on both sides."""

    def __init__(self, worker: PureWorker) -> None:
        self.worker = worker
        self.compiled = Reviewer()

    def load(self, policies: list[dict[str, Any]]) -> None:
        self.compiled.load(policies)
        assert self.worker.call({"policies": policies}) == {"build": "pure"}

    def compare(self, body: bytes, group: str | None = None) -> tuple[int, bytes]:
        status, answer = self.compiled.answer(body, group)
        reply = self.worker.call({"body": base64.b64encode(body).decode(), "group": group})
        assert (status, answer) == (reply["status"], base64.b64decode(reply["body"])), body[:300]
        return status, answer


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sides]:
    worker = PureWorker(tmp_path_factory.mktemp("pure-worker"))
    try:
        yield Sides(worker)
    finally:
        worker.close()


def _documents(*paths: Path) -> list[dict[str, Any]]:
    return [d for p in paths for d in yaml.safe_load_all(p.read_text()) if isinstance(d, dict)]


def review(obj: dict[str, Any] | None, operation: str, old: dict[str, Any] | None = None) -> dict[str, Any]:
    subject = obj if obj is not None else old or {}
    group, _, version = subject.get("apiVersion", "v1").rpartition("/")
    kind = subject.get("kind", "Pod")
    meta = subject.get("metadata") or {}
    resource = {"group": group, "version": version, "resource": kind.lower() + "s"}
    request = {
        "uid": str(uuid.UUID(int=len(str(subject)) * 7919 + len(operation))),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": resource,
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": resource,
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
        "operation": operation,
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def _reviews_of(resources: list[dict[str, Any]]) -> Iterator[bytes]:
    """Each resource created, updated (a label added) and deleted."""
    for resource in resources:
        yield orjson.dumps(review(resource, "CREATE"))
        updated = copy.deepcopy(resource)
        updated.setdefault("metadata", {}).setdefault("labels", {})["updated"] = "yes"
        yield orjson.dumps(review(updated, "UPDATE", old=resource))
        yield orjson.dumps(review(None, "DELETE", old=resource))


def _kyverno_suite(directory: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    (test,) = _documents(directory / "kyverno-test.yaml")
    policies = _documents(*(directory / p for p in test.get("policies") or []))
    resources = _documents(*(directory / r for r in test.get("resources") or []))
    return policies, resources


RECORDED = {
    "shipped policies on the example resources": (
        _documents(*sorted((ROOT / "policies" / "examples").glob("*.yaml")), ROOT / "policies" / "presets" / "gpu-slicing.yaml",
                   ROOT / "examples" / "spot-presets" / "spot-all-except-kube-system.yaml", ROOT / "examples" / "pinning-plan.yaml"),
        _documents(*sorted((ROOT / "examples" / "resources").glob("*.yaml")), *sorted((ROOT / "examples" / "preset-pods").glob("*.yaml"))),
    ),
    "audit attribution policies on their pod": (
        _documents(ROOT / "tests" / "data" / "provenance" / "policies.yaml"),
        _documents(ROOT / "tests" / "data" / "provenance" / "pod.yaml"),
    ),
    **{f"kyverno CLI suite {d.name}": _kyverno_suite(d) for d in sorted(KYVERNO_TESTS.iterdir()) if (d / "kyverno-test.yaml").is_file()},
}
RECORDED = {name: corpus for name, corpus in RECORDED.items() if corpus[1]}  # the JSON-payload suites have none


@pytest.mark.parametrize("corpus", sorted(RECORDED))
def test_recorded_reviews_get_the_same_bytes_from_both_builds(sides: Sides, corpus: str) -> None:
    policies, resources = RECORDED[corpus]
    try:
        sides.compiled.load(policies)
    except ValueError:
        pytest.skip(f"{corpus}: its policies need files this test does not provide")
    sides.load(policies)
    answers = [sides.compare(body, group) for body in _reviews_of(resources) for group in GROUPS]
    assert {status for status, _ in answers} == {200}
    if corpus == "shipped policies on the example resources":  # the corpus exercises the mutation path
        assert sum(b'"patch":' in body for _, body in answers) >= len(resources)


# --- fuzzed reviews ---------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
FIELDS = [
    ("apiVersion",), ("kind",), ("request",),
    *[("request", name) for name in ("uid", "kind", "resource", "subResource", "name", "namespace", "operation",
                                      "userInfo", "object", "oldObject", "dryRun", "options")],
    *[("request", "kind", name) for name in ("group", "version", "kind")],
    *[("request", "userInfo", name) for name in ("username", "groups", "extra")],
    *[("request", "object", "metadata", name) for name in ("name", "namespace", "labels", "annotations", "ownerReferences")],
    *[("request", "object", "spec", name) for name in ("containers", "initContainers", "nodeSelector", "tolerations")],
    ("request", "object", "spec", "containers", 0, "image"),
    ("request", "object", "spec", "containers", 0, "resources"),
    ("request", "object", "spec", "containers", 0, "env"),
]  # fmt: skip
DELETE = object()


def _set(document: Any, path: tuple[str | int, ...], value: Any) -> None:
    for key in path[:-1]:
        in_dict = isinstance(document, dict) and isinstance(document.get(key), dict | list)
        if not in_dict and not (isinstance(document, list) and isinstance(key, int) and key < len(document)):
            return
        document = document[key]
    key = path[-1]
    if isinstance(document, list):
        if isinstance(key, int) and key < len(document):
            document[key] = value if value is not DELETE else None
    elif isinstance(document, dict):
        if value is DELETE:
            document.pop(key, None)
        else:
            document[key] = value


@pytest.fixture(scope="module")
def fuzz_sides(sides: Sides) -> Sides:
    policies, _ = RECORDED["shipped policies on the example resources"]
    sides.load(policies + RECORDED["audit attribution policies on their pod"][0])
    return sides


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    changes=st.lists(st.tuples(st.sampled_from(FIELDS), JSON | st.just(DELETE)), max_size=3),
    resource=st.sampled_from(range(len(RECORDED["shipped policies on the example resources"][1]))),
    operation=st.sampled_from(["CREATE", "UPDATE", "DELETE"]),
    group=st.sampled_from(GROUPS),
)
def test_fuzzed_reviews_get_the_same_bytes_from_both_builds(
    fuzz_sides: Sides, changes: list[tuple[tuple[str | int, ...], Any]], resource: int, operation: str, group: str | None
) -> None:
    obj = copy.deepcopy(RECORDED["shipped policies on the example resources"][1][resource])
    document = review(None if operation == "DELETE" else obj, operation, old=None if operation == "CREATE" else obj)
    for field, value in changes:
        _set(document, field, value)
    fuzz_sides.compare(orjson.dumps(document), group)
