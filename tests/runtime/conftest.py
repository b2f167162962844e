"""Every runtime test runs on every available CEL engine (cel-python, and the C++ engine when
cel-expr-python is installed): the engine is chosen through ``CELMUT_CEL_ENGINE``, which
:class:`celmut.cel.Environment` reads when the compiler creates it without an explicit engine."""

from __future__ import annotations

import pytest

from celmut.cel.backends.select import ENV_VAR
from tests.cel.helpers import ENGINES


@pytest.fixture(autouse=True, params=ENGINES)
def cel_engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(ENV_VAR, request.param)
    return request.param
