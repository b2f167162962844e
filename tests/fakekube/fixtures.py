"""pytest fixtures for the fake API server.

Register with ``pytest_plugins = ["tests.fakekube.fixtures"]`` in the top-level ``tests/conftest.py``.

* ``fake_apiserver`` — a started :class:`FakeApiServer` (plain HTTP, ephemeral port), stopped afterwards.
* ``fake_apiserver_tls`` — the same over HTTPS with a throw-away CA.
* ``fake_api_client`` — a ``kubernetes.client.ApiClient`` for ``fake_apiserver`` (closed afterwards).
* ``fake_kubeconfig`` — path of a kubeconfig file for ``fake_apiserver``.

Parts of a real cluster are opt-in per test with a marker read by ``fake_apiserver``::

    @pytest.mark.fakekube(webhooks=True, native_map=True)
    def test_x(fake_apiserver): ...   # CREATE/UPDATE go through native MAPs, then the registered webhooks

(``fake_apiserver.controllers.settle()`` drives the Deployment and ReplicaSet controllers.)

Outside fixtures: ``make_api_client(server, token=...)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import kubernetes.client
import pytest

from .server import DEFAULT_TOKEN, FakeApiServer


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fakekube(webhooks=False, native_map=False, garbage_collection=False): enable the fake API server's "
        "admission chain (registered mutating webhooks; native MutatingAdmissionPolicy evaluation) and its "
        "garbage collector (dependents deleted with their owners)",
    )


def _options(request: pytest.FixtureRequest) -> dict[str, bool]:
    marker = request.node.get_closest_marker("fakekube")
    return dict(marker.kwargs) if marker is not None else {}


def make_api_client(server: FakeApiServer, token: str = DEFAULT_TOKEN) -> kubernetes.client.ApiClient:
    """A ``kubernetes.client.ApiClient`` configured for ``server`` with a bearer ``token``."""
    return server.api_client(token)


@pytest.fixture
def fake_apiserver(request: pytest.FixtureRequest) -> Iterator[FakeApiServer]:
    """A running fake API server (HTTP on 127.0.0.1, ephemeral port) for one test."""
    server = FakeApiServer(**_options(request)).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fake_apiserver_tls(request: pytest.FixtureRequest) -> Iterator[FakeApiServer]:
    """A running fake API server over HTTPS (self-signed CA, see ``server.ca_file``) for one test."""
    server = FakeApiServer(tls=True, **_options(request)).start()
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
