"""``celmut version`` (client, and with ``--from-cluster`` the celmut Deployments of the cluster, read
through the fake API server and the real client) and ``celmut completion`` (scripts generated from the
parser by shtab, exercised in a real bash)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from celmut import __version__
from celmut.main import main
from celmut.native import current_build
from tests.fakekube import FakeApiServer

ROOT = Path(__file__).resolve().parents[2]


def _deployment(namespace: str, name: str, component: str, image: str, labels: dict[str, str]) -> dict[str, Any]:
    selector = {"app.kubernetes.io/name": "x", "app.kubernetes.io/component": component}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {**labels, "app.kubernetes.io/component": component},
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": selector},
                "spec": {
                    "containers": [{"name": "sidecar", "image": "envoy:1.30"}, {"name": component, "image": image}]
                },
            },
        },
    }


def test_version_prints_the_client_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    build = current_build().describe()  # which build of the hot path runs, and why (tests/native: the wording)
    assert capsys.readouterr().out == f"Client Version: celmut {__version__}\nBuild: {build}\n"


def test_version_from_cluster_lists_the_celmut_deployments_and_their_versions(
    fake_apiserver: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    celmut = {"app.kubernetes.io/name": "celmut", "app.kubernetes.io/version": "0.3.1"}
    fake_apiserver.store.create(_deployment("celmut", "celmut-webhook", "webhook", "reg.io/celmut:0.3.1", celmut))
    fake_apiserver.store.create(
        _deployment("celmut", "celmut-controller", "controller", "reg.io/celmut@sha256:abc", celmut)
    )
    fake_apiserver.store.create(_deployment("other", "web", "webhook", "nginx:1", {"app.kubernetes.io/name": "web"}))
    kubeconfig = str(fake_apiserver.kubeconfig(tmp_path / "kubeconfig"))
    assert main(["version", "--from-cluster", "--kubeconfig", kubeconfig]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"Client Version: celmut {__version__}",
        f"Build: {current_build().describe()}",
        "Server:",
        "  DEPLOYMENT                COMPONENT   IMAGE TAG   VERSION LABEL  READY",
        "  celmut/celmut-controller  controller  sha256:abc  0.3.1          0/2",
        "  celmut/celmut-webhook     webhook     0.3.1       0.3.1          0/2",
    ]
    assert [r for r in fake_apiserver.requests if r.method != "GET"] == []


def test_version_from_cluster_says_when_celmut_is_not_installed(
    fake_apiserver: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = str(fake_apiserver.kubeconfig(tmp_path / "kubeconfig"))
    assert main(["version", "--from-cluster", "--kubeconfig", kubeconfig, "-n", "celmut"]) == 0
    assert "Server: no celmut Deployment (app.kubernetes.io/name=celmut) in namespace celmut" in capsys.readouterr().out


def _bash_complete(*words: str) -> list[str]:
    """What bash offers after ``words`` (the last is the word being completed), with the script sourced."""
    script = f"""
source <({sys.executable} -m celmut completion bash)
COMP_WORDS=({" ".join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}
COMP_LINE="${{COMP_WORDS[*]}}"; COMP_POINT=${{#COMP_LINE}}; COMPREPLY=()
_shtab_celmut
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=ROOT, check=True, timeout=60)
    return [line for line in result.stdout.splitlines() if line]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize(
    ("words", "offered"),
    [
        (("celmut", "ver"), ["version"]),
        (("celmut", "apply", "--clu"), ["--cluster-resources", "--cluster"]),
        (("celmut", "apply", "--warn-"), ["--warn-exit-code", "--warn-no-pass"]),
        (("celmut", "completion", ""), ["bash", "zsh", "fish"]),
        (("celmut", "apply", "--operation", ""), ["CREATE", "UPDATE", "DELETE", "CONNECT"]),
    ],
    ids=["command", "apply-flags", "kyverno-warn-flags", "shells", "choices"],
)
def test_bash_completion_offers_the_commands_flags_and_choices(words: tuple[str, ...], offered: list[str]) -> None:
    assert sorted(_bash_complete(*words)) == sorted(offered)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_every_shell_script_names_every_command(shell: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", shell]) == 0
    script = capsys.readouterr().out
    for command in ("apply", "explain", "test", "compile", "serve", "controller", "manifests", "version", "completion"):
        assert command in script
    assert "--warn-no-pass" in script or "warn-no-pass" in script
