"""Self-managed webhook TLS against the fake API server: the controller's leader creates the CA and
serving Secrets, publishes the CA bundle in the webhook configuration, renews before expiry, rotates
the CA without a moment where the API server would distrust the webhook, and repairs tampering."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature

from celmut.controller.run import Controller, ControllerConfig
from celmut.kube import certs
from celmut.kube.client import Cluster
from celmut.kube.tls_manager import TlsConfig, TlsManager
from tests.fakekube import FakeApiServer
from tests.waiting import HANG_SECONDS, eventually

CONFIG = TlsConfig(
    namespace="celmut",
    service="celmut",
    secret="celmut-tls",
    ca_secret="celmut-ca",
    webhook_configuration="celmut",
    certificate_days=30,
    ca_days=300,
)
START = datetime.datetime.now(datetime.UTC)
DAY = datetime.timedelta(days=1)


def webhook_configuration() -> dict[str, Any]:
    def webhook(bucket: str) -> dict[str, Any]:
        return {
            "name": f"{bucket}.mutate.celmut.io",
            "clientConfig": {"service": {"name": "celmut", "namespace": "celmut", "path": f"/mutate/{bucket}"}},
            "sideEffects": "NoneOnDryRun",
            "admissionReviewVersions": ["v1"],
        }

    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "celmut"},
        "webhooks": [webhook("fail"), webhook("ignore")],
    }


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime.datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def manager(cluster: Cluster, clock: Clock) -> TlsManager:
    return TlsManager(cluster, CONFIG, clock=clock)


def secret(server: FakeApiServer, name: str) -> dict[str, bytes]:
    data = server.store.get("secrets", name, "celmut")["data"]
    return {k: base64.b64decode(v) for k, v in data.items()}


def published_bundles(server: FakeApiServer) -> list[bytes]:
    configuration = server.store.get("mutatingwebhookconfigurations", "celmut")
    return [base64.b64decode(w["clientConfig"]["caBundle"]) for w in configuration["webhooks"]]


def handshake(serving: dict[str, bytes], bundle: bytes, hostname: str, tmp_path: Path) -> None:
    """A TLS handshake as the API server makes it: trusting only ``bundle``, checking ``hostname``."""
    (tmp_path / "tls.crt").write_bytes(serving["tls.crt"])
    (tmp_path / "tls.key").write_bytes(serving["tls.key"])
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    client_context = ssl.create_default_context(cadata=bundle.decode())
    left, right = socket.socketpair()
    errors: list[Exception] = []

    def serve() -> None:
        try:
            with server_context.wrap_socket(left, server_side=True) as tls:
                tls.recv(1)
        except (OSError, ssl.SSLError) as ex:
            errors.append(ex)

    thread = threading.Thread(target=serve)
    thread.start()
    with client_context.wrap_socket(right, server_hostname=hostname) as tls:
        tls.sendall(b"x")
    thread.join(HANG_SECONDS)
    assert not errors, errors


def issuer_in(cert_pem: bytes, bundle: bytes) -> bool:
    cert = x509.load_pem_x509_certificate(cert_pem)
    for ca in x509.load_pem_x509_certificates(bundle):
        try:
            cert.verify_directly_issued_by(ca)
            return True
        except (ValueError, InvalidSignature):
            continue
    return False


def test_a_fresh_install_gets_certificates_the_api_server_trusts(
    fake_apiserver: FakeApiServer, manager: TlsManager, tmp_path: Path
) -> None:
    fake_apiserver.store.create(webhook_configuration())
    changed = manager.reconcile()
    assert changed == ["Secret/celmut-ca", "MutatingWebhookConfiguration/celmut", "Secret/celmut-tls"]
    serving = secret(fake_apiserver, "celmut-tls")
    bundles = published_bundles(fake_apiserver)
    assert bundles == [serving["ca.crt"]] * 2  # both webhooks, and the bundle the pods see
    handshake(serving, bundles[0], "celmut.celmut.svc", tmp_path)
    assert fake_apiserver.store.get("secrets", "celmut-tls", "celmut")["type"] == "kubernetes.io/tls"


def test_a_current_setup_is_left_alone(fake_apiserver: FakeApiServer, manager: TlsManager) -> None:
    fake_apiserver.store.create(webhook_configuration())
    manager.reconcile()
    fake_apiserver.clear_requests()
    assert manager.reconcile() == []
    assert [r.method for r in fake_apiserver.requests] == ["GET", "GET", "GET"]


def test_the_serving_certificate_is_renewed_in_the_last_third_of_its_life(
    fake_apiserver: FakeApiServer, manager: TlsManager, clock: Clock
) -> None:
    fake_apiserver.store.create(webhook_configuration())
    manager.reconcile()
    first = secret(fake_apiserver, "celmut-tls")
    clock.now = START + 19 * DAY  # 30-day certificate: 11 days left, more than a third
    assert manager.reconcile() == []
    clock.now = START + 21 * DAY
    assert manager.reconcile() == ["Secret/celmut-tls"]  # the CA and its bundle stay
    renewed = secret(fake_apiserver, "celmut-tls")
    assert renewed["tls.crt"] != first["tls.crt"] and renewed["ca.crt"] == first["ca.crt"]
    assert x509.load_pem_x509_certificate(renewed["tls.crt"]).not_valid_after_utc > clock.now + 25 * DAY


def test_a_ca_rotation_keeps_the_webhook_trusted_throughout(
    fake_apiserver: FakeApiServer, manager: TlsManager, clock: Clock
) -> None:
    fake_apiserver.store.create(webhook_configuration())
    manager.reconcile()
    clock.now = START + 201 * DAY  # 300-day CA: 99 days left
    before = secret(fake_apiserver, "celmut-tls")
    manager.reconcile()
    bundle = published_bundles(fake_apiserver)[0]
    assert len(x509.load_pem_x509_certificates(bundle)) == 2  # the new CA next to the old one
    assert issuer_in(before["tls.crt"], bundle)  # pods still serving the old certificate are trusted
    after = secret(fake_apiserver, "celmut-tls")
    assert issuer_in(after["tls.crt"], bundle) and not issuer_in(after["tls.crt"], before["ca.crt"])

    clock.now = START + 301 * DAY  # the old CA expired: it leaves the bundle
    manager.reconcile()
    assert len(x509.load_pem_x509_certificates(published_bundles(fake_apiserver)[0])) == 1


def test_secrets_come_first_and_the_bundle_follows_once_the_configuration_exists(
    fake_apiserver: FakeApiServer, manager: TlsManager
) -> None:
    assert manager.reconcile() == ["Secret/celmut-ca", "Secret/celmut-tls"]  # the webhook pods can start
    fake_apiserver.store.create(webhook_configuration())
    assert manager.reconcile() == ["MutatingWebhookConfiguration/celmut"]
    assert published_bundles(fake_apiserver)[0] == secret(fake_apiserver, "celmut-tls")["ca.crt"]


@pytest.mark.parametrize(
    "tampered",
    [
        pytest.param(lambda ca: certs.issue(ca, ["someone-else.example"]), id="certificate for other names"),
        pytest.param(lambda ca: certs.issue(certs.new_ca("intruder"), CONFIG.hosts), id="certificate of another CA"),
        pytest.param(
            lambda ca: certs.KeyPair(certs.issue(ca, CONFIG.hosts).cert_pem, certs.issue(ca, CONFIG.hosts).key_pem),
            id="key of another certificate",
        ),
    ],
)
def test_a_tampered_serving_secret_is_reissued(
    fake_apiserver: FakeApiServer, manager: TlsManager, cluster: Cluster, tampered: Any
) -> None:
    manager.reconcile()
    data = secret(fake_apiserver, "celmut-ca")
    bad = tampered(certs.KeyPair(data["tls.crt"], data["tls.key"]))
    current = cluster.get("v1", "secrets", "celmut", "celmut-tls")
    current["data"]["tls.crt"] = base64.b64encode(bad.cert_pem).decode()
    current["data"]["tls.key"] = base64.b64encode(bad.key_pem).decode()
    cluster.replace("v1", "secrets", "celmut", "celmut-tls", current)
    assert manager.reconcile() == ["Secret/celmut-tls"]
    repaired = secret(fake_apiserver, "celmut-tls")
    assert issuer_in(repaired["tls.crt"], data["tls.crt"]) and repaired["tls.crt"] != bad.cert_pem


def test_only_the_leader_manages_tls_and_a_new_leader_starts_at_once(
    fake_apiserver: FakeApiServer, manager: TlsManager
) -> None:
    leading = threading.Event()
    stop = threading.Event()
    thread = threading.Thread(target=manager.run, args=(stop, leading.is_set), kwargs={"poll": 0.01})
    thread.start()
    try:
        stop.wait(0.1)
        assert fake_apiserver.store.list("secrets", "celmut") == []  # a standby writes nothing
        leading.set()
        eventually(lambda: len(fake_apiserver.store.list("secrets", "celmut")) == 2, what="the leader's two Secrets")
    finally:
        stop.set()
        thread.join(5)


def test_the_controller_manages_tls_when_configured(cluster: Cluster) -> None:
    assert Controller(ControllerConfig(), cluster).tls is None  # cert-manager (or nobody) does it
    controller = Controller(ControllerConfig(tls=CONFIG), cluster)
    assert controller.tls is not None and controller.tls.config == CONFIG
    assert Controller(ControllerConfig(tls=CONFIG, dry_run=True), cluster).tls is None  # a dry run writes nothing


def test_the_controller_command_reads_tls_settings_from_its_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {
        "CELMUT_TLS_SECRET": "celmut-tls",
        "CELMUT_TLS_CA_SECRET": "celmut-ca",
        "CELMUT_TLS_SERVICE": "celmut",
        "CELMUT_TLS_WEBHOOK_CONFIGURATION": "celmut",
        "CELMUT_TLS_CERTIFICATE_DAYS": "30",
        "CELMUT_TLS_CA_DAYS": "300",
        "POD_NAMESPACE": "celmut",
    }
    assert TlsConfig.from_environment(env) == CONFIG
    assert TlsConfig.from_environment({}) is None
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("POD_NAMESPACE")
    from celmut.main import main

    assert main(["controller", "--policies", "policies/"]) == 2  # refused before connecting anywhere
    assert "POD_NAMESPACE" in capsys.readouterr().err


def test_a_webhook_served_at_a_url_gets_a_certificate_for_its_host(
    fake_apiserver: FakeApiServer, cluster: Cluster, clock: Clock, tmp_path: Path
) -> None:
    """Issue 38, item 4: with ``--webhook-url`` the serving certificate also names the URL's host (an IP
    address as an IP SAN, as Kyverno's --serverIP), so the webhook served there with the Secret's files is
    trusted by the API server through the published bundle."""
    import argparse

    from celmut.controller import webhook_flags

    parser = argparse.ArgumentParser()
    webhook_flags.add_flags(parser)
    parser.add_argument("--opt-out-label", default="celmut.io/ignore")
    args = parser.parse_args(["--manage-webhook-configuration", "celmut", "--webhook-url", "https://10.0.0.5:8443/x"])
    tls = webhook_flags.tls_for_url(CONFIG, webhook_flags.rules_config(args))
    assert tls is not None and tls.hosts[-1] == "10.0.0.5"
    TlsManager(cluster, tls, clock=clock).reconcile()
    serving = secret(fake_apiserver, "celmut-tls")
    assert "10.0.0.5" in certs.dns_names(x509.load_pem_x509_certificate(serving["tls.crt"]))
    handshake(serving, serving["ca.crt"], "celmut.celmut.svc", tmp_path)  # the Service's names stay

    ca = tmp_path / "ca.pem"
    ca.write_bytes(serving["ca.crt"])
    both = parser.parse_args([*["--manage-webhook-configuration", "celmut", "--webhook-ca-bundle", str(ca)]])
    with pytest.raises(ValueError, match="self-managed TLS"):
        webhook_flags.tls_for_url(CONFIG, webhook_flags.rules_config(both))


def test_the_policy_validating_webhook_gets_the_bundle_too_and_through_a_ca_rotation(
    fake_apiserver: FakeApiServer, cluster: Cluster, clock: Clock
) -> None:
    """Served by the same pods, the policy ValidatingWebhookConfiguration trusts the same CA: at install,
    and at every rotation in the same pass as the mutating one (its failurePolicy is Fail: a bundle
    behind would refuse every policy write)."""
    from celmut.install.policy_validation import configuration
    from celmut.install.webhook_config import WebhookSettings

    fake_apiserver.store.create(webhook_configuration())
    fake_apiserver.store.create(configuration(WebhookSettings(), name="celmut-policy-validation", kyverno=False))
    config = dataclasses.replace(CONFIG, validating_webhook_configuration="celmut-policy-validation")
    manager = TlsManager(cluster, config, clock=clock)

    def validating_bundle() -> bytes:
        stored = fake_apiserver.store.get("validatingwebhookconfigurations", "celmut-policy-validation")
        return base64.b64decode(stored["webhooks"][0]["clientConfig"]["caBundle"])

    assert "ValidatingWebhookConfiguration/celmut-policy-validation" in manager.reconcile()
    assert validating_bundle() == published_bundles(fake_apiserver)[0] == secret(fake_apiserver, "celmut-tls")["ca.crt"]
    clock.now += 250 * DAY  # the CA is due: a new one joins the bundle
    manager.reconcile()
    assert validating_bundle() == published_bundles(fake_apiserver)[0]
    assert issuer_in(secret(fake_apiserver, "celmut-tls")["tls.crt"], validating_bundle())
