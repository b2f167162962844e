"""The controller's reconciles as OpenTelemetry spans (issue 29): with the OTEL_* variables set, each
reconcile is a ``reconcile`` span naming its target and action, with a ``policy <name>`` child per
policy that changed the target; an OTLP receiver on loopback gets them when the controller stops."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually
from tests.otlp_receiver import otlp_receiver

from .support import add_label, configmap, labels_of, policy, running, write_policies


def test_each_reconcile_is_a_span_with_the_policies_that_changed_the_target(
    fake_apiserver: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_apiserver.store.create(configmap("one"))
    policies = write_policies(tmp_path / "policies", policy("scanned", add_label("scanned")))
    with otlp_receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)  # the exporter appends /v1/traces
        monkeypatch.setenv("OTEL_SERVICE_NAME", "controller-under-test")
        with running(fake_apiserver, tmp_path, policies):
            eventually(lambda: labels_of(fake_apiserver, "one").get("scanned") == "true")
    (reconcile,) = [s for s in receiver.named("reconcile") if s.attributes["celmut.reconcile.action"] == "patched"]
    assert reconcile.resource["service.name"] == "controller-under-test"  # OTEL_SERVICE_NAME wins
    assert reconcile.attributes["k8s.object.name"] == "one"
    assert reconcile.attributes["celmut.reconcile.target"] == "configmaps.v1 default/one"
    (child,) = [s for s in receiver.spans if s.parent_span_id == reconcile.span_id]
    assert child.name == "policy scanned" and child.trace_id == reconcile.trace_id
    assert child.attributes["celmut.policy.patch_operations"] == 1
    assert set(receiver.paths) == {"/v1/traces"}
