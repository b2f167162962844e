"""``celmut apply --cluster`` (kyverno apply ``-c/--cluster``) against the fake API server through the
real ``kubernetes`` client: the objects of the kinds the policies match, ``-n`` and ``-r NAME`` as
Kyverno reads them (``cmd/cli/kubectl-kyverno/utils/common/fetch.go`` ``whenClusterIsTrue``), lookups
from the same cluster, and not one write. Also ``--warn-no-pass`` (``commands/apply/command.go`` ``exit``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from celmut.main import build_parser, main
from tests.fakekube import FakeApiServer

TEAM_FROM_CONFIGMAP = """\
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: team-from-configmap}
spec:
  autogen: {podControllers: {controllers: []}}
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  variables:
    - name: team
      expression: resource.Get("v1", "configmaps", object.metadata.namespace, "owner").data.team
  mutations:
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: 'Object{metadata: Object.metadata{labels: {"team": variables.team}}}'
"""
POSTS_A_CONFIGMAP = """\
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: posts}
spec:
  autogen: {podControllers: {controllers: []}}
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  variables:
    - name: made
      expression: >-
        resource.Post("v1", "configmaps", "shop", {"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": dyn({"name": "made"})}).metadata.name
  mutations:
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: 'Object{metadata: Object.metadata{labels: {"made": variables.made}}}'
"""
ON_CONFIGMAPS = TEAM_FROM_CONFIGMAP.replace("resources: [pods]", "resources: [configmaps]").replace(
    "team-from-configmap", "on-configmaps"
)


def _pod(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }


@pytest.fixture
def cluster(fake_apiserver: FakeApiServer, tmp_path: Path) -> str:
    store = fake_apiserver.store
    for namespace, team in (("shop", "payments"), ("blog", "content")):
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        store.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": namespace},
             "data": {"team": team}}
        )  # fmt: skip
    for namespace, name in (("shop", "web"), ("shop", "worker"), ("blog", "web")):
        store.create(_pod(namespace, name))
    return str(fake_apiserver.kubeconfig(tmp_path / "kubeconfig"))


def _policy(tmp_path: Path, text: str, name: str = "policy.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _apply(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]], str]:
    code = main(["apply", *argv])
    out, err = capsys.readouterr()
    return code, [d for d in yaml.safe_load_all(out) if d], err


def _labels(objects: list[dict[str, Any]]) -> dict[str, str]:
    return {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["metadata"].get("labels", {}).get("team", "")
        for o in objects
    }


def test_cluster_admits_every_matched_object_with_lookups_from_the_cluster_and_writes_nothing(
    fake_apiserver: FakeApiServer, cluster: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, objects, err = _apply(capsys, _policy(tmp_path, TEAM_FROM_CONFIGMAP), "--cluster", "--kubeconfig", cluster)
    assert code == 0, err
    assert _labels(objects) == {"shop/web": "payments", "shop/worker": "payments", "blog/web": "content"}
    assert "pass: 3, fail: 0, warn: 0, error: 0, skip: 0" in err
    assert fake_apiserver.requests_matching("GET", "/configmaps/owner$")  # the lookup read the live cluster
    assert [r for r in fake_apiserver.requests if r.method != "GET"] == []


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["-n", "shop"], {"shop/web": "payments", "shop/worker": "payments"}),
        (["-r", "web"], {"shop/web": "payments", "blog/web": "content"}),  # -r is a name with --cluster (Kyverno)
        (["-c", "-n", "blog", "-r", "web"], {"blog/web": "content"}),
        (["--context", "fakekube"], {"shop/web": "payments", "shop/worker": "payments", "blog/web": "content"}),
    ],
    ids=["namespace", "resource-name", "short-flag-namespace-and-name", "named-context"],
)
def test_cluster_narrows_as_kyverno_does(
    cluster: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], expected: dict[str, str]
) -> None:
    code, objects, err = _apply(
        capsys, _policy(tmp_path, TEAM_FROM_CONFIGMAP), "--cluster", "--kubeconfig", cluster, *flags
    )
    assert code == 0, err
    assert _labels(objects) == expected


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["-r", "absent"], "-r absent: no object of the kinds the policies match is named absent in the cluster"),
        (["--context", "elsewhere"], "no usable cluster configuration"),
    ],
    ids=["unknown-name", "unknown-context"],
)
def test_cluster_bad_input_exits_2(
    cluster: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    code, _, err = _apply(capsys, _policy(tmp_path, TEAM_FROM_CONFIGMAP), "--cluster", "--kubeconfig", cluster, *flags)
    assert code == 2 and message in err, err


def test_cluster_refuses_resource_post_and_says_why(
    fake_apiserver: FakeApiServer, cluster: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _policy(tmp_path, POSTS_A_CONFIGMAP)
    code = main(["apply", path, "--cluster", "--kubeconfig", cluster, "-n", "shop", "-r", "web", "--detailed-results"])
    err = capsys.readouterr().err
    assert code == 1
    assert "celmut apply --cluster only reads the cluster" in err
    assert [r for r in fake_apiserver.requests if r.method != "GET"] == []


def test_cluster_is_no_abbreviation_of_cluster_resources() -> None:
    """With argparse's abbreviations ``--cluster`` meant ``--cluster-resources`` (issue 29)."""
    args = build_parser().parse_args(["apply", "p.yaml", "--cluster"])
    assert args.cluster is True and args.cluster_resources == []
    with pytest.raises(SystemExit):
        build_parser().parse_args(["apply", "p.yaml", "-r", "x", "--cluster-res", "c.yaml"])


@pytest.mark.parametrize(
    ("policy", "flags", "code"),
    [
        (ON_CONFIGMAPS, ["--warn-no-pass", "--warn-exit-code", "3"], 3),
        (ON_CONFIGMAPS, ["--warn-exit-code", "3"], 0),  # without --warn-no-pass: success
    ],
    ids=["no-policy-matches", "flag-off"],
)
def test_warn_no_pass_exits_with_the_warn_code_when_no_policy_passed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str, flags: list[str], code: int
) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text(yaml.safe_dump(_pod("shop", "web")))
    assert main(["apply", _policy(tmp_path, policy), "-r", str(pod), *flags]) == code
    assert ("exit as no objects satisfied a policy" in capsys.readouterr().err) == (code == 3)


def test_warn_no_pass_is_quiet_when_a_policy_passed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text(yaml.safe_dump(_pod("shop", "web")))
    owner = tmp_path / "owner.yaml"
    owner.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": "shop"},
                        "data": {"team": "payments"}})
    )  # fmt: skip
    argv = [_policy(tmp_path, TEAM_FROM_CONFIGMAP), "-r", str(pod), "--cluster-resources", str(owner)]
    assert main(["apply", *argv, "--warn-no-pass", "--warn-exit-code", "3"]) == 0
