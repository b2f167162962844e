"""The command line as users run it: `celmut eval`, `celmut apply` and `celmut test` — outputs,
exit codes (0 ok, 1 policy/evaluation failure, 2 bad input) and error messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from celmut.main import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- eval --------------------------------------------------------------------------------------------


def test_eval_prints_the_result_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "eval", "object.spec.containers.map(c, c.name)", "--object", str(ROOT / "examples/resources/pod.yaml")
    )
    assert code == 0 and json.loads(out) == ["nginx", "sidecar"]


def test_eval_typed_objects_print_as_plain_maps(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "eval", 'JSONPatch{op: "add", path: "/a", value: variables.v}', "--var", "v=[1,2]")
    assert code == 0 and json.loads(out) == {"op": "add", "path": "/a", "value": [1, 2]}


def test_eval_compile_errors_exit_2_with_the_column(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "eval", "1 + ")
    assert code == 2 and "column" in err and "Syntax error" in err


def test_eval_runtime_errors_exit_1_without_dumping_the_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    obj = tmp_path / "obj.json"
    obj.write_text(json.dumps({"data": {"secret": "hunter2-top-secret"}}))
    code, _, err = run(capsys, "eval", "object.data.missing", "--object", str(obj))
    assert code == 1 and "no such key: missing" in err and "hunter2" not in err


def test_eval_profiles_differ(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "eval", "cel.bind(x, 2, x * x)")[0] == 0
    code, _, err = run(capsys, "eval", "cel.bind(x, 2, x * x)", "--profile", "kubernetes")
    assert code == 2 and "cel.bind" in err


def test_eval_request_file_binds_request_and_object(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "1",
            "operation": "UPDATE",
            "object": {"metadata": {"name": "n"}},
            "userInfo": {"username": "alice"},
        },
    }
    path = tmp_path / "review.json"
    path.write_text(json.dumps(review))
    code, out, _ = run(
        capsys,
        "eval",
        'request.operation + ":" + request.userInfo.username + ":" + object.metadata.name',
        "--request",
        str(path),
    )
    assert code == 0 and json.loads(out) == "UPDATE:alice:n"


# --- apply -------------------------------------------------------------------------------------------


def test_apply_prints_mutated_resources_in_input_order(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys,
        "apply",
        str(ROOT / "policies"),
        "-r",
        str(ROOT / "examples/resources"),
        "--cluster-resources",
        str(ROOT / "examples/cluster.yaml"),
    )
    docs = list(yaml.safe_load_all(out))
    assert code == 0
    assert [d["kind"] for d in docs] == ["Deployment", "Pod"]
    assert docs[1]["metadata"]["labels"]["team"] == "payments"
    assert "2 resources: 2 mutated" in err


def test_apply_patch_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "apply", str(ROOT / "policies"), "-r", str(ROOT / "examples/resources/pod.yaml"), "-o", "patch"
    )
    patches = json.loads(out)
    assert code == 0 and patches[0]["resource"] == "Pod shop/web-7d4b9c"
    assert {"op": "add", "path": "/metadata/labels/team", "value": "unowned"} in patches[0]["patch"]


def test_apply_exits_2_on_an_invalid_policy_naming_file_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: policies.kyverno.io/v1\nkind: MutatingPolicy\nmetadata: {name: bad}\n"
        "spec:\n  matchConstraints: {resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}\n"
        "  mutations: [{patchType: JSONPatch, jsonPatch: {expression: 'nope('}}]\n"
    )
    code, _, err = run(capsys, "apply", str(bad), "-r", str(ROOT / "examples/resources/pod.yaml"))
    assert code == 2
    assert f"{bad}: MutatingPolicy bad: spec.mutations[0].jsonPatch.expression" in err


def test_apply_exits_1_when_a_policy_denies(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    failing = tmp_path / "fail.yaml"
    failing.write_text(
        "apiVersion: policies.kyverno.io/v1\nkind: MutatingPolicy\nmetadata: {name: fails}\n"
        "spec:\n  matchConstraints: {resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}\n"
        '  mutations: [{patchType: JSONPatch, jsonPatch: {expression: \'[JSONPatch{op: "add", path: "/a", value: object.nope}]\'}}]\n'
    )
    code, _, err = run(capsys, "apply", str(failing), "-r", str(ROOT / "examples/resources/pod.yaml"))
    assert code == 1 and "denied: Pod shop/web-7d4b9c: policy fails" in err


def test_apply_missing_resource_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "apply", str(ROOT / "policies"), "-r", "/nonexistent.yaml")
    assert code == 2 and "/nonexistent.yaml" in err


# --- test --------------------------------------------------------------------------------------------


def test_kyverno_test_files_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "test", str(DATA / "kyverno-tests" / "labels"))
    assert code == 0 and "2 tests passed and 0 tests failed" in out


def test_a_wrong_expectation_fails_the_test_run(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "test", str(DATA / "failing-kyverno-tests" / "wrong-expectation"))
    assert code == 1
    assert "│  1 │ add-env-label │      │ apps/v1/Deployment/shop/web        │ Fail   │ Resource diff │" in out
    assert "-    env: staging\n+    env: production\n" in out  # the diff from expected to actual


def test_console_script_is_installed() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "celmut", "eval", "1 + 1"], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert result.returncode == 0 and result.stdout.strip() == "2"


# --- nothing skipped silently --------------------------------------------------------------------------


def test_a_mixed_policy_file_fails_naming_each_unsupported_document(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    mixed = tmp_path / "mixed.yaml"
    policy = (ROOT / "policies/examples/add-managed-by-label.yaml").read_text()
    mixed.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings}}\n---\n{policy}")
    code, out, err = run(capsys, "apply", str(mixed), "-r", str(ROOT / "examples/resources/pod.yaml"))
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0] == f"error: {mixed}: ConfigMap (v1) settings: not a policy"
    assert lines[1].startswith("hint: celmut serves MutatingPolicy") and "--skip-unsupported" in lines[1]


def test_skip_unsupported_applies_the_rest_with_one_warning(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.yaml"
    policy = (ROOT / "policies/examples/add-managed-by-label.yaml").read_text()
    mixed.write_text(f"just a note\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings}}\n---\n{policy}")
    code, out, err = run(capsys, "apply", str(mixed), "-r", str(ROOT / "examples/resources/pod.yaml"), "--skip-unsupported")
    assert code == 0 and yaml.safe_load(out)["metadata"]["labels"]["team"] == "unowned"
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: skipped 2 documents celmut does not serve: {mixed} (a string), {mixed}#1 (ConfigMap (v1) settings)"
    ]
