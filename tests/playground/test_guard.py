"""What a hostile page in the same browser cannot make the playground do (docs/security.md): answer a
rebound name (DNS rebinding), accept a cross-site or non-JSON POST (CSRF), take a body past 3 MiB;
and the page's own headers (CSP, no sniffing, not framed). Against a real ``celmut playground``."""

from __future__ import annotations

import pytest

from celmut.playground.guard import Origins
from tests.playground.support import Playground

ORIGINS = Origins.of("127.0.0.1", 8080, tls=False)


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:8080", True),
        ("localhost:8080", True),
        ("[::1]:8080", True),
        ("LOCALHOST:8080", True),
        ("attacker.example:8080", False),  # a rebound name: same address, not the playground's name
        ("127.0.0.1:8081", False),  # another port on this machine
        ("127.0.0.1", False),  # no port: port 80, not the playground's
        ("127.0.0.1:80x", False),
        ("", False),
    ],
)
def test_the_host_header_must_name_the_playground_and_its_port(host: str, allowed: bool) -> None:
    assert ORIGINS.host_allowed(host) is allowed


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://127.0.0.1:8080", True),
        ("http://localhost:8080", True),
        ("https://127.0.0.1:8080", False),  # another scheme is another origin
        ("http://attacker.example:8080", False),
        ("null", False),  # a sandboxed frame or a file:// page
    ],
)
def test_an_origin_must_be_the_playground_s_own(origin: str, allowed: bool) -> None:
    assert ORIGINS.origin_allowed(origin) is allowed


def test_a_non_loopback_bind_answers_to_its_address_and_the_names_given() -> None:
    origins = Origins.of("192.0.2.10", 8443, tls=True, extra=["dev-box.internal"])
    assert origins.host_allowed("192.0.2.10:8443") and origins.host_allowed("dev-box.internal:8443")
    assert origins.origin_allowed("https://dev-box.internal:8443") and not origins.origin_allowed(
        "http://192.0.2.10:8443"
    )
    assert not origins.host_allowed("other.internal:8443")


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"host": "attacker.example"}, 421),
        ({"origin": "http://attacker.example"}, 403),
        ({"sec-fetch-site": "cross-site"}, 403),
        ({"sec-fetch-site": "same-site"}, 403),  # another port of localhost is another site's page
        ({"content-type": "text/plain"}, 415),  # what a cross-site form or a no-cors fetch can send
        ({"content-type": "application/x-www-form-urlencoded"}, 415),
        ({"content-type": "multipart/form-data; boundary=x"}, 415),
    ],
)
def test_cross_site_and_non_json_posts_are_refused_before_anything_runs(
    served: Playground, headers: dict[str, str], status: int
) -> None:
    port = served.url.rsplit(":", 1)[1].rstrip("/")
    if headers.get("host"):
        headers = {**headers, "host": f"{headers['host']}:{port}"}
    with served.client() as client:
        answer = client.post("/api/run", content=b"{}", headers={"content-type": "application/json", **headers})
    assert answer.status_code == status and answer.json()["error"]


def test_a_rebound_name_cannot_even_read_the_page(served: Playground) -> None:
    port = served.url.rsplit(":", 1)[1].rstrip("/")
    with served.client() as client:
        assert client.get("/", headers={"host": f"attacker.example:{port}"}).status_code == 421
        assert client.get("/api/examples", headers={"host": f"attacker.example:{port}"}).status_code == 421


def test_the_same_origin_page_gets_its_answers_and_headers_that_keep_it_its_own(served: Playground) -> None:
    with served.client() as client:
        page = client.get("/")
        ran = client.post(
            "/api/run", json={}, headers={"origin": served.url.rstrip("/"), "sec-fetch-site": "same-origin"}
        )
    assert page.status_code == 200 and "<title>celmut playground</title>" in page.text
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "connect-src 'self'" in csp
    assert page.headers["x-content-type-options"] == "nosniff" and page.headers["referrer-policy"] == "no-referrer"
    assert ran.status_code == 200 and ran.json()["errors"][0]["pane"] == "policies"  # ran: nothing to run


def test_a_body_over_3_mib_is_refused_by_its_length_and_by_its_count(served: Playground) -> None:
    big = b'{"policies": "' + b"x" * (3 * 1024 * 1024) + b'"}'
    with served.client() as client:
        declared = client.post("/api/run", content=big, headers={"content-type": "application/json"})

        def chunks():  # no Content-Length: counted as it arrives
            for start in range(0, len(big), 65536):
                yield big[start : start + 65536]

        streamed = client.post("/api/run", content=chunks(), headers={"content-type": "application/json"})
        assert client.get("/healthz").text == "ok"
    assert declared.status_code == 413 and streamed.status_code == 413
