"""Kyverno's HTTP library: response shapes from kyverno/sdk ``extensions/cel/libs/http/impl_test.go``
(served by a fake transport), celmut's allow-list and SSRF checks (with a fake DNS table), and the
default standard-library transport end to end against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from celmut.cel import HttpPolicy, Services
from tests.cel.helpers import Err, cases, check_case
from tests.cel.libs.kyverno.test_x509 import KYVERNO_TEST_CERT

FAKE_DNS = {
    "api.example.com": ["93.184.216.34"],
    "other.example.com": ["93.184.216.35"],
    "v6.example.com": ["2606:2800:220:1:248:1893:25c8:1946"],
    "internal.example.com": ["10.0.0.5"],
    "rebind.example.com": ["93.184.216.34", "127.0.0.1"],
    "mapped.example.com": ["::ffff:169.254.169.254"],
    "metadata.google.internal": ["169.254.169.254"],
}
_REAL_GETADDRINFO = socket.getaddrinfo


def _fake_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
    addresses = FAKE_DNS.get(str(host).lower().rstrip("."))
    if addresses is None:
        if str(host).endswith(".example.com"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return _REAL_GETADDRINFO(host, port, *args, **kwargs)  # numeric hosts and localhost
    return [
        (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port or 0)) for a in addresses
    ]


@pytest.fixture(autouse=True)
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", _fake_getaddrinfo)


class FakeTransport:
    """The outside world at the provider seam: records requests and answers with a fixed response."""

    def __init__(self, body: bytes = b'{"body": "ok"}', status: int = 200, error: Exception | None = None) -> None:
        self.body, self.status, self.error = body, status, error
        self.calls: list[dict[str, Any]] = []

    def request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout: float
    ) -> tuple[int, bytes]:
        self.calls.append({"method": method, "url": url, "headers": dict(headers), "body": body, "timeout": timeout})
        if self.error is not None:
            raise self.error
        return self.status, self.body


class CaTransport(FakeTransport):
    def request(  # type: ignore[override]
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout: float, ca_bundle: str = ""
    ) -> tuple[int, bytes]:
        self.calls.append({"ca_bundle": ca_bundle})
        return self.status, self.body


ALLOW = ("https://api.example.com", "https://v6.example.com/v1", "http://localhost:8080")


def services(transport: Any = None, allow: tuple[str, ...] = ALLOW, **policy: Any) -> Services:
    return Services(http_policy=HttpPolicy(allow=allow, **policy), http_transport=transport or FakeTransport())


RESPONSES = [
    # Test_impl_get_request / _with_404_status_code / _with_array_response / _with_non_json_body
    (b'{"body": "ok"}', 200, {"body": "ok", "statusCode": 200}),
    (b'{"error": "not found"}', 404, {"error": "not found", "statusCode": 404}),
    (b'{"error": "internal server error"}', 500, {"error": "internal server error", "statusCode": 500}),
    (b'[{"item": 1}, {"item": 2}]', 200, {"body": [{"item": 1.0}, {"item": 2.0}], "statusCode": 200}),
    (b"this is not json", 200, {"body": None, "statusCode": 200}),
    (b"", 204, {"body": None, "statusCode": 204}),
    (b'"text"', 200, {"body": "text", "statusCode": 200}),
    (b' {"a": 1} trailing', 200, {"a": 1.0, "statusCode": 200}),  # Go's Decoder reads the first value
]


@pytest.mark.parametrize(("body", "status", "expected"), RESPONSES)
def test_response_decoding(body: bytes, status: int, expected: Any) -> None:
    check_case('http.Get("https://api.example.com/v1/teams")', expected, services=services(FakeTransport(body, status)))


def test_numbers_are_doubles_and_status_an_int() -> None:
    svc = services(FakeTransport(b'{"count": 3}'))
    check_case(
        '[type(http.get("https://api.example.com/").count), type(http.get("https://api.example.com/").statusCode)]',
        ["double", "int"],
        services=svc,
    )


def test_get_sends_headers() -> None:
    transport = FakeTransport()
    expr = 'http.Get("https://api.example.com/v1", {"Authorization": "Bearer token", "Host": "evil.com"}).body'
    check_case(expr, "ok", services=services(transport))
    (call,) = transport.calls
    assert call["method"] == "GET" and call["url"] == "https://api.example.com/v1" and call["body"] is None
    assert call["headers"] == {"Authorization": "Bearer token"}  # Host cannot be overridden
    assert call["timeout"] == 5.0


def test_post_sends_json() -> None:
    transport = FakeTransport(b'{"id": "123"}', 201)
    expr = 'http.post("https://api.example.com/items", {"key": dyn("value"), "foo": dyn(2)})'
    check_case(expr, {"id": "123", "statusCode": 201}, services=services(transport))
    (call,) = transport.calls
    assert call["method"] == "POST"
    assert json.loads(call["body"]) == {"foo": 2, "key": "value"}
    assert call["headers"]["Content-Type"] == "application/json"


def test_post_with_headers_keeps_content_type() -> None:
    transport = FakeTransport()
    expr = 'http.Post("https://api.example.com/x", ["a"], {"Content-Type": "text/plain"}).body'
    check_case(expr, "ok", services=services(transport))
    assert transport.calls[0]["headers"] == {"Content-Type": "text/plain"}
    assert transport.calls[0]["body"] == b'["a"]\n'


ALLOWED = [
    "https://api.example.com",
    "https://api.example.com/",
    "https://API.example.com./v1/resource?x=1",
    "https://api.example.com:443/v1/resource",  # the default port matches an entry without one
    "https://v6.example.com/v1",
    "https://v6.example.com/v1/teams",
]


@pytest.mark.parametrize("url", ALLOWED)
def test_allowed_urls(url: str) -> None:
    transport = FakeTransport()
    check_case(f'http.Get("{url}").statusCode', 200, services=services(transport))
    assert transport.calls[0]["url"] == url


DENIED = [
    ("https://other.example.com/path", "not on the HTTP allow-list"),
    ("https://api.example.com.evil.com/steal", "not on the HTTP allow-list"),
    ("http://api.example.com/", "not on the HTTP allow-list"),  # scheme must match
    ("https://api.example.com:8443/", "not on the HTTP allow-list"),  # port must match
    ("https://v6.example.com/v10/x", "not on the HTTP allow-list"),  # /v1 matches at a '/' boundary only
    ("https://v6.example.com/", "not on the HTTP allow-list"),
    ("ftp://api.example.com/", "only http and https URLs are allowed"),
    ("file:///etc/passwd", "only http and https URLs are allowed"),
    ("api.example.com/x", "only http and https URLs are allowed"),
    ("https://user:secret@api.example.com/", "credentials in URLs are not allowed"),
    ("https://api.example.com/v1/../admin", "'..' segments"),
    ("https://api.example.com/v1/%2e%2e/admin", "'..' segments"),
    ("https://api.example.com/a b", "spaces, control characters"),
    ("https://api.example.com:99999/", "invalid URL"),
    ("https:///path", "no host"),
]


@pytest.mark.parametrize(("url", "fragment"), DENIED)
def test_denied_urls(url: str, fragment: str) -> None:
    transport = FakeTransport()
    check_case(f'http.Get("{url}")', Err("evaluation", fragment), services=services(transport))
    assert transport.calls == []


PRIVATE = [
    ("http://127.0.0.1/secret", "loopback"),
    ("http://127.1.2.3/", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://169.254.169.254/latest/meta-data/iam/security-credentials/", "link-local"),
    ("http://[fe80::1]/", "link-local"),
    ("http://10.0.0.1/internal", "private"),
    ("http://172.16.5.4/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://[fd00::1]/", "private"),
    ("http://100.64.0.1/", "shared address space"),
    ("http://224.0.0.1/", "multicast"),
    ("http://[ff02::1]/", "multicast"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://[::ffff:127.0.0.1]/", "loopback (embedded in an IPv6 address)"),
    ("http://[64:ff9b::a00:1]/", "private (embedded in an IPv6 address)"),
    ("http://2130706433/", "127.0.0.1, a loopback"),  # decimal IPv4, resolved by the system
    ("http://internal.example.com/", "internal.example.com resolves to 10.0.0.5, a private address"),
    ("http://rebind.example.com/", "resolves to 127.0.0.1, a loopback address"),  # any bad address denies
    ("http://mapped.example.com/", "link-local"),
    ("http://metadata.google.internal/computeMetadata/v1/", "cloud metadata endpoint"),
    ("http://METADATA.GOOGLE.INTERNAL./computeMetadata/v1/", "cloud metadata endpoint"),
    ("http://localhost:8080/", "loopback"),
]


@pytest.mark.parametrize(("url", "fragment"), PRIVATE)
def test_private_networks_are_denied(url: str, fragment: str) -> None:
    transport = FakeTransport()
    allow = (url.split("/", 3)[0] + "//" + url.split("/", 3)[2] + "/",)
    check_case(f'http.Get("{url}")', Err("evaluation", fragment), services=services(transport, allow=allow))
    assert transport.calls == []
    # the same request goes through when the policy allows private networks
    check_case(
        f'http.Get("{url}").statusCode', 200, services=services(transport, allow=allow, allow_private_networks=True)
    )
    assert len(transport.calls) == 1


def test_empty_allow_list_denies_everything() -> None:
    transport = FakeTransport()
    svc = Services(http_transport=transport)
    check_case('http.Get("https://api.example.com/")', Err("evaluation", "the HTTP allow-list is empty"), services=svc)
    check_case('http.Post("https://api.example.com/", {})', Err("evaluation", "denied"), services=svc)
    assert transport.calls == []


def test_wildcard_allow_entries() -> None:
    allow = ("https://*.example.com/api/*",)
    check_case('http.Get("https://api.example.com/api/v1").statusCode', 200, services=services(allow=allow))
    for url in ("https://api.example.com/other", "https://a.b.example.com/api/x", "https://example.com.evil.io/api/x"):
        check_case(
            f'http.Get("{url}")', Err("evaluation", "not on the HTTP allow-list"), services=services(allow=allow)
        )


def test_unresolvable_host() -> None:
    check_case(
        'http.Get("https://nowhere.example.com/")',
        Err("evaluation", "cannot resolve host"),
        services=services(allow=("https://nowhere.example.com",)),
    )


def test_response_size_and_transport_errors() -> None:
    big = services(FakeTransport(b"x" * 2000), max_response_bytes=1000)
    check_case(
        'http.Get("https://api.example.com/")', Err("evaluation", "exceeds the limit of 1000 bytes"), services=big
    )
    down = services(FakeTransport(error=ConnectionRefusedError("connection refused")))
    check_case(
        'http.Get("https://api.example.com/")',
        Err("evaluation", "http.Get: request failed: ConnectionRefusedError"),
        services=down,
    )


def test_header_values_are_checked() -> None:
    check_case(
        'http.Get("https://api.example.com/", {"X-A": "1\\r\\nX-B: 2"})',
        Err("evaluation", "invalid header"),
        services=services(),
    )
    check_case('http.Get("https://api.example.com/", {"a": 1})', Err("compile", "no matching overload"))


CLIENT = [
    ('http.Client("").Get("https://api.example.com/").body', "ok"),
    ('http.client("").get("https://api.example.com/", {"A": "b"}).body', "ok"),
    ('http.Client("").Post("https://api.example.com/", {"a": 1}).body', "ok"),
    ('http.Client("").client("").post("https://api.example.com/", 1, {}).statusCode', 200),
    ('http.Client("not a certificate")', Err("evaluation", "failed to parse PEM CA bundle")),
    ("http.Client(1)", Err("compile", "no matching overload")),
]


@cases(CLIENT)
def test_client(expression: str, expected: Any) -> None:
    check_case(expression, expected, services=services())


def test_client_with_ca_bundle_reaches_the_transport() -> None:
    transport = CaTransport()
    expr = 'http.Client(variables.ca).Get("https://api.example.com/").body'
    check_case(expr, "ok", services=services(transport), variables={"ca": KYVERNO_TEST_CERT})
    assert transport.calls == [{"ca_bundle": KYVERNO_TEST_CERT}]
    # a transport that cannot take a CA bundle refuses rather than ignoring it
    check_case(
        expr,
        Err("evaluation", "does not support custom CA bundles"),
        services=services(),
        variables={"ca": KYVERNO_TEST_CERT},
    )


def test_client_denials_still_apply() -> None:
    expr = 'http.Client(variables.ca).Get("http://127.0.0.1/secret")'
    check_case(
        expr,
        Err("evaluation", "loopback"),
        services=services(CaTransport(), allow=("http://127.0.0.1",)),
        variables={"ca": KYVERNO_TEST_CERT},
    )


KUBERNETES_PROFILE = [
    ('http.Get("https://api.example.com/")', Err("compile", "undeclared reference to 'http.Get'")),
    ('http.post("https://api.example.com/", {})', Err("compile", "only in the Kyverno")),
    ('http.Client("")', Err("compile", "undeclared reference")),
]


@cases(KUBERNETES_PROFILE)
def test_kubernetes_profile_has_no_http(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes")


# --- the default transport against a real server ------------------------------------------------------


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/slow":
            time.sleep(1.5)
        if self.path == "/big":
            self._reply(200, b"[" + b"1," * 5000 + b"1]")
        elif self.path == "/redirect":
            self._reply(302, b"", {"Location": "http://169.254.169.254/"})
        elif self.path.startswith("/missing"):
            self._reply(404, b'{"error": "not found"}')
        else:
            info = {"path": self.path, "host": self.headers["Host"], "auth": self.headers.get("Authorization")}
            self._reply(200, json.dumps(info).encode())

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        info = {"received": json.loads(body), "contentType": self.headers["Content-Type"]}
        self._reply(200, json.dumps(info).encode())


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:  # clients that time out hang up
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    httpd = QuietServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def local(port: int, **policy: Any) -> Services:
    allow = (f"http://127.0.0.1:{port}/", f"http://localhost:{port}/")
    return Services(http_policy=HttpPolicy(allow=allow, allow_private_networks=True, **policy))


def test_default_transport_get(server: int) -> None:
    expected = {"path": "/teams?id=1", "host": f"127.0.0.1:{server}", "auth": "Bearer t", "statusCode": 200}
    check_case(
        f'http.Get("http://127.0.0.1:{server}/teams?id=1", {{"Authorization": "Bearer t"}})',
        expected,
        services=local(server),
    )


def test_default_transport_by_host_name_sends_the_name(server: int) -> None:
    check_case(f'http.get("http://localhost:{server}/x").host', f"localhost:{server}", services=local(server))


def test_default_transport_post(server: int) -> None:
    expected = {"received": {"a": [1.0, "x"]}, "contentType": "application/json", "statusCode": 200}
    check_case(
        f'http.Post("http://127.0.0.1:{server}/items", {{"a": [dyn(1), "x"]}})', expected, services=local(server)
    )


def test_default_transport_statuses_and_redirects(server: int) -> None:
    check_case(
        f'http.Get("http://127.0.0.1:{server}/missing")',
        {"error": "not found", "statusCode": 404},
        services=local(server),
    )
    # redirects are returned, not followed (the target could be anywhere)
    check_case(
        f'http.Get("http://127.0.0.1:{server}/redirect")', {"body": None, "statusCode": 302}, services=local(server)
    )


def test_default_transport_limits(server: int) -> None:
    too_big = local(server, max_response_bytes=1000)
    check_case(
        f'http.Get("http://127.0.0.1:{server}/big")',
        Err("evaluation", "exceeds the limit of 1000 bytes"),
        services=too_big,
    )
    slow = local(server, timeout_seconds=0.3)
    check_case(f'http.Get("http://127.0.0.1:{server}/slow")', Err("evaluation", "request failed"), services=slow)


def test_default_transport_refuses_private_networks_by_default(server: int) -> None:
    svc = Services(http_policy=HttpPolicy(allow=(f"http://127.0.0.1:{server}/",)))
    check_case(f'http.Get("http://127.0.0.1:{server}/")', Err("evaluation", "loopback"), services=svc)


def test_default_transport_connection_refused() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    check_case(
        f'http.Get("http://127.0.0.1:{port}/")', Err("evaluation", "http.Get: request failed"), services=local(port)
    )
