"""Output for pipelines and for people (issue 15, items 4, 8 and 10): what `kubectl` accepts on its
standard input, standard input as a path, diagnostics with a caret, colour only on a terminal, and
--help in plain text with every command's exit codes."""

from __future__ import annotations

import argparse
import io
import json
import re
from pathlib import Path

import pytest
import yaml

from celmut.main import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
POD = ROOT / "examples/resources/pod.yaml"
RESOURCES = ROOT / "examples/resources"
POLICIES = ROOT / "policies/examples"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as sys.stdout is in an interactive shell."""

    def isatty(self) -> bool:
        return True


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_on_terminal(monkeypatch: pytest.MonkeyPatch, *argv: str) -> tuple[int, str]:
    terminal = Terminal()
    monkeypatch.setattr("sys.stdout", terminal)
    code = main(list(argv))
    return code, terminal.getvalue()


# --- kubectl's shapes ---------------------------------------------------------------------------------


def test_json_of_one_resource_is_the_object(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "apply", str(POLICIES), "-r", str(POD), "-o", "json")
    obj = json.loads(out)
    assert code == 0 and obj["kind"] == "Pod" and obj["metadata"]["labels"]["team"] == "unowned"


def test_json_of_several_resources_is_a_v1_list_as_kubectl_get_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """kubectl create -f - takes one object; several come as a v1 List (a bare array is refused)."""
    code, out, _ = run(capsys, "apply", str(POLICIES), "-r", str(RESOURCES), "-o", "json")
    listed = json.loads(out)
    assert code == 0
    assert {k: listed[k] for k in ("apiVersion", "kind")} == {"apiVersion": "v1", "kind": "List"}
    assert [(i["apiVersion"], i["kind"], i["metadata"]["name"]) for i in listed["items"]] == [
        ("apps/v1", "Deployment", "checkout"),
        ("v1", "Pod", "web-7d4b9c"),
    ]


def test_yaml_is_a_stream_of_objects(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "apply", str(POLICIES), "-r", str(RESOURCES))
    assert code == 0 and [d["kind"] for d in yaml.safe_load_all(out)] == ["Deployment", "Pod"]


def test_name_output_is_kubectls_kind_group_slash_name(capsys: pytest.CaptureFixture[str]) -> None:
    """k8s.io/cli-runtime/pkg/printers/name.go: lower-cased Kind.group, then the name."""
    code, out, _ = run(capsys, "apply", str(POLICIES), "-r", str(RESOURCES), "-o", "name")
    assert code == 0 and out.splitlines() == ["deployment.apps/checkout", "pod/web-7d4b9c"]


def test_resources_from_standard_input(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(POD.read_text()))
    code, out, _ = run(capsys, "apply", str(POLICIES), "-r", "-", "-o", "name")
    assert code == 0 and out == "pod/web-7d4b9c\n"


def test_json_resources_from_standard_input(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """What `kubectl get pod web -o json | celmut apply … -r -` sends: a v1 List in JSON."""
    listed = {"apiVersion": "v1", "kind": "List", "items": [yaml.safe_load(POD.read_text())]}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(listed)))
    code, out, _ = run(capsys, "apply", str(POLICIES), "-r", "-", "-o", "name")
    assert code == 0 and out == "pod/web-7d4b9c\n"


def test_policies_from_standard_input(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO((POLICIES / "add-managed-by-label.yaml").read_text()))
    code, out, _ = run(capsys, "apply", "-", "-r", str(POD), "-o", "json")
    assert code == 0 and json.loads(out)["metadata"]["labels"]["team"] == "unowned"


def test_an_unsupported_document_on_standard_input_is_named_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
    code, _, err = run(capsys, "apply", "-", "-r", str(POD))
    assert code == 2 and "error: <stdin>: ConfigMap (v1) x: not a policy" in err


# --- diagnostics ---------------------------------------------------------------------------------------

UNDECLARED = """apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: typo}
spec:
  matchConstraints: {resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}
  mutations:
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: 'Object{metadata: Object.metadata{labels: {"a": objec.metadata.name}}}'
"""


def test_apply_points_a_caret_at_the_undeclared_reference(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "typo.yaml").write_text(UNDECLARED)
    code, _, err = run(capsys, "apply", str(tmp_path / "typo.yaml"), "-r", str(POD))
    expression = 'Object{metadata: Object.metadata{labels: {"a": objec.metadata.name}}}'
    assert code == 2
    assert err.splitlines() == [
        f"error: {tmp_path / 'typo.yaml'}: MutatingPolicy typo: spec.mutations[0].applyConfiguration.expression: "
        "compilation failed: undeclared reference to 'objec' (in container '') (expression line 1, column 48)",
        f" | {expression}",
        f" | {'.' * 47}^",
    ]
    assert expression.index("objec") == 47  # the caret is under the `o` of objec


def test_eval_points_a_caret_at_a_syntax_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "eval", "[1, 2 3]")
    assert code == 2
    assert err.splitlines() == [
        "error: compile error at line 1, column 7: Syntax error: unexpected '3'",
        " | [1, 2 3]",
        " | ......^",
    ]


def test_eval_says_object_is_missing_instead_of_a_null_field_selection(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "eval", "object.metadata.name")
    assert code == 2 and err.startswith("error: no --object given: the expression reads `object`")


def test_eval_without_object_still_evaluates_expressions_that_handle_null(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "eval", "object == null")
    assert code == 0 and out.strip() == "true"


# --- colour only where a person reads --------------------------------------------------------------------


def test_diff_is_a_unified_diff_of_each_changed_object(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "apply", str(POLICIES), "-r", str(POD), "--diff")
    assert code == 0 and not ANSI.search(out)  # captured output is not a terminal
    lines = out.splitlines()
    assert lines[:2] == ["--- input/v1.Pod.shop.web-7d4b9c", "+++ mutated/v1.Pod.shop.web-7d4b9c"]
    assert lines[2].startswith("@@ ") and "+    team: unowned" in lines


def test_diff_prints_nothing_for_an_object_no_policy_changed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cm = tmp_path / "cm.yaml"
    cm.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: shop}\n")
    code, out, _ = run(capsys, "apply", str(POLICIES), "-r", str(cm), "--diff")
    assert code == 0 and out == ""


def test_diff_is_coloured_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    code, out = run_on_terminal(monkeypatch, "apply", str(POLICIES), "-r", str(POD), "--diff")
    assert code == 0
    assert "\x1b[32m+    team: unowned\x1b[0m" in out and "\x1b[1m--- input/v1.Pod.shop.web-7d4b9c\x1b[0m" in out


@pytest.mark.parametrize(
    ("flag", "env"), [("--no-color", None), (None, "1")], ids=["--no-color", "NO_COLOR set (no-color.org)"]
)
def test_no_colour_with_no_color_or_NO_COLOR(monkeypatch: pytest.MonkeyPatch, flag: str | None, env: str | None) -> None:
    if env is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", env)
    argv = ["apply", str(POLICIES), "-r", str(POD), "--diff", *([flag] if flag else [])]
    code, out = run_on_terminal(monkeypatch, *argv)
    assert code == 0 and "+    team: unowned" in out and not ANSI.search(out)


def test_test_results_are_coloured_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    suite = str(ROOT / "tests/data/kyverno-tests/labels")
    code, out = run_on_terminal(monkeypatch, "test", suite)
    assert code == 0 and "\x1b[32mPass\x1b[0m" in out
    for flag in ("--no-color", "--remove-color"):  # --remove-color: kyverno test's name
        code, plain = run_on_terminal(monkeypatch, "test", suite, flag)
        assert code == 0 and "│ Pass   │" in plain and not ANSI.search(plain)


def test_a_failing_result_is_red_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    code, out = run_on_terminal(monkeypatch, "test", str(ROOT / "tests/data/failing-kyverno-tests/wrong-expectation"))
    assert code == 1 and "\x1b[31mFail\x1b[0m" in out


# --- help --------------------------------------------------------------------------------------------


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("command", list(subparsers()))
def test_help_is_plain_text_and_lists_the_exit_codes(command: str) -> None:
    text = subparsers()[command].format_help()
    assert "``" not in text and ":mod:" not in text and ":class:" not in text
    codes = text[text.index("exit codes:") :].splitlines()[1:]
    assert [line.split()[0] for line in codes][-1] == "70" and {"0", "2"} <= {line.split()[0] for line in codes}
