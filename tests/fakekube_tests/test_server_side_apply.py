"""Server-side apply in the fake API server (tests/fakekube/apply.py), through the real HTTP API, as
k8s.io/apiserver's fieldmanager behaves: what Helm 4's releases rely on (issue 24)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fakekube import FakeApiServer

PATH = "/api/v1/namespaces/default/configmaps/web"


def apply(fake: FakeApiServer, obj: dict[str, Any], manager: str, force: bool = False) -> tuple[int, Any]:
    client = fake.api_client()
    response = client.call_api(
        "PATCH",
        f"{fake.url}{PATH}?fieldManager={manager}&force={'true' if force else 'false'}",
        {"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"},
        json.dumps(obj),
    )
    response.read()
    return response.status, json.loads(response.data)


def config(annotations: dict[str, str], data: dict[str, str]) -> dict[str, Any]:
    meta = {"name": "web", "namespace": "default", "annotations": annotations}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def test_a_managers_reapply_removes_what_it_stopped_setting(fake_apiserver: FakeApiServer) -> None:
    """Why a Helm take-over (same manager `helm`) strips helm.sh/resource-policy: keep."""
    assert apply(fake_apiserver, config({"helm.sh/resource-policy": "keep"}, {"a": "1"}), "helm")[0] == 201
    status, obj = apply(fake_apiserver, config({"meta.helm.sh/release-name": "kyverno"}, {"a": "1"}), "helm")
    assert status == 200
    assert obj["metadata"]["annotations"] == {"meta.helm.sh/release-name": "kyverno"}
    (entry,) = obj["metadata"]["managedFields"]
    assert entry["manager"] == "helm" and entry["operation"] == "Apply"
    assert entry["fieldsV1"]["f:data"] == {"f:a": {}}


def test_a_field_another_manager_owns_is_a_conflict_unless_forced(fake_apiserver: FakeApiServer) -> None:
    apply(fake_apiserver, config({}, {"a": "1"}), "celmut")
    status, body = apply(fake_apiserver, config({}, {"a": "2"}), "kyverno")
    assert status == 409 and body["reason"] == "Conflict" and 'conflict with "celmut": .data.a' in body["message"]
    assert fake_apiserver.store.get("configmaps", "web", "default")["data"] == {"a": "1"}
    status, obj = apply(fake_apiserver, config({}, {"a": "2"}), "kyverno", force=True)
    assert status == 200 and obj["data"] == {"a": "2"}
    assert [e["manager"] for e in obj["metadata"]["managedFields"]] == ["kyverno"]


@pytest.mark.parametrize("same_value", [True, False])
def test_a_field_two_managers_own_stays_when_one_lets_go(fake_apiserver: FakeApiServer, same_value: bool) -> None:
    apply(fake_apiserver, config({}, {"a": "1", "b": "1"}), "one")
    if same_value:  # both own .data.a; one stops applying it: it stays, owned by the other
        apply(fake_apiserver, config({}, {"a": "1"}), "two")
        status, obj = apply(fake_apiserver, config({}, {"b": "1"}), "one")
        assert status == 200 and obj["data"] == {"a": "1", "b": "1"}
    else:
        status, obj = apply(fake_apiserver, config({}, {"b": "1"}), "one")
        assert status == 200 and obj["data"] == {"b": "1"}
