"""Fixtures of the install tests: Helm, and the chart rendered once per values file of ``ci/``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.kube.conftest import cluster  # noqa: F401  (re-exported fixture)

from . import helm as helm_tool

VALUES = sorted((helm_tool.CHART / "ci").glob("*-values.yaml"))


@pytest.fixture(autouse=True)
def no_cluster_configured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`celmut manifests --kyverno-crds auto` asks the kubeconfig's cluster: none here, unless a test
    passes --kubeconfig (a developer's own ~/.kube/config must never be read by the tests)."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


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
