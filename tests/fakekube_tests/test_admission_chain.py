"""The fake API server's opt-in admission chain: registered mutating webhooks and native MAP evaluation,
with kube-apiserver's matching, failurePolicy and reinvocation rules (upstream files named in
tests/fakekube/webhooks.py and native_map.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from tests.fakekube import FakeApiServer
from tests.fakekube.stub_webhook import StubWebhook, configuration, rule
from tests.kube.conftest import admission_policy, append_toleration, binding

Obj = dict[str, Any]


def pod(name: str = "p", namespace: str = "default", **labels: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def add_label(key: str, value: str) -> Any:
    def answer(request: Obj) -> tuple[list[Obj] | None, str | None]:
        labels = request["object"]["metadata"].get("labels")
        if labels is None:
            return [{"op": "add", "path": "/metadata/labels", "value": {key: value}}], None
        return [{"op": "add", "path": f"/metadata/labels/{key}", "value": value}], None

    return answer


def create_pod(server: FakeApiServer, obj: Obj) -> Obj:
    core = kubernetes.client.CoreV1Api(server.api_client())
    created = core.create_namespaced_pod(obj["metadata"]["namespace"], obj)
    return server.store.get("pods", created.metadata.name, obj["metadata"]["namespace"])


def test_without_the_marker_nothing_is_admitted(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    with StubWebhook(tmp_path, add_label("seen", "yes")) as stub:
        fake_apiserver.store.create(configuration("c", stub.registration("w.example.io", [rule(["pods"])])))
        stored = create_pod(fake_apiserver, pod())
    assert "seen" not in stored["metadata"]["labels"] and not stub.requests


@pytest.mark.fakekube(webhooks=True)
def test_a_matching_webhook_is_called_over_https_and_its_patch_stored(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    with StubWebhook(tmp_path, add_label("seen", "yes")) as stub:
        fake_apiserver.store.create(configuration("c", stub.registration("w.example.io", [rule(["pods"])])))
        stored = create_pod(fake_apiserver, pod())
        core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
        core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})  # no rule: not sent
    assert stored["metadata"]["labels"]["seen"] == "yes"
    assert [r["kind"]["kind"] for r in stub.requests] == ["Pod"]
    assert stub.requests[0]["namespace"] == "default" and stub.requests[0]["operation"] == "CREATE"


@pytest.mark.fakekube(webhooks=True)
@pytest.mark.parametrize(
    ("selectors", "sent"),
    [
        pytest.param(
            {"objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}},
            False,
            id="objectSelector-excludes-labelled-objects",
        ),
        pytest.param(
            {"namespaceSelector": {"matchLabels": {"team": "a"}}}, True, id="namespaceSelector-matches-ns-labels"
        ),
        pytest.param({"namespaceSelector": {"matchLabels": {"team": "b"}}}, False, id="namespaceSelector-excludes"),
    ],
)
def test_selectors_decide_which_objects_are_sent(
    fake_apiserver: FakeApiServer, tmp_path: Path, selectors: Obj, sent: bool
) -> None:
    fake_apiserver.store.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "labels": {"team": "a"}}}
    )
    with StubWebhook(tmp_path, add_label("seen", "yes")) as stub:
        registration = stub.registration("w.example.io", [rule(["pods"])], **selectors)
        fake_apiserver.store.create(configuration("c", registration))
        create_pod(fake_apiserver, pod(namespace="a", skip="yes"))
    assert bool(stub.requests) is sent


@pytest.mark.fakekube(webhooks=True)
def test_failure_policy_decides_when_the_call_fails(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    with StubWebhook(tmp_path, add_label("seen", "yes")) as stub:
        gone = stub.registration("gone.example.io", [rule(["pods"])], failurePolicy="Ignore")
        gone["clientConfig"]["url"] = "https://127.0.0.1:1/mutate"  # nothing listens there
        fake_apiserver.store.create(configuration("c", gone))
        assert "seen" not in create_pod(fake_apiserver, pod("a"))["metadata"]["labels"]
        gone["failurePolicy"] = "Fail"
        fake_apiserver.store.update({**configuration("c", gone), "metadata": {"name": "c"}})
        with pytest.raises(ApiException) as failed:
            create_pod(fake_apiserver, pod("b"))
    assert failed.value.status == 500
    assert 'failed calling webhook "gone.example.io"' in json.loads(failed.value.body)["message"]
    assert [c.outcome for c in fake_apiserver.webhooks.calls] == ["failed-ignored", "failed"]  # type: ignore[union-attr]


@pytest.mark.fakekube(webhooks=True)
def test_a_denial_rejects_the_request(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    with StubWebhook(tmp_path, lambda request: (None, "no pods today")) as stub:
        fake_apiserver.store.create(configuration("c", stub.registration("w.example.io", [rule(["pods"])])))
        with pytest.raises(ApiException) as denied:
            create_pod(fake_apiserver, pod())
    assert denied.value.status == 403
    assert (
        json.loads(denied.value.body)["message"] == 'admission webhook "w.example.io" denied the request: no pods today'
    )
    assert fake_apiserver.store.list("pods", "default") == []


@pytest.mark.fakekube(webhooks=True)
def test_if_needed_webhooks_run_again_after_a_later_webhook_changed_the_object(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """reinvocation.go: the chain runs twice at most; an IfNeeded webhook invoked before a change reruns."""
    with (
        StubWebhook(tmp_path / "a", lambda r: (None, None)) as first,
        StubWebhook(tmp_path / "b", add_label("second", "yes")) as second,
    ):
        fake_apiserver.store.create(
            configuration(
                "c",
                first.registration("first.example.io", [rule(["pods"])], reinvocationPolicy="IfNeeded"),
                second.registration("second.example.io", [rule(["pods"])]),
            )
        )
        create_pod(fake_apiserver, pod())
    assert len(first.requests) == 2 and len(second.requests) == 1
    assert first.requests[1]["object"]["metadata"]["labels"]["second"] == "yes"


@pytest.mark.fakekube(webhooks=True)
def test_service_endpoints_are_called_in_turn(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """A clientConfig.service reaches its endpoints in turn (kube-proxy spreads connections over them)."""
    with StubWebhook(tmp_path, add_label("by", "a")) as a, StubWebhook(tmp_path, add_label("by", "b"), a.material) as b:
        registration = a.registration("w.example.io", [rule(["pods"])])
        registration["clientConfig"] = {
            "service": {"namespace": "x", "name": "hook", "path": "/mutate", "port": 443},
            "caBundle": a.ca_bundle,
        }
        fake_apiserver.store.create(configuration("c", registration))
        assert fake_apiserver.webhooks is not None
        fake_apiserver.webhooks.register_service("x", "hook", a.url, b.url)
        labels = [create_pod(fake_apiserver, pod(f"p{i}"))["metadata"]["labels"]["by"] for i in range(3)]
    assert labels == ["a", "b", "a"]


MAP = admission_policy("tolerate", append_toleration("x"), failurePolicy="Fail")
BINDING = binding("tolerate")


@pytest.mark.fakekube(native_map=True)
def test_a_stored_mutating_admission_policy_is_applied_natively(fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.store.create(MAP)
    fake_apiserver.store.create(BINDING)
    stored = create_pod(fake_apiserver, pod())
    assert stored["spec"]["tolerations"] == [{"key": "x", "operator": "Exists"}]


@pytest.mark.fakekube(native_map=True)
def test_a_map_without_binding_does_nothing(fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.store.create(MAP)
    assert "tolerations" not in create_pod(fake_apiserver, pod())["spec"]


@pytest.mark.fakekube(webhooks=True, native_map=True)
def test_native_maps_run_before_webhooks_and_if_needed_ones_again_after_a_webhook_changed_the_object(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """plugins.go: MAP precedes the webhooks; dispatcher.go: an IfNeeded MAP reruns when a webhook changed the
    object, so an appending mutation lands twice (kubernetes-map-observed.md)."""
    policy = {**MAP, "spec": {**MAP["spec"], "reinvocationPolicy": "IfNeeded"}}
    fake_apiserver.store.create(policy)
    fake_apiserver.store.create(BINDING)
    with StubWebhook(tmp_path, add_label("seen", "yes")) as stub:
        fake_apiserver.store.create(configuration("c", stub.registration("w.example.io", [rule(["pods"])])))
        stored = create_pod(fake_apiserver, pod())
    assert stub.requests[0]["object"]["spec"]["tolerations"] == [{"key": "x", "operator": "Exists"}]
    assert len(stored["spec"]["tolerations"]) == 2 and stored["metadata"]["labels"]["seen"] == "yes"
