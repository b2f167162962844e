"""CRUD, patches, selectors, pagination and error answers of core resources, through CoreV1Api."""

from __future__ import annotations

import json

import kubernetes.client
import pytest
from kubernetes.client import ApiException, AppsV1Api, CoreV1Api

from tests.fakekube import FakeApiServer

from .manifests import config_map, pod


@pytest.fixture
def core(fake_api_client: kubernetes.client.ApiClient) -> CoreV1Api:
    return CoreV1Api(fake_api_client)


def _status(exc: ApiException) -> dict:
    return json.loads(exc.body)


def test_pod_create_get_list_replace_delete(core: CoreV1Api, fake_apiserver: FakeApiServer) -> None:
    created = core.create_namespaced_pod("default", pod("web", {"app": "web"}))
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert created.metadata.generation == 1
    assert created.status.phase == "Pending"
    rv = int(created.metadata.resource_version)
    assert rv == fake_apiserver.store.resource_version

    got = core.read_namespaced_pod("web", "default")
    assert got.metadata.resource_version == str(rv)
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["web"]
    assert [p.metadata.name for p in core.list_pod_for_all_namespaces().items] == ["web"]

    got.spec.containers[0].image = "nginx:1.28"
    replaced = core.replace_namespaced_pod("web", "default", got)
    assert replaced.spec.containers[0].image == "nginx:1.28"
    assert int(replaced.metadata.resource_version) > rv
    assert replaced.metadata.generation == 2
    assert replaced.metadata.uid == created.metadata.uid

    deleted = core.delete_namespaced_pod("web", "default")
    assert deleted.metadata.name == "web"
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("web", "default")
    assert err.value.status == 404
    assert _status(err.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "web" not found',
        "reason": "NotFound",
        "details": {"name": "web", "kind": "pods"},
        "code": 404,
    }


def test_configmap_crud_and_delete_status(core: CoreV1Api) -> None:
    core.create_namespaced_config_map("default", config_map("cfg", {"a": "1"}))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", config_map("cfg"))
    assert err.value.status == 409 and _status(err.value)["reason"] == "AlreadyExists"
    cm = core.read_namespaced_config_map("cfg", "default")
    cm.data["b"] = "2"
    assert core.replace_namespaced_config_map("cfg", "default", cm).data == {"a": "1", "b": "2"}
    status = core.delete_namespaced_config_map("cfg", "default")  # this client version returns a plain dict
    assert status["kind"] == "Status" and status["status"] == "Success"
    assert status["details"]["name"] == "cfg" and status["details"]["kind"] == "configmaps"
    assert core.list_namespaced_config_map("default").items == []


def test_generate_name_and_invalid_objects(core: CoreV1Api) -> None:
    made = core.create_namespaced_config_map("default", {"metadata": {"generateName": "cfg-"}, "data": {}})
    assert made.metadata.name.startswith("cfg-") and len(made.metadata.name) == 9
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", {"metadata": {}, "data": {}})
    assert err.value.status == 422
    body = _status(err.value)
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("default", {"metadata": {"name": "Bad_Name"}, "spec": {"containers": []}})
    assert err.value.status == 422
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", config_map("x", labels={"bad label": "v"}))
    assert err.value.status == 422


def test_pod_spec_is_mostly_immutable(core: CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("web"))
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_pod("web", "default", {"spec": {"containers": [{"name": "app", "command": ["sh"]}]}})
    assert err.value.status == 422 and "pod updates may not change fields" in _status(err.value)["message"]
    patched = core.patch_namespaced_pod("web", "default", {"spec": {"containers": [{"name": "app", "image": "x:2"}]}})
    assert patched.spec.containers[0].image == "x:2"


def test_four_patch_types(fake_api_client: kubernetes.client.ApiClient, fake_apiserver: FakeApiServer) -> None:
    core, apps = CoreV1Api(fake_api_client), AppsV1Api(fake_api_client)
    template = pod("web", {"app": "web"})
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": template["spec"]},
        },
    }
    apps.create_namespaced_deployment("default", deployment)
    # A dict body goes out as a strategic merge patch: containers and env merge by name.
    smp = {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "app", "image": "nginx:2", "env": [{"name": "B", "value": "2"}]}]}
            }
        }
    }
    out = apps.patch_namespaced_deployment("web", "default", smp)
    container = out.spec.template.spec.containers[0]
    assert container.image == "nginx:2"
    assert [(e.name, e.value) for e in container.env] == [("A", "1"), ("B", "2")]
    assert out.metadata.generation == 2
    assert fake_apiserver.requests[-1].content_type == "application/strategic-merge-patch+json"

    # A list body is an RFC 6902 JSON patch.
    out = apps.patch_namespaced_deployment(
        "web", "default", [{"op": "add", "path": "/metadata/labels/tier", "value": "fe"}]
    )
    assert out.metadata.labels == {"app": "web", "tier": "fe"}
    assert out.metadata.generation == 2  # metadata changes do not bump the generation
    assert fake_apiserver.requests[-1].content_type == "application/json-patch+json"

    # RFC 7386 merge patch replaces lists wholesale.
    core.create_namespaced_config_map("default", config_map("cfg", {"a": "1", "b": "2"}))
    merged = core.patch_namespaced_config_map(
        "cfg", "default", {"data": {"a": None, "c": "3"}}, _content_type="application/merge-patch+json"
    )
    assert merged.data == {"b": "2", "c": "3"}

    # Server-side apply (approximated as a merge) needs a field manager.
    applied = core.patch_namespaced_config_map(
        "cfg",
        "default",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"d": "4"}},
        field_manager="test",
        _content_type="application/apply-patch+yaml",
    )
    assert applied.data == {"b": "2", "c": "3", "d": "4"}
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("cfg", "default", {"data": {}}, _content_type="application/apply-patch+yaml")
    assert err.value.status == 422
    # Apply creates a missing object.
    created = core.patch_namespaced_config_map(
        "new",
        "default",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "new"}, "data": {"x": "1"}},
        field_manager="test",
        _content_type="application/apply-patch+yaml",
    )
    assert created.metadata.uid


def test_patch_errors(core: CoreV1Api) -> None:
    core.create_namespaced_config_map("default", config_map("cfg", {"a": "1"}))
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("cfg", "default", [{"op": "test", "path": "/data/a", "value": "9"}])
    assert err.value.status == 422
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("missing", "default", {"data": {}})
    assert err.value.status == 404


def test_noop_write_keeps_resource_version(core: CoreV1Api) -> None:
    cm = core.create_namespaced_config_map("default", config_map("cfg", {"a": "1"}))
    again = core.patch_namespaced_config_map("cfg", "default", {"data": {"a": "1"}})
    assert again.metadata.resource_version == cm.metadata.resource_version


def test_a_json_patch_pinning_a_stale_resource_version_is_a_conflict_and_changes_nothing(
    core: CoreV1Api, fake_apiserver: FakeApiServer
) -> None:
    """The controller's guarded write: a JSON patch whose first operation replaces
    ``metadata.resourceVersion`` with the version it read. kube-apiserver applies the patch to the stored
    object (apiserver endpoints/handlers/patch.go ``applyPatch``), then the generic registry's update refuses
    an object whose resourceVersion is not the stored one (registry/generic/registry/store.go ``Update``:
    ``OptimisticLockErrorMsg``) with 409 Conflict, and the stored object stays as it was; the current version
    goes through."""
    created = core.create_namespaced_pod("default", pod("web", {"app": "web"}))
    stale = created.metadata.resource_version
    moved = core.patch_namespaced_pod("web", "default", {"metadata": {"labels": {"moved": "yes"}}})

    def guarded(version: str, value: str) -> list[dict[str, object]]:
        return [
            {"op": "replace", "path": "/metadata/resourceVersion", "value": version},
            {"op": "add", "path": "/metadata/labels/patched", "value": value},
        ]

    with pytest.raises(ApiException) as err:
        core.patch_namespaced_pod("web", "default", guarded(stale, "stale"))
    assert err.value.status == 409
    body = _status(err.value)
    assert body["reason"] == "Conflict" and body["details"] == {"name": "web", "kind": "pods"}
    assert body["message"] == (
        'Operation cannot be fulfilled on pods "web": '
        "the object has been modified; please apply your changes to the latest version and try again"
    )
    stored = fake_apiserver.store.get("pods", "web", "default")
    assert stored["metadata"]["resourceVersion"] == moved.metadata.resource_version
    assert stored["metadata"]["labels"] == {"app": "web", "moved": "yes"}
    written = core.patch_namespaced_pod("web", "default", guarded(moved.metadata.resource_version, "fresh"))
    assert written.metadata.labels == {"app": "web", "moved": "yes", "patched": "fresh"}
    assert int(written.metadata.resource_version) > int(moved.metadata.resource_version)


def test_stale_resource_version_conflicts(core: CoreV1Api) -> None:
    cm = core.create_namespaced_config_map("default", config_map("cfg", {"a": "1"}))
    stale = cm.metadata.resource_version
    core.patch_namespaced_config_map("cfg", "default", {"data": {"a": "2"}})
    cm.data["a"] = "3"
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("cfg", "default", cm)
    assert err.value.status == 409
    body = _status(err.value)
    assert body["reason"] == "Conflict"
    assert body["message"].startswith('Operation cannot be fulfilled on configmaps "cfg": the object has been modified')
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("cfg", "default", {"metadata": {"resourceVersion": stale}, "data": {"a": "4"}})
    assert err.value.status == 409
    # An update without a resourceVersion is unconditional.
    cm.metadata.resource_version = None
    assert core.replace_namespaced_config_map("cfg", "default", cm).data == {"a": "3"}


def test_status_subresource(core: CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("web"))
    out = core.patch_namespaced_pod_status(
        "web", "default", {"metadata": {"labels": {"ignored": "x"}}, "status": {"phase": "Running"}}
    )
    assert out.status.phase == "Running" and not out.metadata.labels
    # The main resource ignores status changes.
    out = core.patch_namespaced_pod(
        "web", "default", {"status": {"phase": "Failed"}, "metadata": {"labels": {"a": "b"}}}
    )
    assert out.status.phase == "Running" and out.metadata.labels == {"a": "b"}
    assert core.read_namespaced_pod_status("web", "default").status.phase == "Running"


def test_label_and_field_selectors(core: CoreV1Api) -> None:
    for name, labels in [("a", {"app": "x", "tier": "fe"}), ("b", {"app": "x", "tier": "be"}), ("c", {"app": "y"})]:
        core.create_namespaced_pod("default", pod(name, labels))

    def names(**kwargs: str) -> list[str]:
        return [p.metadata.name for p in core.list_namespaced_pod("default", **kwargs).items]

    assert names(label_selector="app=x") == ["a", "b"]
    assert names(label_selector="app==x,tier!=fe") == ["b"]
    assert names(label_selector="tier in (fe, be)") == ["a", "b"]
    assert names(label_selector="tier notin (fe)") == ["b", "c"]
    assert names(label_selector="!tier") == ["c"]
    assert names(label_selector="tier") == ["a", "b"]
    assert names(field_selector="metadata.name=c") == ["c"]
    assert names(field_selector="metadata.name!=c,metadata.namespace=default") == ["a", "b"]
    with pytest.raises(ApiException) as err:
        names(field_selector="spec.bogus=1")
    assert err.value.status == 400
    with pytest.raises(ApiException) as err:
        names(label_selector="a in (b")
    assert err.value.status == 400


def test_pagination_is_consistent(core: CoreV1Api, fake_apiserver: FakeApiServer) -> None:
    for i in range(7):
        fake_apiserver.store.create(config_map(f"cm-{i}"), namespace="default")
    page = core.list_namespaced_config_map("default", limit=3)
    assert [c.metadata.name for c in page.items] == ["cm-0", "cm-1", "cm-2"]
    assert page.metadata.remaining_item_count == 4
    fake_apiserver.store.delete("configmaps", "cm-4", "default")  # not seen: pages come from one snapshot
    seen = [c.metadata.name for c in page.items]
    while page.metadata._continue:
        page = core.list_namespaced_config_map("default", limit=3, _continue=page.metadata._continue)
        seen += [c.metadata.name for c in page.items]
    assert seen == [f"cm-{i}" for i in range(7)]


def test_list_items_carry_no_kind(fake_apiserver: FakeApiServer, core: CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("web"))
    raw = json.loads(core.list_namespaced_pod("default", _preload_content=False).data)
    assert raw["kind"] == "PodList" and raw["apiVersion"] == "v1"
    assert "kind" not in raw["items"][0] and "apiVersion" not in raw["items"][0]
    single = json.loads(core.read_namespaced_pod("web", "default", _preload_content=False).data)
    assert single["kind"] == "Pod"


def test_finalizers_delay_deletion(core: CoreV1Api) -> None:
    cm = config_map("cfg")
    cm["metadata"]["finalizers"] = ["example.com/keep"]
    core.create_namespaced_config_map("default", cm)
    pending = core.delete_namespaced_config_map("cfg", "default")
    assert pending is not None
    marked = core.read_namespaced_config_map("cfg", "default")
    assert marked.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("cfg", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("cfg", "default")
    assert err.value.status == 404


def test_delete_preconditions_dry_run_and_collection(core: CoreV1Api) -> None:
    made = core.create_namespaced_config_map("default", config_map("cfg", labels={"k": "v"}))
    core.create_namespaced_config_map("default", config_map("other", labels={"k": "v"}))
    core.create_namespaced_config_map("default", config_map("keep"))
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_config_map("cfg", "default", body={"preconditions": {"resourceVersion": "1"}})
    assert err.value.status == 409
    core.delete_namespaced_config_map("cfg", "default", dry_run="All")
    assert core.read_namespaced_config_map("cfg", "default").metadata.uid == made.metadata.uid
    with pytest.raises(ApiException) as err:  # resourceVersion must not be set on create
        core.create_namespaced_config_map(
            "default", {**config_map("rv"), "metadata": {"name": "rv", "resourceVersion": "7"}}
        )
    assert err.value.status == 400
    core.create_namespaced_config_map("default", config_map("dry"), dry_run="All")
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("dry", "default")
    core.delete_collection_namespaced_config_map("default", label_selector="k=v")
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == ["keep"]


def test_namespaces_and_cluster_scope(core: CoreV1Api) -> None:
    names = [n.metadata.name for n in core.list_namespace().items]
    assert {"default", "kube-system"} <= set(names)
    made = core.create_namespace({"metadata": {"name": "team-a"}})
    assert made.metadata.labels == {"kubernetes.io/metadata.name": "team-a"} and made.status.phase == "Active"
    core.create_namespaced_config_map("team-a", config_map("cfg"))
    core.create_node({"metadata": {"name": "node-1", "labels": {"zone": "a"}}})
    assert [n.metadata.name for n in core.list_node(label_selector="zone=a").items] == ["node-1"]
    core.delete_namespace("team-a")
    assert core.list_namespaced_config_map("team-a").items == []


def test_wrong_urls_verbs_and_bodies(
    fake_apiserver: FakeApiServer, fake_api_client: kubernetes.client.ApiClient
) -> None:
    def call(method: str, path: str, body: object = None, content_type: str = "application/json") -> int:
        data = body if isinstance(body, str) or body is None else json.dumps(body)
        response = fake_api_client.call_api(
            method, fake_apiserver.url + path, {"Content-Type": content_type, "Accept": "application/json"}, data
        )
        response.read()
        if response.status >= 400:
            assert response.getheader("Content-Type") == "application/json"
            status = json.loads(response.data)
            assert status["kind"] == "Status" and status["code"] == response.status
        return response.status

    assert call("GET", "/api/v1/namespaces/default/pods") == 200
    assert call("GET", "/api/v1/namespaces/default/podz") == 404
    assert call("GET", "/apis/apps/v2/deployments") == 404
    assert call("GET", "/api/v1/namespaces/default/nodes") == 404  # cluster-scoped kind under a namespace
    assert call("PUT", "/api/v1/namespaces/default/pods", {}) == 405
    assert call("POST", "/api/v1/namespaces/default/pods/x", {}) == 405
    assert call("POST", "/api/v1/namespaces/default/configmaps", "{not json", "application/json") == 400
    # protobuf is decoded (tests/fakekube/protobuf.py): a body without the k8s magic number is a bad request
    assert call("POST", "/api/v1/namespaces/default/configmaps", {"a": 1}, "application/vnd.kubernetes.protobuf") == 400
    assert call("POST", "/api/v1/namespaces/default/configmaps", {"a": 1}, "application/cbor") == 415
    assert call("PATCH", "/api/v1/namespaces/default/configmaps/x", "{}", "text/plain") == 415
    assert call("GET", "/healthz") == 200
    response = fake_api_client.call_api("GET", fake_apiserver.url + "/version", {"Accept": "application/json"})
    response.read()
    assert json.loads(response.data)["major"] == "1"
