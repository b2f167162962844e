"""OpenTelemetry tracing of admissions (issue 29): with the ``tracing`` extra and the standard OTEL_*
variables, the webhook exports one ``admission`` span per request, parented on the API server's
``traceparent`` (W3C trace context), with a ``policy <name>`` child per policy evaluated; an OTLP
receiver on loopback gets them over HTTP/protobuf. Without the variables nothing of OpenTelemetry is
imported."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from celmut import service
from celmut.service import tracing
from tests.otlp_receiver import otlp_receiver
from tests.server.support import admission_request, pod, running_server
from tests.server.test_webhook import POLICY, write

ROOT = Path(__file__).resolve().parents[2]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
LABEL = '\'[JSONPatch{op: "add", path: "/metadata/labels/traced", value: "yes"}]\''
BROKEN = '\'[JSONPatch{op: "add", path: "/metadata/labels/x", value: object.metadata.missing}]\''
SKIPPED = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: prod-only}
spec:
  autogen: {podControllers: {controllers: []}}
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  matchConditions: [{name: is-prod, expression: 'object.metadata.namespace == "prod"'}]
  mutations: [{patchType: JSONPatch, jsonPatch: {expression: '[]'}}]
"""
ON_CONFIGMAPS = POLICY.format(name="configmaps", failure="Ignore", expression=LABEL).replace(
    "resources: [pods, pods/status]", "resources: [configmaps]"
)


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
    ],
    ids=["nothing set: off", "endpoint", "traces endpoint", "console exporter", "sdk disabled", "exporter none"],
)
def test_tracing_follows_the_standard_otel_variables(environ: dict[str, str], on: bool) -> None:
    assert tracing.requested(environ) is on


def test_the_webhook_exports_an_admission_span_with_a_child_per_policy_evaluated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "label", POLICY.format(name="label", failure="Fail", expression=LABEL))
    write(tmp_path, "broken", POLICY.format(name="broken", failure="Ignore", expression=BROKEN))
    write(tmp_path, "prod-only", SKIPPED)
    write(tmp_path, "configmaps", ON_CONFIGMAPS)
    with otlp_receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{receiver.url}/v1/traces")
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
        monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
        request = admission_request(pod())
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
        with running_server(tmp_path, [str(tmp_path / "policies")]) as server, server.client() as client:
            traced = client.post("/mutate", json=body, headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"})
            untraced = client.post("/mutate/ignore", json=body)
            assert traced.status_code == untraced.status_code == 200
        # the server stopped: its tracer provider was shut down, flushing every span
    admissions = receiver.named("admission")
    assert len(admissions) == 2 and receiver.paths and set(receiver.paths) == {"/v1/traces"}
    first = next(s for s in admissions if s.trace_id == TRACE_ID)
    assert first.parent_span_id == PARENT_ID  # continues the API server's trace
    assert first.resource["service.name"] == "celmut-webhook"
    assert first.attributes["k8s.admission.uid"] == request["uid"]
    assert first.attributes["k8s.admission.operation"] == "CREATE"
    assert first.attributes["celmut.admission.allowed"] is True
    assert first.attributes["celmut.admission.patch_operations"] == 1
    children = {s.name: s for s in receiver.spans if s.parent_span_id == first.span_id}
    assert set(children) == {"policy label", "policy broken", "policy prod-only"}  # configmaps: not evaluated
    label = children["policy label"].attributes
    assert (label["celmut.policy.result"], label["celmut.policy.patch_operations"]) == ("applied", 1)
    assert children["policy broken"].attributes["celmut.policy.result"] == "error"
    assert children["policy broken"].status_code == 2  # STATUS_CODE_ERROR
    assert children["policy prod-only"].attributes["celmut.policy.result"] == "skipped"
    assert all(first.start_ns <= c.start_ns <= c.end_ns <= first.end_ns for c in children.values())
    second = next(s for s in admissions if s.trace_id != TRACE_ID)
    assert second.parent_span_id == ""  # no traceparent: a trace of its own
    assert second.attributes["celmut.admission.failure_policy"] == "Ignore"


def test_with_tracing_off_neither_the_sdk_nor_the_exporter_is_imported(tmp_path: Path) -> None:
    probe = textwrap.dedent(
        """
        import json, os, sys
        for name in [n for n in os.environ if n.startswith("OTEL_")]:
            del os.environ[name]
        from celmut.server.app import create_app
        from celmut.server.settings import ServerSettings
        from celmut.service import tracing
        assert tracing.from_environment("celmut-webhook") is None
        loaded = ("opentelemetry.sdk", "opentelemetry.exporter", "opentelemetry.proto", "celmut.service.tracing_otel")
        print(json.dumps(sorted(n for n in sys.modules if n.startswith(loaded))))
        """
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(result.stdout) == []


def test_requested_without_the_extra_warns_and_stays_off(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if the extra were not installed
    monkeypatch.delitem(sys.modules, "celmut.service.tracing_otel", raising=False)
    monkeypatch.delattr(service, "tracing_otel", raising=False)
    found = tracing.from_environment("celmut-webhook", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})
    assert found is None
    assert "the tracing extra is not installed" in caplog.text
