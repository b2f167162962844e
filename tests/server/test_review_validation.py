"""Malformed reviews never give a 5xx or an internal denial (issue 17, item 5).

The AdmissionReview's shape is checked once, up front (admission.k8s.io/v1 ``AdmissionRequest``,
``authentication.k8s.io/v1`` ``UserInfo``, the ``ObjectMeta`` fields celmut reads): a field of
the wrong type is a 400 whose ``metav1.Status`` names it (``details.causes[].field``) and carries
the request's uid (``details.uid``). Every AdmissionReview answer carries the uid; a defect of
celmut is answered as the failurePolicy says. Then hypothesis replaces fields of a valid review
with arbitrary JSON: never a 5xx, the uid always there, every patch applies to the object.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from celmut.server.app import create_app
from celmut.server.metrics import Metrics
from celmut.server.run import ServeConfig, build_store
from celmut.server.settings import ServerSettings
from celmut.service.settings import ServiceSettings
from tests.server.support import admission_request, decoded_patch, pod, running_server
from tests.server.test_webhook import ECHO, POLICY, write

APPLY = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: labels}
spec:
  failurePolicy: Fail
  autogen: {podControllers: {controllers: []}}
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{labels: {"seen": request.userInfo.username + "/" + request.name}}}
"""


def _policies(tmp_path: Path) -> str:
    write(tmp_path, "echo", POLICY.format(name="echo", failure="Ignore", expression=ECHO))
    write(tmp_path, "labels", APPLY)
    return str(tmp_path / "policies")


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    tmp_path = tmp_path_factory.mktemp("validation")
    with running_server(tmp_path, [_policies(tmp_path)]) as server, server.client() as client:
        yield client


def review(request: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("userInfo", "alice", "request.userInfo"),  # before: HTTP 500, plain text, no uid
        ("userInfo", {"username": 7}, "request.userInfo.username"),  # before: denied InternalError on /ignore
        ("userInfo", {"groups": "admins"}, "request.userInfo.groups"),
        ("userInfo", {"extra": {"scopes": "x"}}, "request.userInfo.extra"),
        ("dryRun", "false", "request.dryRun"),  # before: a dry run
        ("name", 12, "request.name"),
        ("namespace", ["shop"], "request.namespace"),
        ("kind", "Pod", "request.kind"),
        ("kind", {"group": "", "version": "v1"}, "request.kind.kind"),
        ("resource", {"resource": 1}, "request.resource.resource"),
        ("subResource", {}, "request.subResource"),
        ("options", "x", "request.options"),
        ("object", [], "request.object"),
    ],
)
def test_a_field_of_the_wrong_shape_is_a_400_naming_it(client: httpx.Client, field: str, value: Any, named: str) -> None:
    request = admission_request(pod())
    request[field] = value
    for path in ("/mutate", "/mutate/ignore", "/mutate/fail"):
        answer = client.post(path, json=review(request))
        assert answer.status_code == 400, answer.text
        status = answer.json()
        assert status["kind"] == "Status" and named in status["message"]
        assert status["details"]["uid"] == request["uid"]
        assert status["details"]["causes"][0]["field"] == named


@pytest.mark.parametrize(
    ("metadata", "named"),
    [
        ("web", "request.object.metadata"),  # with name "": before, HTTP 500 from the log line
        ({"labels": ["app"]}, "request.object.metadata.labels"),
        ({"annotations": {"a": 1}}, "request.object.metadata.annotations"),
        ({"generateName": 3}, "request.object.metadata.generateName"),
        ({"ownerReferences": ["rs"]}, "request.object.metadata.ownerReferences"),
    ],
)
def test_object_metadata_of_the_wrong_shape_is_a_400_naming_it(client: httpx.Client, metadata: Any, named: str) -> None:
    request = admission_request(pod(), name="")
    request["object"]["metadata"] = metadata
    answer = client.post("/mutate/ignore", json=review(request))
    assert answer.status_code == 400 and named in answer.json()["message"], answer.text


def test_a_boolean_dry_run_reaches_cel_and_a_missing_one_is_false(client: httpx.Client) -> None:
    for dry_run, shown in ((True, "true"), (False, "false"), (None, "false")):
        request = admission_request(pod(), dryRun=dry_run)
        answer = client.post("/mutate", json=review(request)).json()
        annotations = jsonpatch.apply_patch(pod(), decoded_patch(answer))["metadata"]["annotations"]
        assert annotations["dry"] == shown


def test_a_defect_of_celmut_follows_the_failure_policy_instead_of_a_500(tmp_path: Path) -> None:
    """A hook failing after the evaluation stands for any defect: /mutate/ignore admits (with a
    warning), /mutate/fail and /mutate (which serves a Fail policy) deny — each with the uid, never
    an HTTP 5xx (before: HTTP 500 plain text)."""

    def broken(_received: dict[str, Any] | None, _admitted: dict[str, Any]) -> None:
        raise RuntimeError("defect")

    metrics = Metrics()
    store = build_store(ServeConfig(ServiceSettings(policy_paths=(_policies(tmp_path),))), metrics)
    store.reload(force=True)
    app = create_app(store, ServerSettings(on_admitted=broken), metrics)
    request = admission_request(pod())

    async def post(path: str) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://webhook") as client:
            return await client.post(path, json=review(request))

    for path, allowed in (("/mutate/ignore", True), ("/mutate/fail", False), ("/mutate", False)):
        answer = asyncio.run(post(path))
        assert answer.status_code == 200, answer.text
        response = answer.json()["response"]
        assert response["uid"] == request["uid"] and response["allowed"] is allowed
        if allowed:
            assert "celmut internal error" in response["warnings"][0]
        else:
            assert response["status"]["reason"] == "InternalError"


# --- fuzzing -------------------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
FIELDS = [
    ("apiVersion",),
    ("kind",),
    ("request",),
    *[
        ("request", name)
        for name in ["uid", "kind", "resource", "requestKind", "requestResource", "subResource", "requestSubResource", "name", "namespace", "operation", "userInfo", "object", "oldObject", "dryRun", "options"]
    ],
    *[("request", "kind", name) for name in ("group", "version", "kind")],
    *[("request", "resource", name) for name in ("group", "version", "resource")],
    *[("request", "userInfo", name) for name in ("username", "uid", "groups", "extra")],
    *[("request", "object", name) for name in ("apiVersion", "kind", "metadata", "spec")],
    *[
        ("request", "object", "metadata", name)
        for name in ("name", "generateName", "namespace", "labels", "annotations", "ownerReferences")
    ],
    ("request", "object", "spec", "containers"),
]
DELETE = object()


def _set(document: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        child = document.get(key) if isinstance(document, dict) else None
        if not isinstance(child, dict):
            return
        document = child
    if value is DELETE:
        document.pop(path[-1], None)
    else:
        document[path[-1]] = value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    changes=st.lists(st.tuples(st.sampled_from(FIELDS), JSON | st.just(DELETE)), min_size=1, max_size=3),
    operation=st.sampled_from(["CREATE", "UPDATE", "DELETE"]),
    path=st.sampled_from(["/mutate", "/mutate/ignore", "/mutate/fail"]),
)
def test_fuzzed_reviews_never_get_a_5xx_and_every_answer_carries_the_uid(
    client: httpx.Client, changes: list[tuple[tuple[str, ...], Any]], operation: str, path: str
) -> None:
    obj = pod(initContainers=[{"name": "init", "image": "busybox"}])
    request = admission_request(None if operation == "DELETE" else obj, operation)
    if operation != "CREATE":
        request["oldObject"] = copy.deepcopy(obj)
    document = review(request)
    for field, value in changes:
        _set(document, field, value)
    answer = client.post(path, content=json.dumps(document))
    assert answer.status_code in (200, 400), answer.text
    sent = document.get("request") if isinstance(document.get("request"), dict) else {}
    uid = sent.get("uid")
    if answer.status_code == 400:
        status = answer.json()
        assert status["kind"] == "Status" and status["message"]
        if isinstance(uid, str) and uid:
            assert status.get("details", {}).get("uid") == uid or "uid" in status["message"]
        return
    body = answer.json()
    assert body["kind"] == "AdmissionReview" and body["response"]["uid"] == uid
    assert isinstance(body["response"]["allowed"], bool)
    patch = decoded_patch(body)
    if patch:
        jsonpatch.apply_patch(sent["object"], patch)  # raises when the patch does not apply
