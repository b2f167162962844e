"""``celmut playground``'s flags: loopback without TLS, anything else with it (docs/security.md), and
the bounded pool evaluations wait in."""

from __future__ import annotations

import asyncio
import ssl
import threading
from pathlib import Path

import httpx
import pytest

from celmut.main import main
from celmut.playground.app import Busy, Evaluations
from celmut.playground.guard import is_loopback
from tests.playground.support import playground


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--host", "0.0.0.0"], "serves the playground beyond this machine: give --tls-cert"),
        (["--host", "192.0.2.10"], "serves the playground beyond this machine"),
        (["--tls-cert", "cert.pem"], "give --tls-cert and --tls-key together"),
        (["--self-signed", "--tls-cert", "c", "--tls-key", "k"], "not both"),
        (["--port", "70000"], "must be 0-65535"),
    ],
)
def test_flags_that_would_serve_the_network_in_clear_are_refused_before_binding(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["playground", *flags]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.53", "::1", "localhost"])
def test_loopback_needs_no_tls(host: str) -> None:
    assert is_loopback(host)


def test_with_self_signed_tls_it_serves_https_with_the_ca_it_prints() -> None:
    with playground("--self-signed", scheme="https") as served:
        (said,) = [line for line in served.said if line.startswith("TLS:")]
        ca = Path(said.split("its CA is ")[1].split(" ")[0])
        context = ssl.create_default_context(cafile=str(ca))
        with httpx.Client(base_url=served.url, verify=context, timeout=30) as client:
            assert client.get("/healthz").text == "ok"
        with pytest.raises(httpx.HTTPError):  # and never in clear
            httpx.get(served.url.replace("https://", "http://") + "healthz", timeout=10)


def test_evaluations_past_the_bound_are_told_to_come_back_not_queued() -> None:
    evaluations = Evaluations(threads=1, max_pending=1)
    release = threading.Event()

    async def scenario() -> None:
        first = asyncio.ensure_future(evaluations.run(release.wait))
        await asyncio.sleep(0)  # the first one holds the only slot
        with pytest.raises(Busy):
            await evaluations.run(lambda: True)
        release.set()
        assert await first is True
        assert await evaluations.run(lambda: 42) == 42  # the slot is back

    asyncio.run(scenario())


def test_without_a_browser_the_browser_tests_say_why_they_are_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.playground import browser

    monkeypatch.setattr(browser, "CHROMEDRIVER", "/nonexistent/chromedriver")
    assert browser.missing() == "/nonexistent/chromedriver not found: apt-get install chromium-driver (.ci/run does)"
