from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.playground.support import Playground, playground


@pytest.fixture(scope="session")
def served() -> Iterator[Playground]:
    """One ``celmut playground`` process for the API tests (each test posts its own state)."""
    with playground() as running:
        yield running


@pytest.fixture(scope="session")
def examples(served: Playground) -> dict[str, dict[str, str]]:
    """The Examples menu's states by id."""
    with served.client() as client:
        found = client.get("/api/examples").json()["examples"]
    return {e["id"]: e["state"] for e in found}
