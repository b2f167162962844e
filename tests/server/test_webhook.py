"""The webhook over HTTPS with a real client: AdmissionReview v1/v1beta1 responses, every request
field reaching CEL, failure policies, deadlines, body limits and malformed input, health, readiness
and metrics, and the per-failurePolicy paths."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import jsonpatch
import pytest

from tests.server.support import admission_request, decoded_patch, pod, running_server

POLICY = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {{name: {name}}}
spec:
  failurePolicy: {failure}
  autogen: {{podControllers: {{controllers: []}}}}
  matchConstraints:
    resourceRules: [{{apiGroups: [''], apiVersions: [v1], operations: [CREATE, UPDATE, DELETE], resources: [pods, pods/status]}}]
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: {expression}
"""

ECHO = (
    '\'[JSONPatch{op: "add", path: "/metadata/annotations", value: {'
    '"op": request.operation, "user": request.userInfo.username, "dry": string(request.dryRun), '
    '"sub": request.subResource, "old": string(oldObject != null)}}]\''
)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "policies" / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def echo_server(tmp_path: Path):  # type: ignore[no-untyped-def]
    write(tmp_path, "echo", POLICY.format(name="echo", failure="Fail", expression=ECHO))
    with running_server(tmp_path, [str(tmp_path / "policies")]) as server:
        yield server


@pytest.mark.parametrize("api_version", ["admission.k8s.io/v1", "admission.k8s.io/v1beta1"])
def test_a_create_is_answered_with_the_same_api_version_uid_and_a_patch(echo_server, api_version: str) -> None:  # type: ignore[no-untyped-def]
    request = admission_request(pod())
    review = echo_server.review(request, api_version=api_version)
    assert review["apiVersion"] == api_version and review["kind"] == "AdmissionReview"
    response = review["response"]
    assert response["uid"] == request["uid"] and response["allowed"] is True
    patched = jsonpatch.apply_patch(pod(), decoded_patch(review))
    assert patched["metadata"]["annotations"] == {
        "op": "CREATE",
        "user": "alice",
        "dry": "false",
        "sub": "",
        "old": "false",
    }


def test_update_dry_run_and_subresource_reach_cel(echo_server) -> None:  # type: ignore[no-untyped-def]
    request = admission_request(pod(), "UPDATE", oldObject=pod(), dryRun=True, subResource="status")
    request["userInfo"]["username"] = "bob"
    annotations = jsonpatch.apply_patch(pod(), decoded_patch(echo_server.review(request)))["metadata"]["annotations"]
    assert annotations == {"op": "UPDATE", "user": "bob", "dry": "true", "sub": "status", "old": "true"}


def test_delete_is_admitted_without_a_patch(echo_server) -> None:  # type: ignore[no-untyped-def]
    review = echo_server.review(admission_request(None, "DELETE", oldObject=pod()))
    assert review["response"]["allowed"] is True and "patch" not in review["response"]


def test_fail_denies_naming_policy_and_expression_and_ignore_admits_with_a_warning(tmp_path: Path) -> None:
    broken = '\'[JSONPatch{op: "add", path: "/x", value: object.spec.nothing}]\''
    write(tmp_path, "strict", POLICY.format(name="strict", failure="Fail", expression=broken))
    write(tmp_path, "lenient", POLICY.format(name="lenient", failure="Ignore", expression=broken))
    with running_server(tmp_path, [str(tmp_path / "policies")]) as server:
        denied = server.review(admission_request(pod()))["response"]
        assert denied["allowed"] is False
        assert (
            "policy strict" in denied["status"]["message"]
            and "spec.mutations[0].jsonPatch.expression" in denied["status"]["message"]
        )
        ignored = server.review(admission_request(pod()), path="/mutate/ignore")["response"]
        assert ignored["allowed"] is True and "patch" not in ignored
        assert any("policy lenient" in w for w in ignored["warnings"])
        only_fail = server.review(admission_request(pod()), path="/mutate/fail")["response"]
        assert only_fail["allowed"] is False and "policy strict" in only_fail["status"]["message"]


def test_a_request_hitting_its_deadline_follows_each_policy_failure_policy(tmp_path: Path) -> None:
    slow = "'object.spec.containers.all(c, object.spec.nums.all(i, object.spec.nums.all(j, i + j >= 0))) ? [] : []'"
    write(tmp_path, "slow-fail", POLICY.format(name="slow-fail", failure="Fail", expression=slow))
    write(tmp_path, "slow-ignore", POLICY.format(name="slow-ignore", failure="Ignore", expression=slow))
    big = pod(nums=list(range(3000)))
    with running_server(tmp_path, [str(tmp_path / "policies")], timeout_seconds=0.3) as server:
        response = server.review(admission_request(big))["response"]
        assert response["allowed"] is False
        assert "deadline exceeded" in response["status"]["message"] or "cost limit" in response["status"]["message"]
        ignored = server.review(admission_request(big), path="/mutate/ignore")["response"]
        assert ignored["allowed"] is True


def test_bad_input_gets_http_errors_and_the_server_keeps_serving(echo_server) -> None:  # type: ignore[no-untyped-def]
    with echo_server.client() as client:
        assert client.post("/mutate", content=b"{not json").status_code == 400
        not_review = client.post("/mutate", json={"kind": "Pod"})
        assert not_review.status_code == 400 and "kind must be AdmissionReview" in not_review.json()["message"]
        no_uid = client.post(
            "/mutate", json={"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}
        )
        assert no_uid.status_code == 400 and "uid" in no_uid.json()["message"]
        huge = client.post("/mutate", content=b"x" * (3 * 1024 * 1024 + 1))
        assert huge.status_code == 413
        assert client.post("/mutate/sideways", json={}).status_code == 404
        assert client.get("/healthz").text == "ok"
    assert echo_server.review(admission_request(pod()))["response"]["allowed"] is True


def test_health_readiness_and_metrics(echo_server) -> None:  # type: ignore[no-untyped-def]
    echo_server.review(admission_request(pod()))
    with echo_server.client() as client:
        assert client.get("/readyz").status_code == 200
        metrics = client.get("/metrics").text
    assert 'celmut_admission_requests_total{operation="CREATE",result="mutated"}' in metrics
    assert "celmut_admission_duration_seconds_bucket" in metrics
    assert 'celmut_policy_duration_seconds_count{policy="echo"}' in metrics
    assert "celmut_policies_loaded 1.0" in metrics


def test_plain_http_is_refused(echo_server) -> None:  # type: ignore[no-untyped-def]
    import httpx

    with pytest.raises(httpx.HTTPError):
        httpx.get(echo_server.url.replace("https://", "http://") + "/healthz", timeout=3)


def test_the_response_patch_is_valid_rfc6902_json(echo_server) -> None:  # type: ignore[no-untyped-def]
    patch = decoded_patch(echo_server.review(admission_request(pod())))
    assert json.loads(json.dumps(patch)) == patch and all(op["op"] in ("add", "replace", "remove") for op in patch)


def test_each_admission_is_logged_as_one_json_line_without_object_contents(echo_server, caplog) -> None:  # type: ignore[no-untyped-def]
    import logging

    from celmut.logs import JsonFormatter

    request = admission_request(pod(), dryRun=True)
    with caplog.at_level(logging.INFO, logger="celmut.server"):
        echo_server.review(request)
    (record,) = [r for r in caplog.records if r.getMessage() == "admission"]
    line = json.loads(JsonFormatter().format(record))
    assert {k: line[k] for k in ("uid", "operation", "kind", "namespace", "objectName", "applied", "dryRun")} == {
        "uid": request["uid"],
        "operation": "CREATE",
        "kind": "Pod",
        "namespace": "shop",
        "objectName": "web",
        "applied": ["echo"],
        "dryRun": True,
    }
    assert line["durationMs"] > 0 and "nginx" not in json.dumps(line)  # never the object's contents


def test_requests_from_the_background_controller_skip_skip_background_policies(tmp_path: Path) -> None:
    write(tmp_path, "echo", POLICY.format(name="echo", failure="Fail", expression=ECHO))
    controller = "system:serviceaccount:ops:celmut-controller"
    with running_server(tmp_path, [str(tmp_path / "policies")], background_usernames=frozenset({controller})) as server:
        from_controller = admission_request(pod(), userInfo={"username": controller, "groups": []})
        assert decoded_patch(server.review(from_controller)) == []  # skipBackgroundRequests defaults to true
        assert decoded_patch(server.review(admission_request(pod())))  # anyone else is mutated


def test_the_listening_socket_is_tcp_so_asyncio_disables_nagle() -> None:
    """asyncio sets TCP_NODELAY only on sockets whose proto is TCP; with Nagle on, every response
    (headers, then body) waited ~40 ms for the client's delayed ACK."""
    import socket

    from celmut.server.run import bind

    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()
