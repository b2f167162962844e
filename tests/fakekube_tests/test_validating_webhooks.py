"""The fake API server's validating webhooks (``ValidatingAdmissionWebhook``,
staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/validating/dispatcher.go): called with the
final object after the mutating webhooks, a denial rejects the write with the webhook's message, a
failed call follows the webhook's failurePolicy, and the admission configuration kinds are never sent
to any webhook (rules.go ``IsExemptAdmissionConfigurationResource``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from tests.fakekube import FakeApiServer
from tests.fakekube.stub_webhook import StubWebhook, configuration, rule
from tests.fakekube_tests.test_admission_chain import add_label, create_pod, pod

Obj = dict[str, Any]


def validating(name: str, *webhooks: Obj) -> Obj:
    return {**configuration(name, *webhooks), "kind": "ValidatingWebhookConfiguration"}


def deny_unless_labelled(request: Obj) -> tuple[list[Obj] | None, str | None]:
    labels = request["object"]["metadata"].get("labels") or {}
    return None, None if labels.get("seen") == "yes" else "spec.x: Forbidden: not seen"


@pytest.mark.fakekube(webhooks=True)
def test_a_validating_webhook_sees_the_mutated_object_and_its_denial_rejects(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    with (
        StubWebhook(tmp_path / "m", add_label("seen", "yes")) as mutating,
        StubWebhook(tmp_path / "v", deny_unless_labelled) as checking,
    ):
        fake_apiserver.store.create(validating("v", checking.registration("v.example.io", [rule(["pods"])])))
        with pytest.raises(ApiException) as refused:
            create_pod(fake_apiserver, pod("first"))
        assert refused.value.status == 403
        message = json.loads(refused.value.body)["message"]
        assert message == 'admission webhook "v.example.io" denied the request: spec.x: Forbidden: not seen'
        assert not fake_apiserver.store.exists("pods", "first", "default")  # nothing stored
        fake_apiserver.store.create(configuration("m", mutating.registration("m.example.io", [rule(["pods"])])))
        create_pod(fake_apiserver, pod("second"))  # the mutating webhook labels it first
    assert checking.requests[-1]["object"]["metadata"]["labels"] == {"seen": "yes"}


@pytest.mark.fakekube(webhooks=True)
@pytest.mark.parametrize(("failure_policy", "stored"), [("Fail", False), ("Ignore", True)])
def test_a_validating_webhook_that_cannot_be_called_follows_its_failure_policy(
    fake_apiserver: FakeApiServer, tmp_path: Path, failure_policy: str, stored: bool
) -> None:
    with StubWebhook(tmp_path, deny_unless_labelled) as stub:
        down = stub.registration("v.example.io", [rule(["pods"])], failurePolicy=failure_policy)
    down["clientConfig"]["url"] = "https://127.0.0.1:9/validate"  # nothing listens
    fake_apiserver.store.create(validating("v", down))
    try:
        create_pod(fake_apiserver, pod())
    except ApiException as ex:
        assert ex.status == 500 and 'failed calling webhook "v.example.io"' in json.loads(ex.body)["message"]
    assert fake_apiserver.store.exists("pods", "p", "default") is stored


@pytest.mark.fakekube(webhooks=True)
def test_the_admission_configuration_kinds_are_never_sent_to_webhooks(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """A webhook for every resource still never sees a webhook configuration: it could lock itself in."""
    every = {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}
    with StubWebhook(tmp_path, lambda request: (None, "no")) as stub:
        fake_apiserver.store.create(validating("v", stub.registration("v.example.io", [every])))
        api = kubernetes.client.AdmissionregistrationV1Api(fake_apiserver.api_client())
        api.create_validating_webhook_configuration(validating("other", stub.registration("x.example.io", [every])))
        api.delete_validating_webhook_configuration("v")  # the DELETE is not sent either
        assert stub.requests == []
        core = kubernetes.client.CoreV1Api(fake_apiserver.api_client())
        with pytest.raises(ApiException):  # any other kind is
            core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    assert [r["kind"]["kind"] for r in stub.requests] == ["ConfigMap"]
