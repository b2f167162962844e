"""Kyverno's x509 library (kyverno/sdk ``extensions/cel/libs/x509``).

x509.decode(<string> pem) -> <dyn>

    Decodes the first PEM block: a ``CERTIFICATE`` or a ``CERTIFICATE REQUEST`` with an RSA key
    (others are errors, as in Kyverno). The result is what Kyverno returns, Go's
    ``encoding/json`` form of its certificate structure read back into a map, so every number is a
    double and the field names are Go's: ``Raw…`` and ``Signature`` (base64), ``PublicKeyAlgorithm``
    (1 = RSA), ``PublicKey`` (``N`` as a decimal string, ``E``), ``SerialNumber`` (the low 64
    bits), ``Issuer`` (``CommonName``, ``Organization``, …, ``Names``), ``NotBefore``/``NotAfter``
    (RFC 3339), ``KeyUsage`` (Go's bit set), ``Extensions`` (``Id``, ``Critical``, base64
    ``Value``), ``ExtKeyUsage``, ``BasicConstraintsValid``, ``IsCA``, ``MaxPathLen``,
    ``AuthorityKeyId``, ``OCSPServer``, ``IssuingCertificateURL``, ``DNSNames``,
    ``EmailAddresses``, ``IPAddresses``, name constraints, ``CRLDistributionPoints`` and
    ``PolicyIdentifiers``; absent lists are ``null``. Kyverno's certificate output has no
    ``Subject`` (only ``RawSubject``); a request's output is Go's whole ``CertificateRequest``
    (with ``Subject``, ``Version``, ``SignatureAlgorithm``, ``Attributes``, ``URIs``).

        x509.decode(pem).Issuer.CommonName == "*.kyverno.svc"
"""

from __future__ import annotations

import base64
import ipaddress
import json
import re
import urllib.parse
import warnings
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.utils import CryptographyDeprecationWarning
from cryptography.x509.oid import ExtendedKeyUsageOID, ExtensionOID

from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("kyverno.x509")
fn = LIBRARY.function

_PEM = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.S)
_EXT_KEY_USAGE = {  # Go's x509.ExtKeyUsage numbering
    "2.5.29.37.0": 0,
    ExtendedKeyUsageOID.SERVER_AUTH.dotted_string: 1,
    ExtendedKeyUsageOID.CLIENT_AUTH.dotted_string: 2,
    ExtendedKeyUsageOID.CODE_SIGNING.dotted_string: 3,
    ExtendedKeyUsageOID.EMAIL_PROTECTION.dotted_string: 4,
    "1.3.6.1.5.5.7.3.5": 5,
    "1.3.6.1.5.5.7.3.6": 6,
    "1.3.6.1.5.5.7.3.7": 7,
    ExtendedKeyUsageOID.TIME_STAMPING.dotted_string: 8,
    ExtendedKeyUsageOID.OCSP_SIGNING.dotted_string: 9,
    "1.3.6.1.4.1.311.10.3.3": 10,
    "2.16.840.1.113730.4.1": 11,
    "1.3.6.1.4.1.311.2.1.22": 12,
    "1.3.6.1.4.1.311.61.1.1": 13,
}
_RSA_SIGNATURES = {"md2": 1, "md5": 2, "sha1": 3, "sha256": 4, "sha384": 5, "sha512": 6}
_RSA_PSS_SIGNATURES = {"sha256": 13, "sha384": 14, "sha512": 15}
_NAME_FIELDS = {
    "2.5.4.6": "Country",
    "2.5.4.10": "Organization",
    "2.5.4.11": "OrganizationalUnit",
    "2.5.4.7": "Locality",
    "2.5.4.8": "Province",
    "2.5.4.9": "StreetAddress",
    "2.5.4.17": "PostalCode",
}


# --- a minimal DER reader for the raw parts Go exposes ---------------------------------------------------


def _tlv(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, content start, end) of the DER element at ``pos``."""
    tag = data[pos]
    length = data[pos + 1]
    start = pos + 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(data[start : start + count], "big")
        start += count
    end = start + length
    if end > len(data):
        raise ValueError("truncated DER element")
    return tag, start, end


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """(tag, element start, content start, end) of each element in ``data[start:end]``."""
    out = []
    pos = start
    while pos < end:
        tag, content, stop = _tlv(data, pos)
        out.append((tag, pos, content, stop))
        pos = stop
    return out


def _oid(content: bytes) -> list[int]:
    arcs: list[int] = []
    value = 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    if not arcs:
        return []
    first = min(arcs[0] // 40, 2)
    return [first, arcs[0] - 40 * first, *arcs[1:]]


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _raw_extensions(der: bytes, start: int, end: int) -> list[dict[str, Any]]:
    """``[{Id, Critical, Value}]`` from a DER ``Extensions`` SEQUENCE's content."""
    out = []
    for _, _, content, stop in _children(der, start, end):
        fields = _children(der, content, stop)
        oid = _oid(der[fields[0][2] : fields[0][3]])
        critical = len(fields) == 3 and der[fields[1][2] : fields[1][3]] != b"\x00"
        value = der[fields[-1][2] : fields[-1][3]]
        out.append({"Id": oid, "Critical": critical, "Value": _b64(value)})
    return out


def _tbs_parts(der: bytes) -> dict[str, Any]:
    """Raw pieces of a certificate: TBS, issuer, subject, SPKI and the extensions."""
    _, cert_content, _ = _tlv(der, 0)
    _, tbs_start, tbs_end = _tlv(der, cert_content)
    fields = _children(der, tbs_start, tbs_end)
    index = 1 if fields and fields[0][0] == 0xA0 else 0  # optional [0] version
    serial, issuer, subject, spki = fields[index], fields[index + 2], fields[index + 4], fields[index + 5]
    extensions: list[dict[str, Any]] = []
    for tag, _, content, _ in fields[index + 6 :]:
        if tag == 0xA3:
            _, seq_content, seq_end = _tlv(der, content)
            extensions = _raw_extensions(der, seq_content, seq_end)
    return {
        "tbs": der[cert_content:tbs_end],
        "serial": int.from_bytes(der[serial[2] : serial[3]], "big", signed=True),
        "issuer": der[issuer[1] : issuer[3]],
        "subject": der[subject[1] : subject[3]],
        "spki": der[spki[1] : spki[3]],
        "extensions": extensions,
    }


# --- Go's structures ----------------------------------------------------------------------------------


def _name(name: x509.Name) -> dict[str, Any]:
    """Go's ``pkix.Name`` after ``FillFromRDNSequence``."""
    out: dict[str, Any] = {field: None for field in _NAME_FIELDS.values()}
    out.update({"SerialNumber": "", "CommonName": "", "Names": None, "ExtraNames": None})
    names = []
    for rdn in name.rdns:
        for attribute in rdn:
            oid = attribute.oid.dotted_string
            value = attribute.value
            names.append(
                {"Type": [int(a) for a in oid.split(".")], "Value": value if isinstance(value, str) else _b64(value)}
            )
            if not isinstance(value, str):
                continue
            if oid == "2.5.4.3":
                out["CommonName"] = value
            elif oid == "2.5.4.5":
                out["SerialNumber"] = value
            elif oid in _NAME_FIELDS:
                out[_NAME_FIELDS[oid]] = [*(out[_NAME_FIELDS[oid]] or []), value]
    out["Names"] = names or None
    return out


def _int64(value: int) -> int:
    """Go's ``big.Int.Int64``: the low 64 bits, with the sign applied."""
    low = abs(value) & 0xFFFFFFFFFFFFFFFF
    if low >= 1 << 63:
        low -= 1 << 64
    return -low if value < 0 else low


def _ext(extensions: x509.Extensions, oid: x509.ObjectIdentifier) -> Any:
    try:
        return extensions.get_extension_for_oid(oid)
    except x509.ExtensionNotFound:
        return None


def _key_usage(raw: list[dict[str, Any]]) -> int:
    for ext in raw:
        if ext["Id"] == [2, 5, 29, 15]:
            der = base64.b64decode(ext["Value"])
            _, start, end = _tlv(der, 0)
            bits = der[start + 1 : end]
            return sum(1 << i for i in range(9) if i // 8 < len(bits) and bits[i // 8] >> (7 - i % 8) & 1)
    return 0


def _general_names(names: Any, kind: type[x509.GeneralName]) -> list[Any]:
    return [n.value for n in names if isinstance(n, kind)]


def _ip_net(network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> dict[str, Any]:
    return {"IP": str(network.network_address), "Mask": _b64(network.netmask.packed)}


def _certificate(cert: x509.Certificate, der: bytes, key: rsa.RSAPublicKey) -> dict[str, Any]:
    parts = _tbs_parts(der)
    exts = cert.extensions
    out = _certificate_fields(cert, der, key, parts)
    _add_extension_fields(out, exts)
    return out


def _certificate_fields(
    cert: x509.Certificate, der: bytes, key: rsa.RSAPublicKey, parts: dict[str, Any]
) -> dict[str, Any]:
    """Every field of Go's ``x509.Certificate``, set from the certificate body; extension fields at their zero value."""
    return {
        "Raw": _b64(der),
        "RawTBSCertificate": _b64(parts["tbs"]),
        "RawSubjectPublicKeyInfo": _b64(parts["spki"]),
        "RawSubject": _b64(parts["subject"]),
        "RawIssuer": _b64(parts["issuer"]),
        "Signature": _b64(cert.signature),
        "PublicKeyAlgorithm": 1,
        "PublicKey": {"N": str(key.public_numbers().n), "E": key.public_numbers().e},
        "SerialNumber": _int64(parts["serial"]),
        "Issuer": _name(cert.issuer),
        "NotBefore": cert.not_valid_before_utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "NotAfter": cert.not_valid_after_utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "KeyUsage": _key_usage(parts["extensions"]),
        "Extensions": parts["extensions"] or None,
        "ExtraExtensions": None,
        "ExtKeyUsage": None,
        "BasicConstraintsValid": False,
        "IsCA": False,
        "MaxPathLen": 0,
        "MaxPathLenZero": False,
        "AuthorityKeyId": None,
        "OCSPServer": None,
        "IssuingCertificateURL": None,
        "DNSNames": None,
        "EmailAddresses": None,
        "IPAddresses": None,
        "PermittedDNSDomainsCritical": False,
        "PermittedDNSDomains": None,
        "ExcludedDNSDomains": None,
        "PermittedIPRanges": None,
        "ExcludedIPRanges": None,
        "PermittedEmailAddresses": None,
        "ExcludedEmailAddresses": None,
        "PermittedURIDomains": None,
        "ExcludedURIDomains": None,
        "CRLDistributionPoints": None,
        "PolicyIdentifiers": None,
    }


def _add_extension_fields(out: dict[str, Any], exts: x509.Extensions) -> None:
    """Set the fields of ``out`` that come from the certificate's extensions."""
    if (ext := _ext(exts, ExtensionOID.EXTENDED_KEY_USAGE)) is not None:
        usages = [_EXT_KEY_USAGE[o.dotted_string] for o in ext.value if o.dotted_string in _EXT_KEY_USAGE]
        out["ExtKeyUsage"] = usages or None
    if (ext := _ext(exts, ExtensionOID.BASIC_CONSTRAINTS)) is not None:
        out["BasicConstraintsValid"] = True
        out["IsCA"] = ext.value.ca
        out["MaxPathLen"] = -1 if ext.value.path_length is None else ext.value.path_length
        out["MaxPathLenZero"] = out["MaxPathLen"] == 0
    if (ext := _ext(exts, ExtensionOID.AUTHORITY_KEY_IDENTIFIER)) is not None:
        out["AuthorityKeyId"] = _b64(ext.value.key_identifier)
    if (ext := _ext(exts, ExtensionOID.AUTHORITY_INFORMATION_ACCESS)) is not None:
        _add_access_urls(out, ext.value)
    if (ext := _ext(exts, ExtensionOID.SUBJECT_ALTERNATIVE_NAME)) is not None:
        out.update(_alt_names(ext.value))
    if (ext := _ext(exts, ExtensionOID.NAME_CONSTRAINTS)) is not None:
        out["PermittedDNSDomainsCritical"] = ext.critical
        _add_name_constraints(out, ext.value)
    if (ext := _ext(exts, ExtensionOID.CRL_DISTRIBUTION_POINTS)) is not None:
        uris = [u for point in ext.value for u in _general_names(point.full_name or [], x509.UniformResourceIdentifier)]
        out["CRLDistributionPoints"] = uris or None
    if (ext := _ext(exts, ExtensionOID.CERTIFICATE_POLICIES)) is not None:
        policies = [[int(a) for a in p.policy_identifier.dotted_string.split(".")] for p in ext.value]
        out["PolicyIdentifiers"] = policies or None


def _add_access_urls(out: dict[str, Any], accesses: Any) -> None:
    """Authority information access: the OCSP server and issuing certificate URLs."""
    for access in accesses:
        if isinstance(access.access_location, x509.UniformResourceIdentifier):
            field = {"1.3.6.1.5.5.7.48.1": "OCSPServer", "1.3.6.1.5.5.7.48.2": "IssuingCertificateURL"}
            name = field.get(access.access_method.dotted_string)
            if name:
                out[name] = [*(out[name] or []), access.access_location.value]


def _add_name_constraints(out: dict[str, Any], constraints: Any) -> None:
    """Name constraints: the permitted and excluded DNS domains, IP ranges, email addresses and URI domains."""
    for prefix, subtrees in (
        ("Permitted", constraints.permitted_subtrees),
        ("Excluded", constraints.excluded_subtrees),
    ):
        subtrees = subtrees or []
        out[f"{prefix}DNSDomains"] = _general_names(subtrees, x509.DNSName) or None
        out[f"{prefix}IPRanges"] = [_ip_net(n) for n in _general_names(subtrees, x509.IPAddress)] or None
        out[f"{prefix}EmailAddresses"] = _general_names(subtrees, x509.RFC822Name) or None
        out[f"{prefix}URIDomains"] = _general_names(subtrees, x509.UniformResourceIdentifier) or None


def _alt_names(names: Any) -> dict[str, Any]:
    return {
        "DNSNames": _general_names(names, x509.DNSName) or None,
        "EmailAddresses": _general_names(names, x509.RFC822Name) or None,
        "IPAddresses": [str(ip) for ip in _general_names(names, x509.IPAddress)] or None,
    }


def _url(text: str) -> dict[str, Any]:
    """Go's ``url.URL`` struct as ``encoding/json`` prints it."""
    parts = urllib.parse.urlsplit(text)
    return {
        "Scheme": parts.scheme,
        "Opaque": "",
        "User": None,
        "Host": parts.netloc,
        "Path": urllib.parse.unquote(parts.path),
        "RawPath": "",
        "OmitHost": False,
        "ForceQuery": False,
        "RawQuery": parts.query,
        "Fragment": parts.fragment,
        "RawFragment": "",
    }


def _der_value(der: bytes, tag: int, start: int, end: int) -> Any:
    content = der[start:end]
    if tag == 0x01:
        return content != b"\x00"
    if tag == 0x02:
        return int.from_bytes(content, "big", signed=True)
    if tag in (0x0C, 0x13, 0x16, 0x12, 0x14):
        return content.decode("utf-8", errors="replace")
    if tag == 0x04:
        return _b64(content)
    raise ValueError("unsupported attribute value")


def _attributes(der: bytes, csr: x509.CertificateSigningRequest) -> list[dict[str, Any]] | None:
    """Go's best-effort ``parseRawAttributes``: attributes whose values are sequences of (OID, value)."""
    _, req_content, _ = _tlv(der, 0)
    _, info_start, info_end = _tlv(der, req_content)
    fields = _children(der, info_start, info_end)
    out = []
    attributes = fields[3] if len(fields) > 3 and fields[3][0] == 0xA0 else None
    if attributes is None:
        return None
    for _, _, content, stop in _children(der, attributes[2], attributes[3]):
        attr = _children(der, content, stop)
        try:
            value_set = []
            for tag, _, s, e in _children(der, attr[1][2], attr[1][3]):
                if tag != 0x30:
                    raise ValueError("not a sequence")
                entries = []
                for etag, _, es, ee in _children(der, s, e):
                    inner = _children(der, es, ee) if etag == 0x30 else []
                    if len(inner) < 2 or inner[0][0] != 0x06:
                        raise ValueError("not a type and value")
                    oid = _oid(der[inner[0][2] : inner[0][3]])
                    entries.append({"Type": oid, "Value": _der_value(der, inner[1][0], inner[1][2], inner[1][3])})
                value_set.append(entries)
            out.append({"Type": _oid(der[attr[0][2] : attr[0][3]]), "Value": value_set})
        except (ValueError, IndexError):
            continue
    return out or None


def _request(csr: x509.CertificateSigningRequest, der: bytes, key: rsa.RSAPublicKey) -> dict[str, Any]:
    _, req_content, _ = _tlv(der, 0)
    _, info_start, info_end = _tlv(der, req_content)
    fields = _children(der, info_start, info_end)
    subject, spki = fields[1], fields[2]
    digest = csr.signature_hash_algorithm.name if csr.signature_hash_algorithm else ""
    pss = csr.signature_algorithm_oid.dotted_string == "1.2.840.113549.1.1.10"
    extensions = None
    try:
        extensions = [
            {
                "Id": [int(a) for a in e.oid.dotted_string.split(".")],
                "Critical": e.critical,
                "Value": _b64(e.value.public_bytes()),
            }
            for e in csr.extensions
        ] or None
        names = _alt_names(csr.extensions.get_extension_for_oid(ExtensionOID.SUBJECT_ALTERNATIVE_NAME).value)
        uris = _general_names(
            csr.extensions.get_extension_for_oid(ExtensionOID.SUBJECT_ALTERNATIVE_NAME).value,
            x509.UniformResourceIdentifier,
        )
    except x509.ExtensionNotFound:
        names, uris = {"DNSNames": None, "EmailAddresses": None, "IPAddresses": None}, []
    return {
        "Raw": _b64(der),
        "RawTBSCertificateRequest": _b64(der[req_content:info_end]),
        "RawSubjectPublicKeyInfo": _b64(der[spki[1] : spki[3]]),
        "RawSubject": _b64(der[subject[1] : subject[3]]),
        "Version": int.from_bytes(der[fields[0][2] : fields[0][3]], "big"),
        "Signature": _b64(csr.signature),
        "SignatureAlgorithm": (_RSA_PSS_SIGNATURES if pss else _RSA_SIGNATURES).get(digest, 0),
        "PublicKeyAlgorithm": 1,
        "PublicKey": {"N": str(key.public_numbers().n), "E": key.public_numbers().e},
        "Subject": _name(csr.subject),
        "Attributes": _attributes(der, csr),
        "Extensions": extensions,
        "ExtraExtensions": None,
        **names,
        "URIs": [_url(u) for u in uris] or None,
    }


def _as_go_json(value: dict[str, Any]) -> dict[str, Any]:
    """Kyverno encodes its structure to JSON and decodes it into ``map[string]any``: numbers become doubles."""
    decoded: dict[str, Any] = json.loads(json.dumps(value), parse_int=float)
    return decoded


@fn("x509.decode", ("string",), "dyn")
def decode(text: Any) -> Any:
    with warnings.catch_warnings():  # Go accepts serial number 0 (Kyverno's own test certificate has it)
        warnings.simplefilter("ignore", CryptographyDeprecationWarning)
        return _decode(text)


def _decode(text: Any) -> Any:
    if not isinstance(text, str):
        raise no_such_overload("x509.decode", text)
    match = _PEM.search(text)
    if match is None:
        raise CelEvaluationError("failed to decode PEM block")
    block_type = match.group(1)
    body = "".join(line for line in match.group(2).splitlines() if ":" not in line)
    try:
        der = base64.b64decode(body, validate=False)
    except ValueError:
        raise CelEvaluationError("failed to decode PEM block") from None
    try:
        if block_type == "CERTIFICATE":
            cert = x509.load_der_x509_certificate(der)
            key = cert.public_key()
            if not isinstance(key, rsa.RSAPublicKey):
                raise CelEvaluationError("certificate should use rsa algorithm")
            return _as_go_json(_certificate(cert, der, key))
        if block_type == "CERTIFICATE REQUEST":
            csr = x509.load_der_x509_csr(der)
            key = csr.public_key()
            if not isinstance(key, rsa.RSAPublicKey):
                raise CelEvaluationError("certificate should use rsa algorithm")
            return _as_go_json(_request(csr, der, key))
    except CelEvaluationError:
        raise
    except (ValueError, IndexError) as ex:
        raise CelEvaluationError(f"x509: malformed {block_type.lower()}: {ex}") from None
    raise CelEvaluationError("PEM block neither contains a CERTIFICATE or CERTIFICATE REQUEST")
