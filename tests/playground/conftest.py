from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.playground.browser import Browser, chromium, missing
from tests.playground.live_support import LiveCluster, live_playground
from tests.playground.support import Playground, playground


@pytest.fixture(scope="session")
def served() -> Iterator[Playground]:
    """One ``celmut playground`` process for the API and browser tests (each test posts its own state)."""
    with playground() as running:
        yield running


@pytest.fixture(scope="session")
def examples(served: Playground) -> dict[str, dict[str, str]]:
    """The Examples menu's states by id."""
    with served.client() as client:
        found = client.get("/api/examples").json()["examples"]
    return {e["id"]: e["state"] for e in found}


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One Chromium for every browser test of the run (starting one costs seconds on a loaded machine)."""
    if missing():
        pytest.skip(f"no browser for the playground's browser tests: {missing()}")
    with chromium() as opened:
        yield opened


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCluster]:
    """A fake cluster and ``celmut playground --kubeconfig`` connected to it, for the live-mode tests."""
    with live_playground(tmp_path_factory.mktemp("live")) as running:
        yield running
