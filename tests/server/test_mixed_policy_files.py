"""A policy folder that also holds resources (a Pod, a Deployment): ``serve`` and ``controller`` refuse to
start with one line naming each document and what to do (exit 2; ``serve`` prints no CA bundle before
refusing), or, with ``--skip-unsupported`` (the meaning ``apply`` gives it), skip them with one warning
and serve the policies."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from celmut.controller.run import Controller, ControllerConfig
from celmut.main import main
from celmut.service.settings import ServiceSettings
from tests.controller.support import connect
from tests.fakekube import FakeApiServer
from tests.server.support import Served
from tests.server.test_webhook import POLICY, write

ROOT = Path(__file__).resolve().parents[2]
RESOURCE = (ROOT / "examples" / "resources" / "pod.yaml").read_text()


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    write(tmp_path, "noop", POLICY.format(name="noop", failure="Ignore", expression="'[]'"))
    (tmp_path / "policies" / "pod.yaml").write_text(RESOURCE)
    return tmp_path / "policies"


def test_serve_refuses_a_mixed_folder_with_one_line_naming_the_document(mixed: Path, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "celmut.main", "serve", "--policies", str(mixed), "--self-signed"]
    command += ["--cert-dir", str(tmp_path / "tls"), "--port", "0"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "CA bundle" not in done.stdout and "BEGIN CERTIFICATE" not in done.stdout
    [line] = [line for line in done.stderr.splitlines() if "cannot start" in line]
    assert f"{mixed / 'pod.yaml'} (Pod (v1) web-7d4b9c: not a policy)" in line and "--skip-unsupported" in line


def test_serve_with_skip_unsupported_serves_the_policies(mixed: Path, serve: Callable[..., Served]) -> None:
    served = serve("--skip-unsupported")  # the fixture serves the same folder, holding the Pod
    assert served.process.poll() is None and (mixed / "pod.yaml").exists()


def test_the_controller_refuses_a_mixed_folder_with_the_same_line(
    mixed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["controller", "--policies", str(mixed), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: cannot start: 1 document(s) among the policies")
    assert str(mixed / "pod.yaml") in err and "--skip-unsupported" in err


def test_the_controller_with_skip_unsupported_loads_the_policies(
    mixed: Path, fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    cluster = connect(fake_apiserver, tmp_path)
    try:
        service = ServiceSettings(policy_paths=(str(mixed),), skip_unsupported=True)
        controller = Controller(ControllerConfig(service), cluster)
        outcome = controller.store.reload(force=True)
        assert outcome is not None and outcome.accepted and outcome.errors == []
        engine = controller.store.engine
        assert engine is not None and [p.name for p in engine.policies] == ["noop"]
    finally:
        cluster.close()
