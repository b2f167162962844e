"""The chart's monitoring (issue 29): ServiceMonitors for the webhook and the controller, and a Grafana
dashboard whose every PromQL metric exists on a live ``/metrics`` of the webhook or the controller.
Also the documentation's table of celmut metrics next to Kyverno's: each celmut name it lists exists."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from celmut.controller.status import status_app
from tests.controller.support import add_label, configmap, labels_of, policy, running, write_policies
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually
from tests.server.support import admission_request, pod, running_server
from tests.server.test_webhook import POLICY, write

from . import helm as helm_tool
from .test_chart import container, objects

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = helm_tool.CHART / "dashboards" / "celmut.json"
PROMETHEUS_OWN = {"up"}  # series Prometheus itself adds to every target
METRIC = re.compile(r"\bcelmut_[a-z_]+\b|\bup\b")
Obj = dict[str, Any]


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_service_monitors_scrape_both_components_over_tls(helm: Path) -> None:
    rendered = helm_tool.template(
        helm, None, "--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.labels.release=prometheus"
    )
    monitors = objects(rendered, "ServiceMonitor")
    assert sorted(m["metadata"]["name"] for m in monitors) == ["celmut-controller", "celmut-webhook"]
    for monitor in monitors:
        assert monitor["metadata"]["labels"]["release"] == "prometheus"
        (endpoint,) = monitor["spec"]["endpoints"]
        assert (endpoint["path"], endpoint["scheme"]) == ("/metrics", "https")
        (service,) = [
            s
            for s in objects(rendered, "Service")
            if _matches(monitor["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])
        ]
        (port,) = [p for p in service["spec"]["ports"] if p["name"] == endpoint["port"]]
        component = monitor["metadata"]["labels"]["app.kubernetes.io/component"]
        (deployment,) = [
            d
            for d in objects(rendered, "Deployment")
            if _matches(service["spec"]["selector"], d["spec"]["template"]["metadata"]["labels"])
        ]
        assert deployment["metadata"]["name"] == f"celmut-{component}"
        container_ports = deployment["spec"]["template"]["spec"]["containers"][0]["ports"]
        assert port["targetPort"] in {p["name"] for p in container_ports}
    assert objects(helm_tool.template(helm, None), "ServiceMonitor") == []  # off by default


def test_the_dashboard_configmap_carries_the_sidecar_label_and_the_dashboard(helm: Path) -> None:
    rendered = helm_tool.template(helm, None, "--set", "grafanaDashboard.enabled=true")
    (configmap_,) = [c for c in objects(rendered, "ConfigMap") if c["metadata"]["name"] == "celmut-dashboard"]
    assert configmap_["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(configmap_["data"]["celmut.json"]) == json.loads(DASHBOARD.read_text())
    assert not [
        c for c in objects(helm_tool.template(helm, None), "ConfigMap") if c["metadata"]["name"] == "celmut-dashboard"
    ]


def exposed_names(text: str) -> set[str]:
    """Every series name a /metrics text can hold, families without samples yet included."""
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        suffixes = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count", "_created")}
        names |= {family.name + s for s in suffixes.get(family.type, ("",))}
        names |= {sample.name for sample in family.samples}
    return names


@pytest.fixture(scope="module")
def live_metrics(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The names on the webhook's /metrics after an admission and on the controller's after a patch."""
    tmp_path = tmp_path_factory.mktemp("live-metrics")
    label = '\'[JSONPatch{op: "add", path: "/metadata/labels/seen", value: "yes"}]\''
    write(tmp_path, "label", POLICY.format(name="label", failure="Ignore", expression=label))
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": admission_request(pod())}
    with running_server(tmp_path, [str(tmp_path / "policies")]) as server, server.client() as client:
        assert client.post("/mutate", json=body).status_code == 200
        webhook = client.get("/metrics").text
    fake = FakeApiServer().start()
    try:
        fake.store.create(configmap("one"))
        policies = write_policies(tmp_path / "controller", policy("scanned", add_label("scanned")))
        with running(fake, tmp_path, policies) as controller:
            eventually(lambda: labels_of(fake, "one").get("scanned") == "true")

            async def scrape() -> str:
                app = status_app(controller.metrics, lambda: "")
                async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://c") as c:
                    return (await c.get("/metrics")).text

            controller_text = asyncio.run(scrape())
    finally:
        fake.stop()
    return exposed_names(webhook) | exposed_names(controller_text)


def _expressions(dashboard: Obj) -> list[str]:
    return [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]


def test_every_dashboard_query_uses_metrics_the_components_expose(live_metrics: set[str]) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = _expressions(dashboard) + [
        v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"
    ]
    assert len(_expressions(dashboard)) >= 15
    for expression in expressions:
        used = set(METRIC.findall(expression))
        assert used, f"no celmut metric in {expression!r}"
        assert used - live_metrics - PROMETHEUS_OWN == set(), expression


def test_the_docs_metrics_table_names_metrics_that_exist(live_metrics: set[str]) -> None:
    text = (ROOT / "docs" / "operations" / "monitoring.md").read_text()
    section = text[text.index("## Metrics next to Kyverno's") :]
    listed = set(re.findall(r"`(celmut_[a-z_]+)", section))
    assert len(listed) >= 15
    assert {name for name in listed if name not in live_metrics and f"{name}_bucket" not in live_metrics} == set()


def _env(container_spec: Obj) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container_spec.get("env") or []}


def test_tracing_values_become_the_otel_environment_celmut_reads(helm: Path) -> None:
    from celmut.service import tracing

    rendered = helm_tool.template(
        helm, None, "--set", "tracing.otlpEndpoint=http://otel-collector.observability:4318",
        "--set", "tracing.samplerRatio=0.25",
    )  # fmt: skip
    for component in ("webhook", "controller"):
        env = _env(container(rendered, f"celmut-{component}"))
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector.observability:4318"
        assert env["OTEL_SERVICE_NAME"] == f"celmut-{component}"
        assert (env["OTEL_TRACES_SAMPLER"], env["OTEL_TRACES_SAMPLER_ARG"]) == ("parentbased_traceidratio", "0.25")
        assert tracing.requested(env)
    for component in ("webhook", "controller"):  # off by default: no OTEL_* variable at all
        env = _env(container(helm_tool.template(helm, None), f"celmut-{component}"))
        assert not [name for name in env if name.startswith("OTEL_")] and not tracing.requested(env)
