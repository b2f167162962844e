"""`celmut apply … | kubectl apply -f -`: a resource a policy denied is never on standard output (nor in
`--output-file`/`--output-dir`), whatever the format — its denial is on stderr and the exit code is 1 —
while the resources admitted next to it still are. Printing the denied object unmutated would let the
pipe create what the webhook refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from celmut.main import main

# A policy that errors (so denies: failurePolicy Fail) on pods labelled deny=yes, and labels the others.
POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: denies-some}
spec:
  matchConstraints: {resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        object.metadata.labels.deny == "yes"
          ? [JSONPatch{op: "add", path: "/a", value: object.nope}]
          : [JSONPatch{op: "add", path: "/metadata/labels/checked", value: "true"}]
"""


def _pod(name: str, deny: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "labels": {"deny": deny}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    policy, resources = tmp_path / "policy.yaml", tmp_path / "pods.yaml"
    policy.write_text(POLICY)
    resources.write_text(yaml.safe_dump_all([_pod("refused", "yes"), _pod("admitted", "no")]))
    return policy, resources


@pytest.mark.parametrize(
    "flags",
    [["-o", "yaml"], ["-o", "json"], ["-o", "name"], ["-o", "patch"], ["--diff"]],
    ids=["yaml", "json", "name", "patch", "diff"],
)
def test_a_denied_resource_is_not_on_stdout(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path], flags: list[str]
) -> None:
    policy, resources = inputs
    code = main(["apply", str(policy), "-r", str(resources), "--no-color", *flags])
    out, err = capsys.readouterr()
    assert code == 1 and "denied: Pod shop/refused" in err
    assert "refused" not in out
    assert "admitted" in out  # the other resource is still printed


def test_a_denied_resource_alone_prints_nothing_kubectl_would_create(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    policy, _ = inputs
    alone = tmp_path / "refused.yaml"
    alone.write_text(yaml.safe_dump(_pod("refused", "yes")))
    assert main(["apply", str(policy), "-r", str(alone), "-o", "json"]) == 1
    out = capsys.readouterr().out
    assert json.loads(out)["items"] == []  # an empty List: `kubectl apply -f -` creates nothing


@pytest.mark.parametrize("flag", ["--output-file", "--output-dir"])
def test_a_denied_resource_is_not_written_to_files(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path], tmp_path: Path, flag: str
) -> None:
    policy, resources = inputs
    destination = tmp_path / ("out.yaml" if flag == "--output-file" else "out")
    assert main(["apply", str(policy), "-r", str(resources), flag, str(destination)]) == 1
    err = capsys.readouterr().err
    written = "".join(p.read_text() for p in ([destination] if destination.is_file() else destination.iterdir()))
    assert "admitted" in written and "refused" not in written
    assert "wrote 1 resources" in err and "(1 denied, not written)" in err
