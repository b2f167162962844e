"""``celmut apply --explain`` and ``celmut explain`` (issue 18): each field changed with its policy and
mutation, each policy not applied with its reason — as a table, as JSON, for one field, and for an
object read from a cluster (the fake API server, through the real client)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from celmut.main import main
from celmut.runtime.provenance import MUTATED_BY_ANNOTATION
from tests.fakekube import FakeApiServer
from tests.kube.crds import policy_crds

DATA = Path(__file__).resolve().parents[1] / "data" / "provenance"
POLICIES, POD = str(DATA / "policies.yaml"), str(DATA / "pod.yaml")
FLAKY = "error (failurePolicy Ignore): spec.mutations[0].jsonPatch.expression: no such key: missing"

TABLE = f"""\
Pod shop/web
  FIELD                  OP   POLICY    MUTATION           VALUE
  /metadata/labels/team  add  add-team  spec.mutations[0]  "payments"
  /metadata/annotations  add  add-team  spec.mutations[1]  {{"owner": "payments"}}
  NOT APPLIED  KIND            STATUS    REASON
  flaky        MutatingPolicy  error     {FLAKY}
  prod-only    MutatingPolicy  skipped   matchCondition is-prod
  tier-label   MutatingPolicy  excepted  PolicyException shop/skip-web
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_apply_explain_prints_a_table_per_resource(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "apply", POLICIES, "-r", POD, "--explain")
    assert code == 1  # flaky failed (under Ignore): apply reports it as it always has
    table, unselected = out.rsplit("\n  ", 1)
    assert table + "\n" == TABLE
    assert unselected == (  # deployments-only, and the autogen variants of the four pod policies
        "9 policies do not select this resource (resourceRules): add-team (autogen defaults), "
        "add-team (autogen cronjobs), deployments-only, flaky (autogen defaults), flaky (autogen cronjobs), …\n"
    )
    assert "1 resources: 1 mutated" in err


def test_apply_explain_json_is_the_same_for_programs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "apply", POLICIES, "-r", POD, "--explain", "-o", "json")
    assert code == 1
    (item,) = json.loads(out)["items"]
    assert item["object"] == {"apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": "web"}
    assert item["allowed"] is True
    assert item["applied"] == [
        {
            "policy": "add-team",
            "kind": "MutatingPolicy",
            "mutation": "spec.mutations[0].jsonPatch.expression",
            "index": 0,
            "changes": [{"op": "add", "path": "/metadata/labels/team", "value": "payments"}],
        },
        {
            "policy": "add-team",
            "kind": "MutatingPolicy",
            "mutation": "spec.mutations[1].applyConfiguration.expression",
            "index": 1,
            "changes": [{"op": "add", "path": "/metadata/annotations", "value": {"owner": "payments"}}],
        },
    ]
    reasons = {n["policy"]: n for n in item["notApplied"]}
    assert reasons["prod-only"] == {
        "policy": "prod-only",
        "kind": "MutatingPolicy",
        "status": "skipped",
        "cause": "matchCondition",
        "name": "is-prod",
        "reason": "matchCondition 'is-prod' is false",
    }
    assert reasons["tier-label"]["cause"] == "exception" and reasons["tier-label"]["name"] == "shop/skip-web"
    assert reasons["flaky"] == {
        "policy": "flaky",
        "kind": "MutatingPolicy",
        "status": "error",
        "cause": "error",
        "reason": "no such key: missing",
        "failurePolicy": "Ignore",
        "path": "spec.mutations[0].jsonPatch.expression",
    }
    assert (reasons["deployments-only"]["cause"], reasons["deployments-only"]["name"]) == (
        "matchConstraints",
        "resourceRules",
    )


def test_apply_without_explain_prints_the_objects_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "apply", POLICIES, "-r", POD)
    assert yaml.safe_load(out)["metadata"]["labels"] == {"app": "web", "team": "payments"}


def test_explain_a_file_answers_why_a_label_is_there(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", "-f", POD, POLICIES)
    assert code == 1 and out.startswith(TABLE)
    _, why, _ = run(capsys, "explain", "-f", POD, POLICIES, "--field", "/metadata/labels/team")
    assert why.splitlines()[:4] == [
        "Pod shop/web",
        "  why /metadata/labels/team:",
        "  FIELD                  OP   POLICY    MUTATION           VALUE",
        '  /metadata/labels/team  add  add-team  spec.mutations[0]  "payments"',
    ]


def test_explain_a_file_answers_why_a_label_is_not_there(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "explain", "-f", POD, POLICIES, "--field", "/metadata/labels/tier", "-o", "json")
    (item,) = json.loads(out)["items"]
    assert item["field"] == "/metadata/labels/tier" and item["applied"] == []
    assert {n["policy"]: n["status"] for n in item["notApplied"] if n["policy"] in ("tier-label", "prod-only")} == {
        "tier-label": "excepted",
        "prod-only": "skipped",
    }
    _, table, _ = run(capsys, "explain", "-f", POD, POLICIES, "--field", "/metadata/labels/tier")
    assert "  no policy wrote /metadata/labels/tier or a field around it" in table.splitlines()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["explain", "-f", POD, POLICIES, "--field", "metadata.labels.team"], "expected a JSON pointer"),
        (["explain", "-f", POD], "give the policies"),
        (["explain", "-f", "missing.yaml", POLICIES], "missing.yaml"),
    ],
)
def test_explain_bad_input_exits_2_naming_it(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and message in err and out == ""


# --- from the cluster ---------------------------------------------------------------------------------


def _cluster(fake: FakeApiServer, tmp_path: Path, pod: dict[str, Any]) -> str:
    for definition in policy_crds():
        fake.store.create(definition)
    for document in yaml.safe_load_all(Path(POLICIES).read_text()):
        fake.store.create(document)
    fake.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    fake.store.create(pod)
    return str(fake.kubeconfig(tmp_path / "kubeconfig"))


def test_explain_from_the_cluster_shows_what_keeps_a_label_on_a_live_pod(
    fake_apiserver: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pod admitted earlier carries the label already: the policy that writes it keeps it, and the
    summary the webhook recorded says who changed what at admission."""
    live: dict[str, Any] = yaml.safe_load(Path(POD).read_text())
    live["metadata"]["labels"]["team"] = "payments"
    live["metadata"]["annotations"] = {
        "owner": "payments",
        MUTATED_BY_ANNOTATION: '{"add-team":["/metadata/labels/team"]}',
    }
    kubeconfig = _cluster(fake_apiserver, tmp_path, live)
    code, out, err = run(capsys, "explain", "--from-cluster", "po/web", "-n", "shop", "--kubeconfig", kubeconfig)
    assert code == 1, err
    lines = out.splitlines()
    assert lines[:4] == [
        "Pod shop/web",
        "  FIELD                        OP    POLICY    MUTATION           VALUE",
        "  /metadata/labels/team        kept  add-team  spec.mutations[0]",
        "  /metadata/annotations/owner  kept  add-team  spec.mutations[1]",
    ]
    assert "  prod-only    MutatingPolicy  skipped   matchCondition is-prod" in lines
    assert "  tier-label   MutatingPolicy  excepted  PolicyException shop/skip-web" in lines
    assert lines[-1] == f'  recorded on the object ({MUTATED_BY_ANNOTATION}): {{"add-team":["/metadata/labels/team"]}}'
    assert fake_apiserver.requests_matching("GET", "/pods/web$")  # the live object was read …
    assert not [r for r in fake_apiserver.requests if r.method != "GET"]  # … and nothing written


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("widget/web", 'the server doesn\'t have a resource type "widget"'),
        ("pod/absent", "not found"),
        ("pod", "KIND/NAME"),
    ],
)
def test_explain_from_the_cluster_names_what_it_cannot_find(
    fake_apiserver: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, message: str
) -> None:
    kubeconfig = _cluster(fake_apiserver, tmp_path, yaml.safe_load(Path(POD).read_text()))
    code, out, err = run(capsys, "explain", "--from-cluster", target, "-n", "shop", "--kubeconfig", kubeconfig)
    assert code == 2 and message in err and out == ""


_EVERY_CONTAINER = """\
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: always-pull}
spec:
  matchConstraints: {resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: %s
"""
_TWO_CONTAINERS = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "redis"}]},
}


@pytest.mark.parametrize(
    "expression",
    [
        # one patch per container: the other container's patch is not about the field
        '\'[0, 1].map(i, JSONPatch{op: "add", path: "/spec/containers/" + string(i) + "/imagePullPolicy", '
        'value: "Always"})\'',
        # the whole list replaced: only the field's part of the value is shown, at the field's pointer
        '\'[JSONPatch{op: "replace", path: "/spec/containers", value: object.spec.containers.map(c, '
        '{"name": c.name, "image": c.image, "imagePullPolicy": "Always"})}]\'',
    ],
    ids=["a patch per container", "the list replaced"],
)
def test_explain_field_shows_only_that_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, expression: str
) -> None:
    """``--field`` says "only this field": container 1's imagePullPolicy, written by the same mutation, is
    not listed when asking about container 0's."""
    policy, pod = tmp_path / "policy.yaml", tmp_path / "pod.yaml"
    policy.write_text(_EVERY_CONTAINER % expression)
    pod.write_text(yaml.safe_dump(_TWO_CONTAINERS))
    field = "/spec/containers/0/imagePullPolicy"
    code, out, _ = run(capsys, "explain", "-f", str(pod), str(policy), "--field", field, "-o", "json")
    assert code == 0
    [item] = json.loads(out)["items"]
    changes = [c for m in item["applied"] for c in m["changes"]]
    assert [(c["path"], c["value"]) for c in changes] == [(field, "Always")]
    code, out, _ = run(capsys, "explain", "-f", str(pod), str(policy), "--field", field)
    assert "/spec/containers/1" not in out and "redis" not in out
