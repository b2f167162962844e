"""``celmut controller`` as users run it: a process with TLS status endpoints; reports and progress."""

from __future__ import annotations

import asyncio
import base64
import io
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from celmut.controller.reconcile import Change, Outcome, TargetKey
from celmut.controller.report import Progress, table
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually
from tests.waiting import HANG_SECONDS

from .support import add_label, configmap, labels_of, policy, write_policies


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_controller_process_mutates_serves_tls_status_and_stops_cleanly(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake_apiserver.store.create(configmap("one"))
    policies = write_policies(tmp_path / "policies", policy("scanned", add_label("scanned")))
    port = free_port()
    from celmut.kube import certs

    material = certs.self_signed(tmp_path / "tls", ["127.0.0.1"])
    command = [
        sys.executable,
        "-m",
        "celmut",
        "controller",
        "--kubeconfig",
        str(fake_apiserver.kubeconfig(tmp_path / "kc")),
    ]
    command += ["--policies", str(policies), "--metrics-port", str(port), "--metrics-host", "127.0.0.1"]
    command += ["--tls-cert", str(material.cert_file), "--tls-key", str(material.key_file)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    verify = ssl.create_default_context(cafile=str(material.ca_file))
    try:
        eventually(lambda: labels_of(fake_apiserver, "one").get("scanned") == "true", what="the scan")

        def ready() -> bool:
            try:
                return httpx.get(f"https://127.0.0.1:{port}/readyz", verify=verify).status_code == 200
            except httpx.HTTPError:
                return False

        eventually(ready, what="/readyz over TLS")
        metrics = httpx.get(f"https://127.0.0.1:{port}/metrics", verify=verify).text
        assert 'celmut_controller_targets_total{action="patched"} 1.0' in metrics
        assert "celmut_controller_queue_depth 0.0" in metrics
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=20)[0].decode()
    assert process.returncode == 0, output
    assert "Traceback" not in output


def outcome(name: str, action: str, **extra: object) -> Outcome:
    return Outcome(TargetKey("v1", "configmaps", "default", name), action, **extra)  # type: ignore[arg-type]


def test_the_table_names_policy_and_mutation_for_each_change() -> None:
    ops = [{"op": "add", "path": "/metadata/labels/team", "value": "a"}]
    text = table(
        [
            outcome("a", "would-patch", patch=ops, changes=[Change("team-label", "spec.mutations[0]", ops)]),
            outcome("b", "unchanged"),
        ]
    )
    assert 'add /metadata/labels/team "a"   ← team-label spec.mutations[0]' in text
    assert "configmaps.v1 default/b" not in text  # unchanged targets are only counted
    assert text.endswith("2 targets: 1 unchanged, 1 would-patch")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_drawn_on_a_terminal_only() -> None:
    terminal = Terminal()
    progress = Progress(terminal)
    progress.update(5, 10, final=True)
    assert terminal.getvalue().endswith(" 5/10\n") and "█" * 15 in terminal.getvalue()
    piped = io.StringIO()
    Progress(piped).update(5, 10, final=True)
    assert piped.getvalue() == ""


def test_the_status_endpoint_listens_on_loopback_unless_told_otherwise() -> None:
    """Like the webhook (--host 127.0.0.1): all interfaces only where the chart and `celmut manifests` ask for
    them, so the kubelet can probe the pod."""
    import argparse

    from celmut.controller import command
    from celmut.install.manifests import InstallOptions, controller_deployment

    parser = argparse.ArgumentParser()
    command.add_parser(parser.add_subparsers())
    assert parser.parse_args(["controller"]).metrics_host == "127.0.0.1"
    args = controller_deployment(InstallOptions())["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--metrics-host") + 1] == "0.0.0.0"


TLS_ENVIRONMENT = {  # what the chart's controller Deployment sets (charts/celmut/templates/controller.yaml)
    "CELMUT_TLS_SECRET": "celmut-tls",
    "CELMUT_TLS_CA_SECRET": "celmut-ca",
    "CELMUT_TLS_SERVICE": "celmut",
    "CELMUT_TLS_WEBHOOK_CONFIGURATION": "celmut",
    "POD_NAMESPACE": "celmut",
}


def test_a_default_install_writes_its_serving_secret_and_ca_bundle(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Issue 38, item 0: with the webhook configuration already written (the managed rules come first)
    and logs at INFO, the TLS thread died publishing the CA bundle, so ``celmut-tls`` never appeared."""
    fake_apiserver.store.create(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "celmut"},
            "webhooks": [
                {
                    "name": "ignore.mutate.celmut.io",
                    "clientConfig": {"service": {"name": "celmut", "namespace": "celmut", "path": "/mutate/ignore"}},
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                }
            ],
        }
    )
    policies = write_policies(tmp_path / "policies", policy("scanned", add_label("scanned")))
    command = [sys.executable, "-m", "celmut", "controller", "--log-level", "INFO", "--metrics-port", "0"]
    command += ["--kubeconfig", str(fake_apiserver.kubeconfig(tmp_path / "kc")), "--policies", str(policies)]
    env = {**os.environ, **TLS_ENVIRONMENT}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    try:

        def bundle() -> str:
            configuration = fake_apiserver.store.get("mutatingwebhookconfigurations", "celmut")
            return str(configuration["webhooks"][0]["clientConfig"].get("caBundle", ""))

        eventually(lambda: process.poll() is not None or bundle(), what="the CA bundle")
        eventually(
            lambda: process.poll() is not None or fake_apiserver.store.list("secrets", "celmut")[1:],
            what="the serving Secret",
        )
        assert process.poll() is None, "the controller stopped"
        serving = fake_apiserver.store.get("secrets", "celmut-tls", "celmut")["data"]
        assert base64.b64decode(serving["ca.crt"]) == base64.b64decode(bundle())
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=20)[0].decode()
    assert process.returncode == 0, output
    assert '"webhook CA bundle updated"' in output and "Traceback" not in output


def test_a_background_thread_that_dies_stops_the_controller_with_code_70(
    fake_apiserver: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead thread must not leave the process up and silent: the controller stops and exits 70, so
    that kubelet restarts it (issue 38, item 0), and says which thread died of what."""
    from celmut.main import main

    monkeypatch.setattr(threading, "excepthook", threading.excepthook)  # the controller replaces it
    monkeypatch.setattr(signal, "signal", lambda *_: None)  # leave pytest's handlers alone
    fake_apiserver.store.create(configmap("one"))
    policies = write_policies(tmp_path / "policies", policy("scanned", add_label("scanned")))

    def a_thread_dies_once_the_controller_runs() -> None:
        eventually(lambda: labels_of(fake_apiserver, "one").get("scanned") == "true", what="the scan")
        raise RuntimeError("a bug in a background thread")

    threading.Thread(target=a_thread_dies_once_the_controller_runs, name="doomed").start()
    arguments = ["controller", "--kubeconfig", str(fake_apiserver.kubeconfig(tmp_path / "kc"))]
    arguments += ["--policies", str(policies), "--metrics-port", "0"]
    assert main(arguments) == 70


def test_the_status_endpoints_name_a_dead_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    from celmut import crashes
    from celmut.controller.status import ControllerMetrics, status_app

    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    deaths = crashes.install()
    app = status_app(ControllerMetrics(), deaths.failure, deaths.failure)

    def answers() -> list[tuple[int, str]]:
        async def get() -> list[tuple[int, str]]:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://c") as client:
                return [((r := await client.get(path)).status_code, r.text) for path in ("/healthz", "/readyz")]

        return asyncio.run(get())

    assert answers() == [(200, "ok"), (200, "ok")]

    def doomed() -> None:
        raise RuntimeError("a bug in a background thread")

    thread = threading.Thread(target=doomed, name="doomed")
    thread.start()
    thread.join(HANG_SECONDS)
    reason = "background thread doomed died: RuntimeError: a bug in a background thread"
    assert answers() == [(503, f"not alive: {reason}"), (503, f"not ready: {reason}")]
