"""The playground's endpoints through a real ``celmut playground`` process: what the page shows for a
run (the diff and who set each line, outcomes with time and CEL cost, the native MAP), located errors,
the webhook's bounds, the scratch pad, the preset compiler and the Kyverno test export."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from celmut.main import main
from tests.playground.support import POD, Playground, pod_policy

State = dict[str, str]

NESTED = "[1,2,3,4,5,6,7,8,9,10]"
EXPENSIVE = pod_policy(
    "too-costly",
    '[JSONPatch{op: "add", path: "/metadata/labels/n",\n'
    f"  value: string({NESTED}.map(a, {NESTED}.map(b, {NESTED}.map(c, {NESTED}.map(d, {NESTED}.map(e, "
    f"{NESTED}.map(f, a + b + c + d + e + f)))))).size())}}]",
)
CALLS_OUT = pod_policy("calls-out", 'http.Get("http://127.0.0.1:1/").items')


def run(served: Playground, state: State) -> dict:
    answer = served.post("/api/run", state)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_run_shows_the_changed_line_with_the_policy_and_mutation_that_set_it(
    served: Playground, examples: dict
) -> None:
    state = examples["team-label"]
    result = run(served, state)
    (pod,) = result["objects"]
    assert pod["reference"] == "Pod shop/web-7d4b9c" and pod["allowed"]
    assert pod["patch"] == [{"op": "add", "path": "/metadata/labels/team", "value": "payments"}]
    changed = [row for row in pod["rows"] if row["tag"] != "equal"]
    assert [(r["tag"], r["right"]["text"].strip(), r["right"]["pointer"]) for r in changed] == [
        ("insert", "team: payments", "/metadata/labels/team")
    ]
    (setter,) = [pod["applied"][n] for n in changed[0]["by"]]
    assert (setter["policy"], setter["mutation"]) == ("add-team-label", "spec.mutations[0].jsonPatch.expression")
    assert (
        state["policies"].splitlines()[setter["location"]["line"] - 1].strip() == "expression: |"
    )  # "Show in policies"
    (outcome,) = pod["outcomes"]
    assert outcome["status"] == "applied" and outcome["cost"] > 0 and outcome["seconds"] > 0
    (policy,) = served.post("/api/native", state).json()["policies"]  # asked apart: it takes longer than a run
    assert "kind: MutatingAdmissionPolicy" in policy["map"] and "name: mpol-add-team-label" in policy["map"]


def test_every_policy_says_why_it_did_not_apply(served: Playground, examples: dict) -> None:
    state = {**examples["security-context"], "resources": POD.replace("namespace: shop", "namespace: kube-system")}
    (pod,) = run(served, state)["objects"]
    reasons = {o["policy"]: (o["status"], o["summary"], o["selects"]) for o in pod["outcomes"]}
    assert reasons["default-security-context"] == ("skipped", "matchCondition not-kube-system", True)
    variants = [why for name, why in reasons.items() if "(autogen" in name]
    assert variants and all(status == "skipped" and not selects for status, _, selects in variants)


def test_a_cel_compile_error_points_at_the_line_and_column_in_the_policies_pane(
    served: Playground, examples: dict
) -> None:
    state = dict(examples["team-label"])
    state["policies"] = state["policies"].replace("value: variables.team}] :", "value: variables.tem}] :")
    (problem,) = run(served, state)["errors"]
    assert problem["pane"] == "policies" and problem["field"] == "spec.mutations[0].jsonPatch.expression"
    line = state["policies"].splitlines()[problem["line"] - 1]
    assert line[problem["column"] - 1 :].startswith("tem}")  # the caret on the undefined field, as the CLI's
    assert "undefined field 'tem'" in problem["message"] and problem["snippet"].endswith("^")


def test_invalid_yaml_names_its_pane_and_line(served: Playground, examples: dict) -> None:
    state = {**examples["team-label"], "resources": "apiVersion: v1\nkind: Pod\nmetadata: {name: [web\n"}
    (problem,) = run(served, state)["errors"]
    assert problem["pane"] == "resources" and problem["line"] == 4 and "invalid YAML" in problem["message"]


def test_a_policy_at_the_cost_limit_fails_by_its_failure_policy_and_the_server_stays_up(served: Playground) -> None:
    (pod,) = run(served, {"policies": EXPENSIVE, "resources": POD})["objects"]
    assert not pod["allowed"] and "cost" in pod["message"]
    (outcome,) = pod["outcomes"]
    assert outcome["status"] == "error"
    assert EXPENSIVE.splitlines()[outcome["location"]["line"] - 1].strip() == "expression: |"
    with served.client() as client:
        assert client.get("/healthz").text == "ok"


def test_a_10_mb_paste_is_refused_with_the_limit_and_the_server_stays_up(served: Playground, examples: dict) -> None:
    state = {**examples["team-label"], "resources": "# " + "x" * (10 * 1024 * 1024)}
    answer = served.post("/api/run", state)
    assert answer.status_code == 413 and "3 MiB" in answer.json()["error"]
    assert run(served, examples["team-label"])["objects"][0]["allowed"]


def test_yaml_aliases_that_unfold_past_the_limit_or_into_a_cycle_are_refused(
    served: Playground, examples: dict
) -> None:
    lines = ["a0: &a0 [" + ",".join(["xxxxxxxxxx"] * 10) + "]"]
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]
    bomb = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n" + "\n".join("  " + x for x in lines)
    (problem,) = run(served, {**examples["team-label"], "cluster": bomb})["errors"]
    assert problem["pane"] == "cluster" and "unfolds" in problem["message"]
    cycle = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: loop}\ndata: &d {self: *d}\n"
    (problem,) = run(served, {**examples["team-label"], "cluster": cycle})["errors"]
    assert "contains it" in problem["message"]


def test_nothing_in_a_pane_reads_a_file_of_the_server(served: Playground, examples: dict) -> None:
    wrapper = "apiVersion: cli.kyverno.io/v1alpha1\nkind: ClusterResource\nspec:\n  crds: [/etc/passwd]\n"
    (problem,) = run(served, {**examples["team-label"], "cluster": wrapper})["errors"]
    assert problem["field"] == "spec.crds" and "reads none" in problem["message"]
    context = "apiVersion: cli.kyverno.io/v1alpha1\nkind: Context\nspec:\n  globalContext: [{name: x, valueFile: /etc/passwd}]\n"
    (problem,) = run(served, {**examples["team-label"], "context": context})["errors"]
    assert problem["pane"] == "context" and "valueFile" in problem["message"]


def test_cel_makes_no_outbound_http(served: Playground) -> None:
    (pod,) = run(served, {"policies": CALLS_OUT, "resources": POD})["objects"]
    assert "denied" in pod["message"] and "allow-list is empty" in pod["message"]


def test_the_scratch_pad_binds_the_selected_resource_and_its_namespace(served: Playground, examples: dict) -> None:
    body = {
        "state": examples["team-label"],
        "expression": 'object.metadata.name + "@" + namespaceObject.metadata.labels.team',
    }
    assert served.post("/api/eval", body).json()["result"] == "web-7d4b9c@payments"
    broken = served.post("/api/eval", {**body, "expression": "object.metadata.name +"}).json()
    assert broken["kind"] == "compile" and (broken["line"], broken["column"]) == (1, 22)


@pytest.mark.parametrize("policies", ["", "kind: [broken", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"])
def test_the_scratch_pad_needs_no_policy_and_ignores_a_broken_one(
    served: Playground, examples: dict, policies: str
) -> None:
    state = {**examples["team-label"], "policies": policies}
    answer = served.post("/api/eval", {"state": state, "expression": "object.metadata.name"}).json()
    assert answer == {"result": "web-7d4b9c", "variables": answer["variables"]} and answer["variables"]["object"]


def test_the_preset_compiler_prints_the_policies_a_preset_becomes(served: Playground, examples: dict) -> None:
    compiled = served.post("/api/compile", {"policies": examples["gpu-slicing"]["policies"]}).json()
    assert compiled["count"] >= 1 and "kind: MutatingPolicy" in compiled["yaml"]


def test_an_exported_test_passes_with_celmut_test(served: Playground, examples: dict, tmp_path: Path, capsys) -> None:
    answer = served.post("/api/export", {"state": examples["security-context"], "name": "security context"})
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/zip"
    zipfile.ZipFile(io.BytesIO(answer.content)).extractall(tmp_path)
    test = (tmp_path / "security-context" / "kyverno-test.yaml").read_text()
    assert "isMutatingPolicy: true" in test and "patchedResources: patched.yaml" in test
    assert main(["test", str(tmp_path / "security-context")]) == 0
    assert "tests passed and 0 tests failed" in capsys.readouterr().out


def test_an_export_with_old_objects_is_refused_rather_than_testing_something_else(
    served: Playground, examples: dict
) -> None:
    answer = served.post("/api/export", {"state": {**examples["team-label"], "oldObjects": POD}})
    assert answer.status_code == 422 and answer.json()["errors"][0]["pane"] == "oldObjects"


TARGETING = """apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: touch-team-configmaps}
spec:
  evaluation: {mutateExisting: {enabled: true}}
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}]
  targetMatchConstraints:
    namespaceSelector: {matchLabels: {team: a}}
    resourceRules: [{apiGroups: [''], apiVersions: [v1], resources: [configmaps]}]
  mutations:
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: 'Object{metadata: Object.metadata{labels: {"touched": "yes"}}}'
"""
TEAM_A = """apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {team: a}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team-a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: elsewhere, namespace: default}
"""


def test_mutate_existing_targets_a_trigger_reaches_are_shown_with_their_own_diff(served: Playground) -> None:
    trigger = "apiVersion: v1\nkind: Namespace\nmetadata: {name: new}\n"
    objects = run(served, {"policies": TARGETING, "resources": trigger, "cluster": TEAM_A})["objects"]
    assert [(o["reference"], o.get("target", False)) for o in objects] == [
        ("Namespace new", False),
        ("ConfigMap team-a/settings", True),
    ]
    target = objects[1]
    changed = [r for r in target["rows"] if r["tag"] != "equal"]
    assert [r["right"]["text"].strip() for r in changed] == ["labels:", "touched: 'yes'"]  # it added the map
    assert {target["applied"][n]["policy"] for r in changed for n in r["by"]} == {"touch-team-configmaps"}


def test_a_policy_that_cannot_run_natively_says_why_and_its_preset_is_named(served: Playground, examples: dict) -> None:
    pods, daemonsets = served.post("/api/native", examples["spot-all-except-kube-system"]).json()["policies"]
    assert "map" not in pods and pods["generatedBy"].startswith("spot webhook values policies")
    assert "resource.List" in pods["refused"] and "only Kyverno's CEL environment has it" in pods["refused"]
    # the preset's DaemonSet-template companion (issue 38) mutates existing DaemonSets: no MAP does that
    assert daemonsets["name"] == "spot-all-except-kube-system-daemonsets" and "map" not in daemonsets
    assert "DaemonSet pod templates" in daemonsets["generatedBy"]
    assert daemonsets["refused"].startswith("spec.evaluation.mutateExisting.enabled")


def test_a_body_of_the_wrong_shape_is_a_400_naming_the_field(served: Playground) -> None:
    assert served.post("/api/eval", {"expression": 5}).json() == {"error": "expression: a string expected"}
    assert served.post("/api/compile", {}).status_code == 400
    assert (
        served.post("/api/run", {"policies": ["a list"]}).json()["errors"][0]["message"] == "policies: must be a string"
    )
    with served.client() as client:
        answer = client.post("/api/run", content=b"{not json", headers={"content-type": "application/json"})
    assert answer.status_code == 400 and "not JSON" in answer.json()["error"]
