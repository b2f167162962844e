"""Every runtime test runs on the default CEL engine, whatever ``CELMUT_CEL_ENGINE`` the shell that
runs the tests sets: :class:`celmut.cel.Environment` reads it when the compiler creates an
environment without an explicit engine. ``test_conformance.py`` compares the engines."""

from __future__ import annotations

import pytest

from celmut.cel.backends.select import ENV_VAR
from tests.cel.pycode_reference import COMPILED


@pytest.fixture(autouse=True)
def cel_engine(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(ENV_VAR, COMPILED)
    return COMPILED
