"""Fixtures of the webhook tests: ``serve`` starts ``celmut serve`` as its own process."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.server.support import Served
from tests.server.test_webhook import POLICY, write


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    write(tmp_path, "noop", POLICY.format(name="noop", failure="Ignore", expression="'[]'"))
    started: list[Served] = []

    def start(*flags: str) -> Served:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        command = [sys.executable, "-m", "celmut.main", "serve", "--policies", str(tmp_path / "policies")]
        command += ["--self-signed", "--cert-dir", str(tmp_path / "tls"), "--port", str(port), "--log-level", "ERROR"]
        process = subprocess.Popen(
            [*command, *flags], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ)
        )
        served = Served(process, port, ssl.create_default_context())
        started.append(served)
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, "celmut serve exited"
            try:
                served.context = ssl.create_default_context(cafile=str(tmp_path / "tls" / "ca.crt"))
                if served.get().startswith(b"HTTP/1.1 200"):
                    return served
            except (OSError, ssl.SSLError):
                assert time.monotonic() < deadline, "celmut serve did not start"
                time.sleep(0.2)

    yield start
    for served in started:
        served.process.terminate()
        served.process.wait(30)


