"""Self-managed webhook TLS: the controller's leader keeps the webhook's certificates valid.

Three objects, all in celmut's namespace except the cluster-scoped webhook configuration:

* Secret ``<ca>`` (``kubernetes.io/tls``): the CA (``tls.crt``, ``tls.key``) and ``previous.crt``,
  the CA it replaced, kept while it is valid so what it signed stays trusted during a rotation. Only
  the controller reads it.
* Secret ``<tls>`` (``kubernetes.io/tls``): the serving certificate for the Service's DNS names
  (``tls.crt``, ``tls.key``) and ``ca.crt``, the CA bundle. The webhook pods mount it; kubelet
  refreshes the files and ``celmut serve`` reloads them (no restart).
* MutatingWebhookConfiguration ``<name>`` (and the policy ValidatingWebhookConfiguration, when
  configured): every webhook's ``clientConfig.caBundle`` is the bundle.

A certificate is replaced when it is missing or unreadable, when less than a third of its lifetime
remains (as cert-manager renews), when it names other hosts, or when the current CA did not sign it.
A new CA enters the bundle (next to the old one) before any certificate it signs is served, so the
API server trusts the webhook throughout a rotation.

Configured by the environment of the controller (the Helm chart and ``celmut manifests`` set it):
``CELMUT_TLS_SECRET``, ``CELMUT_TLS_CA_SECRET``, ``CELMUT_TLS_SERVICE``,
``CELMUT_TLS_WEBHOOK_CONFIGURATION``, ``CELMUT_TLS_VALIDATING_WEBHOOK_CONFIGURATION``,
``CELMUT_TLS_CERTIFICATE_DAYS``, ``CELMUT_TLS_CA_DAYS`` and
``POD_NAMESPACE``; without ``CELMUT_TLS_SECRET`` TLS is left to someone else (cert-manager).
"""

from __future__ import annotations

import base64
import datetime
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

from celmut.kube import certs
from celmut.kube.client import Cluster, ClusterError, NotFound

log = logging.getLogger("celmut.tls")

WEBHOOK_CONFIGURATIONS = ("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations")
VALIDATING_CONFIGURATIONS = ("admissionregistration.k8s.io/v1", "validatingwebhookconfigurations")
RENEW_FRACTION = 1 / 3  # renew once less than this share of the lifetime remains
LABELS = {"app.kubernetes.io/part-of": "celmut", "app.kubernetes.io/managed-by": "celmut-controller"}

Clock = Callable[[], datetime.datetime]


@dataclass(frozen=True)
class TlsConfig:
    namespace: str
    service: str
    secret: str
    ca_secret: str
    webhook_configuration: str
    certificate_days: int = 365
    validating_webhook_configuration: str = ""  # the policy validating webhook's, served by the same pods
    ca_days: int = 3650
    extra_hosts: tuple[str, ...] = ()  # the host of --webhook-url: a webhook served outside the cluster

    @property
    def hosts(self) -> list[str]:
        """The names the API server may use for the Service (it uses ``<service>.<namespace>.svc``), and
        the host of the webhook's URL when it is served elsewhere (an IP address becomes an IP SAN, as
        Kyverno's --serverIP does)."""
        svc = f"{self.service}.{self.namespace}.svc"
        return [svc, self.service, f"{self.service}.{self.namespace}", f"{svc}.cluster.local", *self.extra_hosts]

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> TlsConfig | None:
        secret = env.get("CELMUT_TLS_SECRET", "")
        if not secret:
            return None
        service, namespace = env.get("CELMUT_TLS_SERVICE", ""), env.get("POD_NAMESPACE", "")
        if not service or not namespace:
            raise ValueError("CELMUT_TLS_SECRET needs CELMUT_TLS_SERVICE and POD_NAMESPACE")
        return cls(
            namespace=namespace,
            service=service,
            secret=secret,
            ca_secret=env.get("CELMUT_TLS_CA_SECRET") or f"{service}-ca",
            webhook_configuration=env.get("CELMUT_TLS_WEBHOOK_CONFIGURATION") or service,
            validating_webhook_configuration=env.get("CELMUT_TLS_VALIDATING_WEBHOOK_CONFIGURATION", ""),
            certificate_days=int(env.get("CELMUT_TLS_CERTIFICATE_DAYS") or 365),
            ca_days=int(env.get("CELMUT_TLS_CA_DAYS") or 3650),
        )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _secret_data(secret: dict[str, Any] | None) -> dict[str, bytes]:
    data = (secret or {}).get("data") or {}
    return {k: base64.b64decode(v) for k, v in data.items() if isinstance(v, str)}


def _due(cert: x509.Certificate, now: datetime.datetime) -> bool:
    """True when the certificate is expired or in the last third of its lifetime."""
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    return cert.not_valid_after_utc - now < lifetime * RENEW_FRACTION


def _pair(data: dict[str, bytes]) -> certs.KeyPair | None:
    """The certificate and key in ``data`` when both parse and belong together."""
    try:
        pair = certs.KeyPair(data["tls.crt"], data["tls.key"])
        key = serialization.load_pem_private_key(pair.key_pem, password=None)
        public = serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        if key.public_key().public_bytes(*public) != pair.certificate.public_key().public_bytes(*public):
            return None
        return pair
    except (KeyError, ValueError, TypeError):
        return None


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


class TlsManager:
    """Keeps the CA Secret, the serving Secret and the webhook configuration's caBundle current."""

    def __init__(self, cluster: Cluster, config: TlsConfig, *, clock: Clock | None = None) -> None:
        self.cluster = cluster
        self.config = config
        self.clock = clock or (lambda: datetime.datetime.now(datetime.UTC))

    # --- one pass ----------------------------------------------------------------------------------

    def reconcile(self) -> list[str]:
        """Bring the three objects up to date; what was changed (empty when all was current)."""
        now = self.clock()
        changed: list[str] = []
        ca, bundle = self._ensure_ca(now, changed)
        self._publish_bundle(bundle, changed)  # before a certificate of a new CA is served
        self._ensure_serving(ca, bundle, now, changed)
        return changed

    def _read_secret(self, name: str) -> dict[str, Any] | None:
        try:
            return self.cluster.get("v1", "secrets", self.config.namespace, name)
        except NotFound:
            return None

    def _write_secret(self, name: str, existing: dict[str, Any] | None, data: dict[str, bytes]) -> None:
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": self.config.namespace, "labels": dict(LABELS)},
            "type": "kubernetes.io/tls",
            "data": {k: _b64(v) for k, v in data.items()},
        }
        if existing is None:
            self.cluster.create("v1", "secrets", self.config.namespace, body)
        else:  # a PUT pinned to the version read: a concurrent writer makes this pass fail and retry
            body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
            self.cluster.replace("v1", "secrets", self.config.namespace, name, body)

    def _ensure_ca(self, now: datetime.datetime, changed: list[str]) -> tuple[certs.KeyPair, bytes]:
        secret = self._read_secret(self.config.ca_secret)
        data = _secret_data(secret)
        ca = _pair(data)
        previous = data.get("previous.crt", b"")
        if ca is None or _due(ca.certificate, now):
            if ca is not None and ca.certificate.not_valid_after_utc > now:
                previous = ca.cert_pem
            ca = certs.new_ca(f"{self.config.service}-webhook-ca", days=self.config.ca_days, now=now)
            data = {"tls.crt": ca.cert_pem, "tls.key": ca.key_pem}
            if previous:
                data["previous.crt"] = previous
            self._write_secret(self.config.ca_secret, secret, data)
            changed.append(f"Secret/{self.config.ca_secret}")
            log.info("webhook CA issued", extra={"secret": self.config.ca_secret})
        bundle = ca.cert_pem
        if previous:
            try:
                if x509.load_pem_x509_certificate(previous).not_valid_after_utc > now:
                    bundle += previous
            except ValueError:
                pass
        return ca, bundle

    def _publish_bundle(self, bundle: bytes, changed: list[str]) -> None:
        """Write the bundle into every webhook of the configurations (the mutating one, and the policy
        validating one when configured), once each exists."""
        targets = [(WEBHOOK_CONFIGURATIONS, "MutatingWebhookConfiguration", self.config.webhook_configuration)]
        if self.config.validating_webhook_configuration:
            name = self.config.validating_webhook_configuration
            targets.append((VALIDATING_CONFIGURATIONS, "ValidatingWebhookConfiguration", name))
        for resource, kind, name in targets:
            try:
                configuration = self.cluster.get(*resource, "", name)
            except NotFound:
                log.info(
                    "webhook configuration not found; its CA bundle is set once it exists",
                    extra={"configuration": name, "kind": kind},
                )
                continue
            patch: list[dict[str, Any]] = []
            for index, webhook in enumerate(configuration.get("webhooks") or []):
                if (webhook.get("clientConfig") or {}).get("caBundle") != _b64(bundle):
                    patch.append({"op": "test", "path": f"/webhooks/{index}/name", "value": webhook.get("name")})
                    path = f"/webhooks/{index}/clientConfig/caBundle"
                    patch.append({"op": "add", "path": path, "value": _b64(bundle)})
            if patch:
                self.cluster.patch(*resource, "", name, patch)
                changed.append(f"{kind}/{name}")
                log.info("webhook CA bundle updated", extra={"configuration": name, "kind": kind})

    def _ensure_serving(self, ca: certs.KeyPair, bundle: bytes, now: datetime.datetime, changed: list[str]) -> None:
        secret = self._read_secret(self.config.secret)
        data = _secret_data(secret)
        serving = _pair(data)
        current = (
            serving is not None
            and not _due(serving.certificate, now)
            and sorted(certs.dns_names(serving.certificate)) == sorted(self.config.hosts)
            and _signed_by(serving.certificate, ca.certificate)
        )
        if not current:
            serving = certs.issue(ca, self.config.hosts, days=self.config.certificate_days, now=now)
        assert serving is not None
        wanted = {"tls.crt": serving.cert_pem, "tls.key": serving.key_pem, "ca.crt": bundle}
        if wanted != data:
            self._write_secret(self.config.secret, secret, wanted)
            changed.append(f"Secret/{self.config.secret}")
            log.info("webhook serving certificate written", extra={"secret": self.config.secret})

    # --- the loop ------------------------------------------------------------------------------------

    def run(
        self,
        stop: threading.Event,
        is_leader: Callable[[], bool],
        *,
        interval: float = 600.0,
        retry: float = 10.0,
        poll: float = 1.0,
    ) -> None:
        """While leading: reconcile at once, then every ``interval`` (``retry`` after a failure)."""
        next_at = 0.0
        while not stop.is_set():
            if not is_leader():
                next_at = 0.0  # a new leader reconciles at once
            elif time.monotonic() >= next_at:
                try:
                    self.reconcile()
                    next_at = time.monotonic() + interval
                except ClusterError as ex:
                    log.warning("webhook TLS not reconciled", extra={"error": str(ex)})
                    next_at = time.monotonic() + retry
            stop.wait(poll)
