"""GlobalContextEntries in the cluster (celmut.kube.global_context), against the fake API server: both
entry forms, projections, Kyverno's errors (kyverno pkg/globalcontext: k8sresource, externalapi and
invalid entries; pkg/cel/libs GetGlobalReference) and the status Kyverno writes
(api/kyverno/v2alpha1 GlobalContextEntryStatus.SetReady)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from celmut.cel.lookups import HttpPolicy, LookupFailed
from celmut.kube.client import Cluster
from celmut.kube.global_context import GlobalContextStore
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually
from tests.kube.gctx_support import JsonService, api_entry, configmap, entry, install_gce_crd, resource_entry

GCE = "kyverno.io/v2alpha1/globalcontextentries"  # the version celmut watches (the fake serves each apart)
TEAM = {"team": {"name": "payments", "size": 3}}


@pytest.fixture
def service() -> Iterator[JsonService]:
    with JsonService(TEAM).running() as running:
        yield running


def loopback(service: JsonService) -> HttpPolicy:
    """The HTTP allow-list naming the test's service (a loopback address: private networks allowed)."""
    return HttpPolicy(allow=(f"{service.url}/",), allow_private_networks=True)


@pytest.fixture
def store(fake_apiserver: FakeApiServer, cluster: Cluster, service: JsonService) -> Iterator[GlobalContextStore]:
    install_gce_crd(fake_apiserver)
    fake_apiserver.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "teams"}})
    started = GlobalContextStore(cluster, loopback(service), write_status=lambda: True).start()
    try:
        yield started
    finally:
        started.stop()


def value(store: GlobalContextStore, name: str, projection: str = "") -> Any:
    """The entry's value once it answers without an error (watches and calls are asynchronous)."""
    found: list[Any] = []

    def answered() -> bool:
        try:
            found[:] = [store.get(name, projection)]
        except LookupFailed:
            return False
        return found[0] is not None

    eventually(answered, what=f"global context entry {name}")
    return found[0]


def error_of(store: GlobalContextStore, name: str, projection: str = "") -> str:
    try:
        store.get(name, projection)
    except LookupFailed as ex:
        return ex.message
    raise AssertionError("no error")


def ready_condition(fake: FakeApiServer, name: str) -> dict[str, Any] | None:
    status = fake.store.get(GCE, name).get("status") or {}
    return next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)


def test_a_kubernetes_resource_entry_is_the_watched_list_and_its_projections(
    fake_apiserver: FakeApiServer, store: GlobalContextStore
) -> None:
    fake_apiserver.store.create(configmap("a", "teams", owner="ann"))
    fake_apiserver.store.create(configmap("elsewhere", "default", owner="zed"))
    fake_apiserver.store.create(resource_entry("teams", "teams", ("owners", "[].data.owner")))
    assert [o["metadata"]["name"] for o in value(store, "teams")] == ["a"]
    assert value(store, "teams", "owners") == ["ann"]
    fake_apiserver.store.create(configmap("b", "teams", owner="bob"))
    eventually(lambda: sorted(store.get("teams", "owners")) == ["ann", "bob"], what="the new object projected")
    # k8sresource/entry.go Get: an unknown projection is an error naming it
    assert error_of(store, "teams", "nope") == 'projection "nope" not found'


def test_a_missing_entry_is_null_and_a_deleted_one_goes_away(
    fake_apiserver: FakeApiServer, store: GlobalContextStore
) -> None:
    assert store.get("absent") is None  # pkg/cel/libs GetGlobalReference: not found returns nil
    fake_apiserver.store.create(configmap("a", "teams"))
    fake_apiserver.store.create(resource_entry("teams", "teams"))
    assert len(value(store, "teams")) == 1
    fake_apiserver.store.delete(GCE, "teams")
    eventually(lambda: store.get("teams") is None, what="the deleted entry dropped")


def test_a_service_api_call_is_polled_and_projected_and_its_status_is_kyvernos(
    fake_apiserver: FakeApiServer, store: GlobalContextStore, service: JsonService
) -> None:
    fake_apiserver.store.create(api_entry("team", {"service": {"url": f"{service.url}/team"}}, ("name", "team.name")))
    assert value(store, "team") == TEAM
    assert value(store, "team", "name") == "payments"
    assert [(method, path) for method, path, _ in service.requests] == [("GET", "/team")]
    eventually(lambda: ready_condition(fake_apiserver, "team") is not None, what="the Ready condition")
    status = fake_apiserver.store.get(GCE, "team")["status"]
    condition = ready_condition(fake_apiserver, "team")
    assert condition is not None
    assert (condition["status"], condition["reason"], condition["message"]) == ("True", "Succeeded", "Ready")
    assert status["ready"] is True and status["lastRefreshTime"]


def test_a_kubernetes_api_path_call_reads_the_api_server(
    fake_apiserver: FakeApiServer, store: GlobalContextStore
) -> None:
    fake_apiserver.store.create(configmap("lead", "teams", lead="ann"))
    fake_apiserver.store.create(
        api_entry("lead", {"urlPath": "/api/v1/namespaces/teams/configmaps/lead"}, ("lead", "data.lead"))
    )
    assert value(store, "lead", "lead") == "ann"


def test_a_call_off_the_allow_list_fails_with_the_denial_and_says_so_in_status(
    fake_apiserver: FakeApiServer, store: GlobalContextStore
) -> None:
    fake_apiserver.store.create(api_entry("denied", {"service": {"url": "https://api.example.com/x"}}))
    eventually(lambda: ready_condition(fake_apiserver, "denied") is not None, what="the Ready condition")
    condition = ready_condition(fake_apiserver, "denied")
    assert condition is not None and (condition["status"], condition["reason"]) == ("False", "Failed")
    assert "not on the HTTP allow-list" in condition["message"]
    assert "not on the HTTP allow-list" in error_of(store, "denied")
    assert fake_apiserver.store.get(GCE, "denied")["status"]["ready"] is False


def test_an_entry_that_cannot_be_built_answers_kyvernos_invalid_entry_error(
    fake_apiserver: FakeApiServer, store: GlobalContextStore
) -> None:
    fake_apiserver.store.create(
        entry(
            "broken",
            {
                "kubernetesResource": {"version": "v1", "resource": "configmaps"},
                "projections": [{"name": "p", "jmesPath": "[*.a"}],
            },
        )
    )
    eventually(lambda: "broken" in store.names(), what="the entry")
    assert error_of(store, "broken").startswith("failed to create cached context entry: ")


def test_an_unserved_resource_fails_at_once_never_hangs(
    fake_apiserver: FakeApiServer, store: GlobalContextStore
) -> None:
    fake_apiserver.store.create(
        entry("ghost", {"kubernetesResource": {"group": "example.com", "version": "v1", "resource": "ghosts"}})
    )
    eventually(lambda: "ghost" in store.names(), what="the entry")
    eventually(lambda: "failed to sync cache for example.com/v1, Resource=ghosts" in error_of(store, "ghost"))


def test_status_is_left_to_kyverno_when_celmut_does_not_own_it(fake_apiserver: FakeApiServer, cluster: Cluster) -> None:
    install_gce_crd(fake_apiserver)
    store = GlobalContextStore(cluster, HttpPolicy(), write_status=lambda: False).start()
    try:
        fake_apiserver.store.create(api_entry("denied", {"service": {"url": "https://api.example.com/x"}}))
        eventually(lambda: "HTTP allow-list is empty" in _raises(store, "denied"), what="the failed call")
        assert not fake_apiserver.requests_matching("PATCH", r"/globalcontextentries/")
    finally:
        store.stop()


def _raises(store: GlobalContextStore, name: str) -> str:
    try:
        store.get(name)
    except LookupFailed as ex:
        return ex.message
    return ""


def test_entries_are_bounded_and_their_size_is_exported(fake_apiserver: FakeApiServer, cluster: Cluster) -> None:
    install_gce_crd(fake_apiserver)
    store = GlobalContextStore(cluster, HttpPolicy(), max_bytes=400).start()
    try:
        fake_apiserver.store.create(configmap("a", "default", owner="ann"))
        fake_apiserver.store.create(resource_entry("small", "default"))
        assert len(value(store, "small")) == 1
        fake_apiserver.store.create(configmap("b", "default", owner="x" * 500))
        eventually(lambda: "over the limit of 400" in _raises(store, "small"), what="the size limit")
        registry = CollectorRegistry()
        registry.register(store)
        text = generate_latest(registry).decode()
        assert 'celmut_global_context_entry_objects{entry="small"} 2.0' in text
        assert 'celmut_global_context_entry_bytes{entry="small"}' in text
        assert 'celmut_global_context_refresh_failures_total{entry="small"} 0.0' in text
    finally:
        store.stop()


def test_values_read_from_secrets_are_refused_by_name_not_ignored(
    fake_apiserver: FakeApiServer, store: GlobalContextStore
) -> None:
    header = {"key": "Authorization", "valueFrom": {"secretKeyRef": {"name": "token", "key": "t"}}}
    fake_apiserver.store.create(
        api_entry("secret-header", {"service": {"url": "https://x.example/", "headers": [header]}})
    )
    eventually(lambda: "secret-header" in store.names(), what="the entry")
    assert "headers[].valueFrom are not supported" in error_of(store, "secret-header")
