"""Kyverno's x509 library: rows from kyverno/sdk ``extensions/cel/libs/x509/impl_test.go`` plus
certificates and requests made here with ``cryptography`` to cover every field Kyverno returns."""

from __future__ import annotations

import base64
import datetime
import ipaddress
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.cel.helpers import Err, cases, check_case

KYVERNO_TEST_CERT = """-----BEGIN CERTIFICATE-----
MIIC7TCCAdWgAwIBAgIBADANBgkqhkiG9w0BAQsFADAYMRYwFAYDVQQDDA0qLmt5
dmVybm8uc3ZjMB4XDTIyMTAxMDExNDYzMloXDTIzMTAxMDEyNDYzMlowGDEWMBQG
A1UEAwwNKi5reXZlcm5vLnN2YzCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoC
ggEBAOKF+2P0Ufp855hpdsGD4lYkd6oU7HZAOWm1XskAMwrdsqWwTNNAinyHRoPQ
IbNbGDQ+r6Cggc2mlxHJ90PnC2weHj5otaD17Z+ARZpJZ4HMWkEfFt8sxwo9vuQJ
RWihqNwFheowjswoSB1DHnPufrZHfztkMoRx278ZfHaIMdlSTg50ektkNDoHA3OJ
sxxw54X3HR1iq6SZwN8xNT0TI6B6BbfAYWMNmKCiZ2iV6kW//XnTEqGd2WcmhuP0
SjwO4tCJbj9oV6+Bj/uhFr7J4foErMaodYDBtQs/ul2tcAwSBHfnC2KcLbiZTZsC
0Rs0WPJ4YwF/cOsD7Z/RmLs4FHsCAwEAAaNCMEAwDgYDVR0PAQH/BAQDAgKkMA8G
A1UdEwEB/wQFMAMBAf8wHQYDVR0OBBYEFJaK+3Wfnf7rVkYBzMCLSaV56NMqMA0G
CSqGSIb3DQEBCwUAA4IBAQDY7F6b+t9BX7098JyGk6zeT39MoLdSv+8IaKXn+m8G
yOKn3CZkruko57ycvPd4taC0gggtmUYynFhwPMQr+boNrrK9rat8Jw3yPPsBq/8D
/s6tvwxSNXBfPUI5OvNIB/hA5XpJpdHQaCkYm+FWkcJsolkkbSOfVjUjImW26JHB
nnPPtR4Y7dx0SVoPS19IC0T5RmdvgqlXj4XbhTnX3QOujVHn8u+wQ8po7EngHDQs
+onfkp8ipe0QpEJL1ZdW2LhyDXGKrZ2y8UPZ9wYNzxHWaj1Thu4B9YFdsPUwWqSx
n9e+FygpoktlD8YgT7jwgiVKX7Koz++zyvMIdhvRrtgS
-----END CERTIFICATE-----"""

KYVERNO_N = (
    "28595925905962223424520947352207105451744616797088171943239289907331901888529856098458304611629660120574607"
    "50103990214236133398206579321326707485465852510079928015870784027947955096116921376352685724729865314171100"
    "39316426066620526749431914764886658423095833110973513319942674137767924626371927752400627780360623535179795"
    "38994974045127175206597906751521558536719043095219698535279694800624795673809356898452438518041024126624051"
    "88704493216450601957372598720420875067412967758495615661145424500491894377157149275763943245968893185552694"
    "1886354880727024912384140238027697348634609952850513122734230521040730560514233467"
)

KYVERNO_ROWS = [
    ("x509.decode(variables.cert).IsCA", True),
    ("x509.decode(variables.cert).BasicConstraintsValid", True),
    ("x509.decode(variables.cert).KeyUsage", 37.0),  # digitalSignature | keyEncipherment | certSign
    ("x509.decode(variables.cert).SerialNumber", 0.0),
    ("x509.decode(variables.cert).PublicKeyAlgorithm", 1.0),
    ("x509.decode(variables.cert).MaxPathLen", -1.0),
    ("x509.decode(variables.cert).MaxPathLenZero", False),
    ("x509.decode(variables.cert).NotBefore", "2022-10-10T11:46:32Z"),
    ("x509.decode(variables.cert).NotAfter", "2023-10-10T12:46:32Z"),
    ("x509.decode(variables.cert).Issuer.CommonName", "*.kyverno.svc"),
    ("x509.decode(variables.cert).Issuer.SerialNumber", ""),
    ("x509.decode(variables.cert).Issuer.Names", [{"Type": [2.0, 5.0, 4.0, 3.0], "Value": "*.kyverno.svc"}]),
    ("x509.decode(variables.cert).Issuer.Organization", None),
    ("x509.decode(variables.cert).PublicKey.E", 65537.0),
    ("x509.decode(variables.cert).PublicKey.N", KYVERNO_N),
    ("x509.decode(variables.cert).Extensions.size()", 3),
    ("x509.decode(variables.cert).Extensions[0].Critical", True),
    ("x509.decode(variables.cert).Extensions[0].Id", [2.0, 5.0, 29.0, 15.0]),
    ("x509.decode(variables.cert).Extensions[0].Value", "AwICpA=="),
    ("x509.decode(variables.cert).Extensions[2].Critical", False),
    ("x509.decode(variables.cert).ExtKeyUsage", None),
    ("x509.decode(variables.cert).DNSNames", None),
    ("x509.decode(variables.cert).AuthorityKeyId", None),
    ("x509.decode(variables.cert).RawIssuer", "MBgxFjAUBgNVBAMMDSoua3l2ZXJuby5zdmM="),
    ("x509.decode(variables.cert).RawSubject == x509.decode(variables.cert).RawIssuer", True),
    ("x509.decode(variables.cert).Raw.size() > 1000", True),
    ("'Subject' in x509.decode(variables.cert)", False),  # Kyverno's output has RawSubject only
    ("x509.decode(variables.cert).size()", 37),
    ("x509.decode('not a valid PEM')", Err("evaluation", "failed to decode PEM block")),
    ("x509.decode(1)", Err("compile", "no matching overload")),
    (
        "x509.decode('-----BEGIN PRIVATE KEY-----\\nAAAA\\n-----END PRIVATE KEY-----')",
        Err("evaluation", "PEM block neither contains a CERTIFICATE or CERTIFICATE REQUEST"),
    ),
]


@cases(KYVERNO_ROWS)
def test_kyverno_certificate(expression: str, expected: Any) -> None:
    check_case(expression, expected, variables={"cert": KYVERNO_TEST_CERT})


@pytest.mark.filterwarnings("ignore::cryptography.utils.CryptographyDeprecationWarning")  # serial number 0
def test_raw_fields_are_the_der_parts() -> None:
    cert = x509.load_pem_x509_certificate(KYVERNO_TEST_CERT.encode())
    der = cert.public_bytes(serialization.Encoding.DER)
    b64 = base64.b64encode
    check_case("x509.decode(variables.cert).Raw", b64(der).decode(), variables={"cert": KYVERNO_TEST_CERT})
    check_case(
        "x509.decode(variables.cert).RawTBSCertificate",
        b64(cert.tbs_certificate_bytes).decode(),
        variables={"cert": KYVERNO_TEST_CERT},
    )
    check_case(
        "x509.decode(variables.cert).Signature", b64(cert.signature).decode(), variables={"cert": KYVERNO_TEST_CERT}
    )
    spki = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    check_case(
        "x509.decode(variables.cert).RawSubjectPublicKeyInfo", b64(spki).decode(), variables={"cert": KYVERNO_TEST_CERT}
    )


# --- certificates with every extension Kyverno reports, made here ------------------------------------------


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "DE"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Second Org"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


@pytest.fixture(scope="module")
def full_cert(rsa_key: rsa.RSAPrivateKey) -> str:
    start = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name("leaf.example.com"))
        .issuer_name(_name("Example CA"))
        .public_key(rsa_key.public_key())
        .serial_number(2**70 + 5)  # Go reports the low 64 bits
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("leaf.example.com"),
                    x509.DNSName("www.example.com"),
                    x509.RFC822Name("ops@example.com"),
                    x509.IPAddress(ipaddress.ip_address("10.1.2.3")),
                    x509.IPAddress(ipaddress.ip_address("2001:db8::1")),
                    x509.UniformResourceIdentifier("spiffe://example.com/leaf"),
                ]
            ),
            critical=False,
        )
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier(
                key_identifier=b"\x01\x02\x03", authority_cert_issuer=None, authority_cert_serial_number=None
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityInformationAccess(
                [
                    x509.AccessDescription(
                        x509.oid.AuthorityInformationAccessOID.OCSP,
                        x509.UniformResourceIdentifier("http://ocsp.example.com"),
                    ),
                    x509.AccessDescription(
                        x509.oid.AuthorityInformationAccessOID.CA_ISSUERS,
                        x509.UniformResourceIdentifier("http://ca.example.com/ca.crt"),
                    ),
                ]
            ),
            critical=False,
        )
        .add_extension(
            x509.CRLDistributionPoints(
                [
                    x509.DistributionPoint(
                        [x509.UniformResourceIdentifier("http://crl.example.com/ca.crl")], None, None, None
                    )
                ]
            ),
            critical=False,
        )
        .add_extension(
            x509.CertificatePolicies([x509.PolicyInformation(x509.ObjectIdentifier("2.23.140.1.2.1"), None)]),
            critical=False,
        )
        .add_extension(
            x509.NameConstraints(
                permitted_subtrees=[x509.DNSName("example.com"), x509.IPAddress(ipaddress.ip_network("10.0.0.0/8"))],
                excluded_subtrees=[x509.RFC822Name("bad.example.com")],
            ),
            critical=True,
        )
    )
    cert = builder.sign(rsa_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM).decode()


FULL_ROWS = [
    ("x509.decode(variables.cert).SerialNumber", 5.0),
    ("x509.decode(variables.cert).NotBefore", "2024-01-02T03:04:05Z"),
    ("x509.decode(variables.cert).Issuer.CommonName", "Example CA"),
    ("x509.decode(variables.cert).Issuer.Organization", ["Example", "Second Org"]),
    ("x509.decode(variables.cert).Issuer.Country", ["DE"]),
    ("x509.decode(variables.cert).Issuer.Names.size()", 4),
    ("x509.decode(variables.cert).IsCA", False),
    ("x509.decode(variables.cert).BasicConstraintsValid", True),
    ("x509.decode(variables.cert).KeyUsage", 0.0),
    ("x509.decode(variables.cert).DNSNames", ["leaf.example.com", "www.example.com"]),
    ("x509.decode(variables.cert).EmailAddresses", ["ops@example.com"]),
    ("x509.decode(variables.cert).IPAddresses", ["10.1.2.3", "2001:db8::1"]),
    ("x509.decode(variables.cert).ExtKeyUsage", [1.0, 2.0]),
    ("x509.decode(variables.cert).AuthorityKeyId", "AQID"),
    ("x509.decode(variables.cert).OCSPServer", ["http://ocsp.example.com"]),
    ("x509.decode(variables.cert).IssuingCertificateURL", ["http://ca.example.com/ca.crt"]),
    ("x509.decode(variables.cert).CRLDistributionPoints", ["http://crl.example.com/ca.crl"]),
    ("x509.decode(variables.cert).PolicyIdentifiers", [[2.0, 23.0, 140.0, 1.0, 2.0, 1.0]]),
    ("x509.decode(variables.cert).PermittedDNSDomainsCritical", True),
    ("x509.decode(variables.cert).PermittedDNSDomains", ["example.com"]),
    ("x509.decode(variables.cert).PermittedIPRanges", [{"IP": "10.0.0.0", "Mask": "/wAAAA=="}]),
    ("x509.decode(variables.cert).ExcludedEmailAddresses", ["bad.example.com"]),
    ("x509.decode(variables.cert).ExcludedDNSDomains", None),
    ("x509.decode(variables.cert).Extensions.map(e, e.Id[3])", [19.0, 17.0, 37.0, 35.0, 1.0, 31.0, 32.0, 30.0]),
]


@cases(FULL_ROWS)
def test_certificate_fields(expression: str, expected: Any, full_cert: str) -> None:
    check_case(expression, expected, variables={"cert": full_cert})


@pytest.fixture(scope="module")
def request_pem(rsa_key: rsa.RSAPrivateKey) -> str:
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(_name("csr.example.com"))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("csr.example.com"), x509.UniformResourceIdentifier("https://example.com/a?b=c")]
            ),
            critical=False,
        )
        .sign(rsa_key, hashes.SHA256())
    )
    return csr.public_bytes(serialization.Encoding.PEM).decode()


REQUEST_ROWS = [
    ("x509.decode(variables.csr).Subject.CommonName", "csr.example.com"),
    ("x509.decode(variables.csr).Version", 0.0),
    ("x509.decode(variables.csr).SignatureAlgorithm", 4.0),  # Go's SHA256WithRSA
    ("x509.decode(variables.csr).PublicKeyAlgorithm", 1.0),
    ("x509.decode(variables.csr).PublicKey.E", 65537.0),
    ("x509.decode(variables.csr).DNSNames", ["csr.example.com"]),
    ("x509.decode(variables.csr).URIs[0].Host", "example.com"),
    ("x509.decode(variables.csr).URIs[0].RawQuery", "b=c"),
    ("x509.decode(variables.csr).Extensions[0].Id", [2.0, 5.0, 29.0, 17.0]),
    ("x509.decode(variables.csr).Attributes[0].Type", [1.0, 2.0, 840.0, 113549.0, 1.0, 9.0, 14.0]),
    ("x509.decode(variables.csr).Attributes[0].Value[0][0].Type", [2.0, 5.0, 29.0, 17.0]),
]


@cases(REQUEST_ROWS)
def test_certificate_request(expression: str, expected: Any, request_pem: str) -> None:
    check_case(expression, expected, variables={"csr": request_pem})


def test_non_rsa_keys_are_refused() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ec")])
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    check_case(
        "x509.decode(variables.cert)",
        Err("evaluation", "certificate should use rsa algorithm"),
        variables={"cert": pem},
    )


def test_malformed_certificate() -> None:
    pem = "-----BEGIN CERTIFICATE-----\nMIIBAA==\n-----END CERTIFICATE-----"
    check_case("x509.decode(variables.cert)", Err("evaluation", "malformed certificate"), variables={"cert": pem})


def test_kubernetes_profile_has_no_x509() -> None:
    check_case("x509.decode('')", Err("compile", "undeclared reference to 'x509.decode'"), profile="kubernetes")
