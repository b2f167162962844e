"""Fixtures of the install tests: Helm, and the chart rendered once per values file of ``ci/``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from . import helm as helm_tool

VALUES = sorted((helm_tool.CHART / "ci").glob("*-values.yaml"))


@pytest.fixture(scope="session")
def helm() -> Path:
    try:
        return helm_tool.helm_binary()
    except helm_tool.HelmNotFound as ex:
        pytest.fail(str(ex), pytrace=False)


@pytest.fixture(scope="session")
def rendered(helm: Path) -> dict[str, list[dict[str, Any]]]:
    """Values file stem ("default", "spot-all", ...) -> the rendered objects; one `helm template` each."""
    return {path.name.removesuffix("-values.yaml"): helm_tool.template(helm, path) for path in VALUES}
