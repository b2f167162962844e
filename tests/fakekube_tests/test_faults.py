"""Fault injection, the request log, authentication and TLS."""

from __future__ import annotations

import json
import time
from pathlib import Path

import kubernetes.client
import kubernetes.config
import pytest
import urllib3
from kubernetes import watch
from kubernetes.client import ApiException, CoreV1Api

from tests.fakekube import FakeApiServer

from .manifests import config_map


@pytest.fixture
def core(fake_api_client: kubernetes.client.ApiClient) -> CoreV1Api:
    return CoreV1Api(fake_api_client)


def test_fail_next_conflict_then_success(core: CoreV1Api, fake_apiserver: FakeApiServer) -> None:
    core.create_namespaced_config_map("default", config_map("cfg"))
    fault = fake_apiserver.fail_next("PATCH", r"/configmaps/cfg$", 409, reason="Conflict")
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("cfg", "default", {"data": {"a": "1"}})
    assert err.value.status == 409
    body = json.loads(err.value.body)
    assert body["kind"] == "Status" and body["reason"] == "Conflict" and body["code"] == 409
    assert fault.hits == 1
    # Only once: the retry goes through, and the failed attempt changed nothing.
    assert core.patch_namespaced_config_map("cfg", "default", {"data": {"a": "1"}}).data == {"a": "1"}


def test_fail_next_times_and_wildcards(core: CoreV1Api, fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.fail_next("*", r"/namespaces/default/configmaps", 500, times=2)
    for _ in range(2):
        with pytest.raises(ApiException) as err:
            core.list_namespaced_config_map("default")
        assert err.value.status == 500 and json.loads(err.value.body)["reason"] == "InternalError"
    assert core.list_namespaced_config_map("default").items == []

    fake_apiserver.fail_next("GET", r"/configmaps$", 403, times=None)
    for _ in range(3):
        with pytest.raises(ApiException) as err:
            core.list_namespaced_config_map("default")
        assert err.value.status == 403 and json.loads(err.value.body)["reason"] == "Forbidden"
    fake_apiserver.clear_faults()
    assert core.list_namespaced_config_map("default").items == []

    # (urllib3 itself retries idempotent requests answered 429/503 with a Retry-After header.)
    fake_apiserver.fail_next("POST", r"/configmaps$", 429, headers={"Retry-After": "1"})
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", config_map("cfg"))
    assert err.value.status == 429 and err.value.headers["Retry-After"] == "1"


def test_fail_next_can_cut_the_connection(core: CoreV1Api, fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.fail_next("POST", r"/configmaps$", 0)
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.create_namespaced_config_map("default", config_map("cfg"))
    assert core.list_namespaced_config_map("default").items == []
    # urllib3 retries idempotent requests whose connection was cut, so a GET goes through.
    fake_apiserver.fail_next("GET", r"/configmaps$", 0)
    assert core.list_namespaced_config_map("default").items == []
    assert len(fake_apiserver.requests_matching("GET", r"/configmaps$")) == 3


def test_request_log_records_methods_queries_and_users(fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.add_token("sa-token", "system:serviceaccount:celmut:celmut-controller")
    controller = CoreV1Api(fake_apiserver.api_client(token="sa-token"))
    fake_apiserver.clear_requests()
    controller.create_namespaced_config_map("default", config_map("cfg"))
    controller.list_namespaced_config_map("default", label_selector="a=b", limit=10)
    first, second = fake_apiserver.requests
    assert (first.method, first.path, first.user) == (
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "system:serviceaccount:celmut:celmut-controller",
    )
    assert first.token == "sa-token" and first.json()["metadata"]["name"] == "cfg"
    assert first.content_type in ("", "application/json")  # this client sends no Content-Type on create
    assert second.query == {"labelSelector": ["a=b"], "limit": ["10"]}
    assert not fake_apiserver.requests_matching("PATCH")


def test_latency() -> None:
    with FakeApiServer() as server:
        core = CoreV1Api(server.api_client())
        server.set_latency(0.1)
        started = time.perf_counter()
        core.list_namespaced_config_map("default")
        assert time.perf_counter() - started >= 0.1
        server.set_latency(0)


def test_require_auth() -> None:
    with FakeApiServer(require_auth=True) as server:
        anonymous = kubernetes.client.Configuration(host=server.url)
        with pytest.raises(ApiException) as err:
            CoreV1Api(kubernetes.client.ApiClient(anonymous)).list_namespaced_pod("default")
        assert err.value.status == 401
        assert CoreV1Api(server.api_client()).list_namespaced_pod("default").items == []


def test_tls_with_the_kubeconfig_ca(fake_apiserver_tls: FakeApiServer, tmp_path: Path) -> None:
    server = fake_apiserver_tls
    assert server.url.startswith("https://127.0.0.1:")
    path = server.kubeconfig(tmp_path / "kubeconfig", token="tls-token", user="alice")
    client = kubernetes.config.new_client_from_config(config_file=str(path))
    core = CoreV1Api(client)
    core.create_namespaced_config_map("default", config_map("cfg"))
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == ["cfg"]
    events = []
    stream_watch = watch.Watch()
    for event in stream_watch.stream(core.list_namespaced_config_map, "default", timeout_seconds=5):
        events.append(event["type"])
        stream_watch.stop()
    assert events == ["ADDED"]
    assert server.requests[-1].user == "alice"

    # Without the CA the certificate does not verify.
    untrusted = kubernetes.client.Configuration(host=server.url)
    untrusted.retries = 0
    with pytest.raises(urllib3.exceptions.MaxRetryError) as err:
        CoreV1Api(kubernetes.client.ApiClient(untrusted)).list_namespaced_config_map("default")
    assert isinstance(err.value.reason, urllib3.exceptions.SSLError)
    # And the in-process configuration carries it.
    assert CoreV1Api(server.api_client()).list_namespaced_config_map("default").items
