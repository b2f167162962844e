"""pytest fixtures for the fake API server.

Register with ``pytest_plugins = ["tests.fakekube.fixtures"]`` in the top-level ``tests/conftest.py``.

* ``fake_apiserver`` — a started :class:`FakeApiServer` (plain HTTP, ephemeral port), stopped afterwards.
* ``fake_apiserver_tls`` — the same over HTTPS with a throw-away CA.
* ``fake_api_client`` — a ``kubernetes.client.ApiClient`` for ``fake_apiserver`` (closed afterwards).
* ``fake_kubeconfig`` — path of a kubeconfig file for ``fake_apiserver``.

Outside fixtures: ``make_api_client(server, token=...)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import kubernetes.client
import pytest

from .server import DEFAULT_TOKEN, FakeApiServer


def make_api_client(server: FakeApiServer, token: str = DEFAULT_TOKEN) -> kubernetes.client.ApiClient:
    """A ``kubernetes.client.ApiClient`` configured for ``server`` with a bearer ``token``."""
    return server.api_client(token)


@pytest.fixture
def fake_apiserver() -> Iterator[FakeApiServer]:
    """A running fake API server (HTTP on 127.0.0.1, ephemeral port) for one test."""
    server = FakeApiServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fake_apiserver_tls() -> Iterator[FakeApiServer]:
    """A running fake API server over HTTPS (self-signed CA, see ``server.ca_file``) for one test."""
    server = FakeApiServer(tls=True).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fake_api_client(fake_apiserver: FakeApiServer) -> Iterator[kubernetes.client.ApiClient]:
    """A ``kubernetes.client.ApiClient`` talking to ``fake_apiserver``."""
    client = make_api_client(fake_apiserver)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def fake_kubeconfig(fake_apiserver: FakeApiServer, tmp_path: Path) -> Path:
    """A kubeconfig file pointing at ``fake_apiserver``."""
    return fake_apiserver.kubeconfig(tmp_path / "kubeconfig")
