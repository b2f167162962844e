"""TLS material: a CA and the serving certificates it signs, in memory (:func:`new_ca`, :func:`issue`)
or written to files for development (``--self-signed``: :func:`self_signed`), and the check that
files given by ``--tls-cert``/``--tls-key`` can be served (:func:`check_tls_files`)."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from celmut.errors import ConfigurationError

BACKDATE = datetime.timedelta(minutes=5)  # tolerate clocks slightly behind ours


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, both PEM."""

    cert_pem: bytes
    key_pem: bytes

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)


@dataclass(frozen=True)
class ServingCertificate:
    cert_file: Path
    key_file: Path
    ca_file: Path

    @property
    def ca_pem(self) -> str:
        return self.ca_file.read_text()


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _alternative_names(hosts: list[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _pem(cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> KeyPair:
    return KeyPair(
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )


def new_ca(common_name: str = "celmut-webhook-ca", *, days: int = 365, now: datetime.datetime | None = None) -> KeyPair:
    """A self-signed CA (ECDSA P-256) valid for ``days`` from ``now``."""
    start = now or _now()
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - BACKDATE)
        .not_valid_after(start + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(key, hashes.SHA256())
    )
    return _pem(cert, key)


def issue(ca: KeyPair, hosts: list[str], *, days: int = 365, now: datetime.datetime | None = None) -> KeyPair:
    """A serving certificate for ``hosts`` (DNS names or IPs; the first is the common name) signed by ``ca``."""
    start = now or _now()
    ca_cert = ca.certificate
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(hosts[0]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - BACKDATE)
        .not_valid_after(min(start + datetime.timedelta(days=days), ca_cert.not_valid_after_utc))
        .add_extension(x509.SubjectAlternativeName(_alternative_names(hosts)), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return _pem(cert, key)


def dns_names(cert: x509.Certificate) -> list[str]:
    """The certificate's subject alternative names (DNS names and IP addresses) as strings."""
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [str(n.value) for n in names if isinstance(n, x509.DNSName | x509.IPAddress)]


def self_signed(directory: Path, hosts: list[str], *, days: int = 365) -> ServingCertificate:
    """Write ``ca.crt``, ``tls.crt`` and ``tls.key`` for ``hosts`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = new_ca(days=days)
    serving = issue(ca, hosts, days=days)
    paths = ServingCertificate(directory / "tls.crt", directory / "tls.key", directory / "ca.crt")
    paths.ca_file.write_bytes(ca.cert_pem)
    paths.cert_file.write_bytes(serving.cert_pem)
    paths.key_file.write_bytes(serving.key_pem)
    paths.key_file.chmod(0o600)
    return paths


def check_tls_files(cert: str, key: str) -> None:
    """Fail at start, with the file named, when the certificate or key cannot be served (missing,
    unreadable, not PEM, a key that does not match) — not later inside uvicorn with a traceback."""
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except FileNotFoundError as ex:
        missing = ex.filename or (cert if not os.path.exists(cert) else key)
        raise ConfigurationError(f"--tls-cert/--tls-key: {missing}: no such file") from None
    except ssl.SSLError:
        try:
            ssl.create_default_context().load_verify_locations(cafile=cert)
        except ssl.SSLError:
            raise ConfigurationError(f"--tls-cert {cert}: not a PEM certificate") from None
        raise ConfigurationError(f"--tls-key {key}: not a PEM private key of the certificate {cert}") from None
    except OSError as ex:
        raise ConfigurationError(f"--tls-cert {cert} / --tls-key {key}: {ex.strerror or ex}") from None
