"""Kyverno's HTTP library (kyverno/sdk ``extensions/cel/libs/http``), behind an allow-list.

PascalCase names have camelCase aliases (``http.Get`` / ``http.get``).

http.Get(<string> url[, <map(string, string)> headers]) -> <dyn>
http.Post(<string> url, <dyn> body[, <map(string, string)> headers]) -> <dyn>

    Sends the request and decodes the response as Kyverno does: a JSON object is returned with a
    ``statusCode`` entry added; any other body is wrapped as ``{"body": <JSON value or null>,
    "statusCode": <int>}`` (a body that is not JSON gives ``null``). JSON numbers are doubles. Error
    statuses are returned, not raised; redirects are not followed. ``Post`` sends ``body`` as JSON.

        http.Get("https://api.example.com/teams/a").metadata.team

http.Client(<string> caBundle) -> <http.Context>
<http.Context>.Get(...) / .Post(...) / .Client(...)

    A client that trusts only the PEM certificates of ``caBundle`` (``""``: the system roots).

        http.Client(variables.ca).Get("https://internal.example.com/data")

Security (celmut's; Kyverno has a CIDR block-list): a request is denied unless its URL matches
``Services.http_policy.allow`` (an empty list denies everything) and every address its host resolves
to is public, unless ``allow_private_networks`` is set or the address is in one of the
``allow_networks`` CIDRs (e.g. the cluster's Service network, for an in-cluster service). Only
``http`` and ``https`` URLs without credentials or dot segments are accepted. An allow entry without
``*``/``?`` is a URL prefix with Kyverno's rules: same scheme, host and effective port, and a path
equal to the entry's or below it at a ``/`` boundary. An entry with wildcards is matched
component-wise: in the host, ``*`` stands for part of one DNS label (``https://*.example.com/``); in
the path, for any text. The default transport connects to the vetted address itself (no second DNS
lookup, so no DNS rebinding), sends the original host name in ``Host`` and TLS SNI, and enforces the
policy's timeout and ``max_response_bytes``. ``Services.http_transport`` replaces it (the checks
still run first).
"""

from __future__ import annotations

import fnmatch
import http.client
import inspect
import ipaddress
import re
import socket
import ssl
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError, describe
from celmut.cel.libs.kyverno.json import encoding_cost, go_decode_first, go_json
from celmut.cel.lookups import HttpPolicy, LookupFailed, before_blocking

LIBRARY: Library = Library("kyverno.http")
fn, method = LIBRARY.function, LIBRARY.method

_HEADERS = "map(string, string)"
_DEFAULT_PORTS = {"http": 80, "https": 443}
# Cloud metadata host names that need not resolve to a link-local address (Kyverno blocks these too).
_METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.internal"})
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SHARED = ipaddress.ip_network("100.64.0.0/10")


class HttpDenied(CelEvaluationError):
    """celmut refused to send an HTTP request (allow-list, scheme, or a non-public address)."""


@LIBRARY.opaque("http.Context")
class HttpClient:
    """Kyverno's ``http`` value: an HTTP client, optionally trusting a private CA bundle."""

    __slots__ = ("ca_bundle",)

    def __init__(self, ca_bundle: str = "") -> None:
        self.ca_bundle = ca_bundle

    def __repr__(self) -> str:
        return "http.Context(custom CA)" if self.ca_bundle else "http.Context"


DEFAULT_CLIENT = HttpClient()


# --- URL and address checks ---------------------------------------------------------------------------


def _normalize_host(host: str) -> str:
    return host.lower().rstrip(".")


def _effective_port(parts: urllib.parse.SplitResult) -> int:
    port = parts.port  # raises ValueError for a malformed port
    return port if port is not None else _DEFAULT_PORTS.get(parts.scheme, 0)


def parse_url(function: str, url: str) -> urllib.parse.SplitResult:
    """Split and sanity-check a request URL; raises :class:`HttpDenied`."""
    shown = describe(url)
    if any(ord(c) <= 0x20 or ord(c) == 0x7F or c == "\\" for c in url):
        raise HttpDenied(f"{function}: request to {shown} denied: the URL contains spaces, control characters or '\\'")
    try:
        parts = urllib.parse.urlsplit(url)
        _effective_port(parts)
    except ValueError as ex:
        raise HttpDenied(f"{function}: request to {shown} denied: invalid URL ({ex})") from None
    if parts.scheme.lower() not in _DEFAULT_PORTS:
        raise HttpDenied(f"{function}: request to {shown} denied: only http and https URLs are allowed")
    if not parts.hostname:
        raise HttpDenied(f"{function}: request to {shown} denied: the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise HttpDenied(f"{function}: request to {shown} denied: credentials in URLs are not allowed")
    segments = urllib.parse.unquote(parts.path).split("/")
    if any(s in (".", "..") for s in segments):
        raise HttpDenied(f"{function}: request to {shown} denied: the path has '.' or '..' segments")
    return parts


def _host_glob(pattern: str) -> re.Pattern[str]:
    out = []
    for ch in pattern:
        out.append("[^./:]*" if ch == "*" else "[^./:]" if ch == "?" else re.escape(ch))
    return re.compile("".join(out) + r"\Z")


def allowed(url: urllib.parse.SplitResult, allow: Sequence[str]) -> bool:
    """Whether a parsed URL matches one of the allow-list entries (see the module documentation)."""
    host, port, path = _normalize_host(url.hostname or ""), _effective_port(url), url.path
    for entry in allow:
        entry = entry.strip()
        try:
            pattern = urllib.parse.urlsplit(entry)
            pattern_port = _effective_port(pattern)
        except ValueError:
            continue
        if not pattern.scheme or not pattern.hostname or pattern.scheme.lower() != url.scheme.lower():
            continue
        if pattern_port != port:
            continue
        wildcard = any(c in entry for c in "*?")
        pattern_host = _normalize_host(pattern.hostname)
        if wildcard:
            if not _host_glob(pattern_host).match(host):
                continue
            if fnmatch.fnmatchcase(path or "/", pattern.path or "/*") or pattern.path in ("", "/"):
                return True
            continue
        if pattern_host != host:
            continue
        entry_path = pattern.path
        if entry_path in ("", "/") or path == entry_path:
            return True
        if path.startswith(entry_path) and (entry_path.endswith("/") or path[len(entry_path)] == "/"):
            return True
    return False


def non_public_reason(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address is not on the public internet (None when it is)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded: list[ipaddress.IPv4Address] = []
        if address.ipv4_mapped is not None:
            embedded.append(address.ipv4_mapped)
        if address.sixtofour is not None:
            embedded.append(address.sixtofour)
        if address.teredo is not None:
            embedded.extend(address.teredo)
        if address in _NAT64:
            embedded.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        for inner in embedded:
            reason = non_public_reason(inner)
            if reason:
                return f"{reason} (embedded in an IPv6 address)"
        if address.is_site_local:
            return "site-local"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local (cloud metadata)"
    if address.is_multicast:
        return "multicast"
    if address.is_unspecified:
        return "unspecified"
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return "shared address space (CGNAT)"
    if address.is_private:
        return "private"
    if address.is_reserved or not address.is_global:
        return "reserved"
    return None


def resolve(function: str, parts: urllib.parse.SplitResult) -> list[str]:
    """The addresses of the URL's host (an IP literal is its own address)."""
    host = parts.hostname or ""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, _effective_port(parts), type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as ex:
        raise LookupFailed(f"{function}: request failed: cannot resolve host {describe(host)}: {ex}") from None
    addresses: list[str] = []
    for info in infos:
        address = str(info[4][0]).split("%", 1)[0]
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise LookupFailed(f"{function}: request failed: no addresses for host {describe(host)}")
    return addresses


def vet(function: str, url: str, policy: HttpPolicy) -> tuple[urllib.parse.SplitResult, list[str]]:
    """Apply the allow-list and the address checks; the vetted addresses to connect to."""
    parts = parse_url(function, url)
    shown = describe(url)
    if not policy.allow:
        raise HttpDenied(f"{function}: request to {shown} denied: no URL is allowed (the HTTP allow-list is empty)")
    if not allowed(parts, policy.allow):
        raise HttpDenied(f"{function}: request to {shown} denied: the URL is not on the HTTP allow-list")
    host = _normalize_host(parts.hostname or "")
    if not policy.allow_private_networks and host in _METADATA_HOSTS:
        raise HttpDenied(f"{function}: request to {shown} denied: {host} is a cloud metadata endpoint")
    addresses = resolve(function, parts)
    if not policy.allow_private_networks:
        networks = [ipaddress.ip_network(n, strict=False) for n in policy.allow_networks]
        for address in addresses:
            ip = ipaddress.ip_address(address)
            reason = non_public_reason(ip)
            if reason and not any(ip.version == n.version and ip in n for n in networks):
                raise HttpDenied(
                    f"{function}: request to {shown} denied: {host} resolves to {address}, a {reason} address "
                    "(private networks are not allowed)"
                )
    return parts, addresses


# --- the default transport (standard library, pinned to the vetted address) ---------------------------


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float, context: ssl.SSLContext) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._address = address
        self._tls = context

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


def tls_context(ca_bundle: str) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=ca_bundle) if ca_bundle else ssl.create_default_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def default_request(
    method_name: str,
    parts: urllib.parse.SplitResult,
    addresses: Sequence[str],
    headers: Mapping[str, str],
    body: bytes | None,
    policy: HttpPolicy,
    ca_bundle: str = "",
) -> tuple[int, bytes]:
    """One request over ``http.client`` to the first vetted address that accepts a connection."""
    host, port = parts.hostname or "", _effective_port(parts)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    deadline = time.monotonic() + policy.timeout_seconds
    last_error: Exception | None = None
    for address in addresses:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        if parts.scheme.lower() == "https":
            conn: http.client.HTTPConnection = _PinnedHTTPSConnection(
                host, port, address, remaining, tls_context(ca_bundle)
            )
        else:
            conn = _PinnedHTTPConnection(host, port, address, remaining)
        try:
            conn.connect()
        except OSError as ex:
            last_error = ex
            conn.close()
            continue
        try:
            conn.putrequest(method_name, target, skip_accept_encoding=True)
            for name, value in headers.items():
                conn.putheader(name, value)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            response = conn.getresponse()
            chunks: list[bytes] = []
            size = 0
            while True:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"timed out after {policy.timeout_seconds}s")
                chunk = response.read(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > policy.max_response_bytes:
                    raise _too_large(policy)
                chunks.append(chunk)
            return response.status, b"".join(chunks)
        finally:
            conn.close()
    raise last_error or TimeoutError(f"timed out after {policy.timeout_seconds}s")


def _too_large(policy: HttpPolicy) -> CelEvaluationError:
    return CelEvaluationError(f"response body exceeds the limit of {policy.max_response_bytes} bytes")


# --- the CEL functions --------------------------------------------------------------------------------


def _check_headers(function: str, headers: Any) -> dict[str, str]:
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(x, str) for k, x in headers.items()):
        raise CelEvaluationError(f"{function}: headers must be a map(string, string)")
    for name, value in headers.items():
        if not name or any(c in name for c in ":\r\n\0 ") or any(c in value for c in "\r\n\0"):
            raise CelEvaluationError(f"{function}: invalid header {describe(name)}")
    return {k: x for k, x in headers.items() if k.lower() not in ("host", "content-length", "transfer-encoding")}


def decode_response(status: int, data: bytes) -> Any:
    body = go_decode_first(data)
    if isinstance(body, dict):
        body["statusCode"] = status
        return body
    return {"body": body, "statusCode": status}


def send(ctx: Any, function: str, client: HttpClient, verb: str, url: Any, body: Any, headers: Any) -> Any:
    if not isinstance(url, str):
        raise CelEvaluationError(f"{function}: the URL must be a string, not {type(url).__name__}")
    sent_headers = _check_headers(function, headers if headers is not None else {})
    payload = None
    if verb == "POST":
        ctx.services.refuse_side_effects(function)
        payload = (go_json(body) + "\n").encode("utf-8")
        if not any(k.lower() == "content-type" for k in sent_headers):
            sent_headers["Content-Type"] = "application/json"
    policy: HttpPolicy = ctx.services.http_policy
    parts, addresses = vet(function, url, policy)
    transport = ctx.services.http_transport
    before_blocking(function)  # the webhook's event loop hands the request to a worker thread first
    try:
        if transport is None:
            status, data = default_request(verb, parts, addresses, sent_headers, payload, policy, client.ca_bundle)
        elif client.ca_bundle:
            if "ca_bundle" not in inspect.signature(transport.request).parameters:
                raise LookupFailed(f"{function}: the configured HTTP transport does not support custom CA bundles")
            status, data = transport.request(
                verb, url, sent_headers, payload, policy.timeout_seconds, ca_bundle=client.ca_bundle
            )
        else:
            status, data = transport.request(verb, url, sent_headers, payload, policy.timeout_seconds)
    except CelEvaluationError as ex:
        if isinstance(ex, LookupFailed):
            raise
        raise LookupFailed(f"{function}: request failed: {ex.message}") from ex
    except Exception as ex:  # network failures, TLS errors, transport defects
        raise LookupFailed(f"{function}: request failed: {type(ex).__name__}: {ex}") from ex
    if len(data) > policy.max_response_bytes:
        raise LookupFailed(f"{function}: request failed: {_too_large(policy).message}")
    return decode_response(int(status), data)


def make_client(function: str, ca_bundle: Any) -> HttpClient:
    if not isinstance(ca_bundle, str):
        raise CelEvaluationError(f"{function}: the CA bundle must be a string")
    if not ca_bundle:
        return DEFAULT_CLIENT
    try:
        tls_context(ca_bundle)
    except (ssl.SSLError, ValueError):
        raise CelEvaluationError(f"{function}: request failed: failed to parse PEM CA bundle") from None
    return HttpClient(ca_bundle)


def _body_cost(url: Any, body: Any, *_: Any) -> int:
    return encoding_cost(body)  # the JSON body is printed before it is sent


def _client_body_cost(client: Any, url: Any, body: Any, *_: Any) -> int:
    return encoding_cost(body)


def _declare(get: str, post: str, client: str) -> None:
    @fn(f"http.{get}", ("string",), "dyn", context=True, pure=False)
    @fn(f"http.{get}", ("string", _HEADERS), "dyn", context=True, pure=False)
    def http_get(ctx: Any, url: Any, headers: Any = None) -> Any:
        return send(ctx, f"http.{get}", DEFAULT_CLIENT, "GET", url, None, headers)

    @fn(f"http.{post}", ("string", "dyn"), "dyn", context=True, pure=False, cost=_body_cost)
    @fn(f"http.{post}", ("string", "dyn", _HEADERS), "dyn", context=True, pure=False, cost=_body_cost)
    def http_post(ctx: Any, url: Any, body: Any, headers: Any = None) -> Any:
        return send(ctx, f"http.{post}", DEFAULT_CLIENT, "POST", url, body, headers)

    @fn(f"http.{client}", ("string",), "http.Context", pure=False)
    def http_client(ca_bundle: Any) -> HttpClient:
        return make_client(f"http.{client}", ca_bundle)

    @method(get, "http.Context", ("string",), "dyn", context=True, pure=False)
    @method(get, "http.Context", ("string", _HEADERS), "dyn", context=True, pure=False)
    def client_get(ctx: Any, receiver: HttpClient, url: Any, headers: Any = None) -> Any:
        return send(ctx, f"http.{get}", receiver, "GET", url, None, headers)

    @method(post, "http.Context", ("string", "dyn"), "dyn", context=True, pure=False, cost=_client_body_cost)
    @method(post, "http.Context", ("string", "dyn", _HEADERS), "dyn", context=True, pure=False, cost=_client_body_cost)
    def client_post(ctx: Any, receiver: HttpClient, url: Any, body: Any, headers: Any = None) -> Any:
        return send(ctx, f"http.{post}", receiver, "POST", url, body, headers)

    @method(client, "http.Context", ("string",), "http.Context", pure=False)
    def client_client(receiver: HttpClient, ca_bundle: Any) -> HttpClient:
        return make_client(f"http.{client}", ca_bundle)


_declare("Get", "Post", "Client")
_declare("get", "post", "client")
