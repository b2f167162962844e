"""``celmut serve --from-cluster`` against the fake API server, through the real kubernetes client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually, label_policy, namespace
from tests.kube.crds import policy_crds

from .support import RunningServer, admission_request, decoded_patch, pod, running_server

TEAM_LABEL = (
    '[JSONPatch{op: "add", path: "/metadata/labels/team", '
    'value: namespaceObject.?metadata.?labels[?"team"].orValue("none")}]'
)
# Numbers the pods of one app in creation order, counting pods the cluster has not stored yet.
ORDINAL = (
    '[JSONPatch{op: "add", path: "/metadata/labels/ordinal", value: string('
    'resource.List("v1", "pods", object.metadata.namespace).items'
    '.filter(p, p.?metadata.?labels[?"app"] == object.?metadata.?labels[?"app"]).size())}]'
)


@pytest.fixture
def served(fake_apiserver: FakeApiServer, tmp_path: Path) -> Iterator[RunningServer]:
    for definition in policy_crds():
        fake_apiserver.store.create(definition)
    fake_apiserver.store.create(namespace("shop", team="payments"))
    kubeconfig = fake_apiserver.kubeconfig(tmp_path / "kubeconfig")
    with running_server(tmp_path, [], from_cluster=True, kubeconfig=str(kubeconfig)) as server:
        yield server


def labels_after(server: RunningServer, obj: dict[str, Any]) -> dict[str, str]:
    patch = decoded_patch(server.review(admission_request(obj)))
    labels = dict(obj["metadata"].get("labels") or {})
    for op in patch:
        if op["path"] == "/metadata/labels":
            labels = dict(op["value"])
        elif op["path"].startswith("/metadata/labels/"):
            labels[op["path"].rsplit("/", 1)[1]] = op["value"]
    return labels


def wait_for_policies(server: RunningServer, *names: str) -> None:
    def loaded() -> bool:
        server.store.reload()
        engine = server.store.engine
        return engine is not None and {p.name for p in engine.policies} >= set(names)

    eventually(loaded, what=f"policies {names} in service")


def test_cluster_policies_and_namespace_labels_reach_cel(served: RunningServer, fake_apiserver: FakeApiServer) -> None:
    with served.client() as client:
        assert client.get("/readyz").status_code == 200
    fake_apiserver.store.create(label_policy("team", expression=TEAM_LABEL))
    wait_for_policies(served, "team")
    assert labels_after(served, pod())["team"] == "payments"


def test_a_broken_cluster_policy_is_skipped_and_counted(served: RunningServer, fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.store.create(label_policy("good"))
    fake_apiserver.store.create(label_policy("broken", expression="object.metadata.name +"))
    wait_for_policies(served, "good")
    assert labels_after(served, pod())["good"] == "yes"

    def invalid_counted() -> bool:
        served.store.reload()
        with served.client() as client:
            return "celmut_policies_invalid 1.0" in client.get("/metrics").text

    eventually(invalid_counted, what="the invalid policy in the metrics")
    events = fake_apiserver.store.list("events", "default")
    assert [e["involvedObject"]["name"] for e in events] == ["broken"]


def test_pods_admitted_moments_ago_are_counted(served: RunningServer, fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.store.create(label_policy("ordinal", expression=ORDINAL))
    wait_for_policies(served, "ordinal")
    owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u", "controller": True}]
    replica = pod()
    replica["metadata"] = {
        "generateName": "web-1-",
        "namespace": "shop",
        "labels": {"app": "web"},
        "ownerReferences": owner,
    }
    replica["metadata"].pop("name", None)
    ordinals = [labels_after(served, replica)["ordinal"] for _ in range(3)]
    assert ordinals == ["0", "1", "2"]  # the API server has stored none of them yet


def test_dry_run_admissions_are_not_counted(served: RunningServer, fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.store.create(label_policy("ordinal", expression=ORDINAL))
    wait_for_policies(served, "ordinal")
    owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u", "controller": True}]
    replica = pod()
    replica["metadata"]["ownerReferences"] = owner
    for _ in range(2):
        served.review(admission_request(replica, dryRun=True))
    assert labels_after(served, replica)["ordinal"] == "0"


def test_the_serve_command_connects_with_a_kubeconfig(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """``celmut serve --from-cluster --kubeconfig`` as a user runs it: a process, TLS, readiness."""
    import socket
    import ssl
    import subprocess
    import sys

    import httpx

    for definition in policy_crds():
        fake_apiserver.store.create(definition)
    fake_apiserver.store.create(label_policy("from-cluster"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = fake_apiserver.kubeconfig(tmp_path / "kubeconfig")
    command = [sys.executable, "-m", "celmut", "serve", "--from-cluster", "--kubeconfig", str(kubeconfig)]
    command += ["--self-signed", "--cert-dir", str(tmp_path / "tls"), "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        verify = None

        def ready() -> bool:
            nonlocal verify
            if verify is None and (tmp_path / "tls" / "ca.crt").exists():
                try:
                    verify = ssl.create_default_context(cafile=str(tmp_path / "tls" / "ca.crt"))
                except ssl.SSLError:  # the file exists but is still being written (a loaded machine)
                    return False
            if verify is None:
                return False
            try:
                return httpx.get(f"https://127.0.0.1:{port}/readyz", verify=verify).status_code == 200
            except httpx.HTTPError:
                return False

        eventually(ready, what="celmut serve to become ready")
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": admission_request(pod())}
        response = httpx.post(f"https://127.0.0.1:{port}/mutate", json=body, verify=verify)
        assert response.status_code == 200, response.text
        answer = response.json()
        assert decoded_patch(answer) == [{"op": "add", "path": "/metadata/labels/from-cluster", "value": "yes"}]
    finally:
        process.terminate()
        output = process.communicate(timeout=10)[0].decode()
    assert "Traceback" not in output
