"""The chart tests never skip for want of Helm: without the package that ships it they fail, saying
how to install it."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import helm as helm_tool


def test_a_missing_helm_package_is_an_error_naming_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(helm_tool, "DISTRIBUTION", "celmut-no-such-distribution")
    with pytest.raises(helm_tool.HelmNotFound, match=r"make test"):
        helm_tool.helm_binary(tmp_path)


def test_helm_is_extracted_once_and_runs(tmp_path: Path) -> None:
    binary = helm_tool.helm_binary(tmp_path)
    assert helm_tool.helm_binary(tmp_path) == binary  # the cached copy is reused
    assert "v4." in helm_tool.run(binary, "version", "--short")
