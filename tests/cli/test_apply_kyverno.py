"""``celmut apply`` with the flags and output a ``kyverno apply`` user types (issue 14, item 9;
cmd/cli/kubectl-kyverno/commands/apply/command.go): -f/--values-file, --set, -u/--userinfo,
--context-file, ClusterResource wrappers and GlobalContextEntries in --cluster-resources, --table,
--detailed-results, --remove-color, --warn-exit-code, --continue-on-fail, kyverno's -o PATH as
--output-file/--output-dir, and the ``pass: N, fail: N, warn: N, error: N, skip: N`` counts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from celmut.main import main
from tests.cli.test_kyverno_suites import rows, tables

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "kyverno-apply"
SUITES = ROOT / "tests" / "data" / "kyverno-tests"
POLICY, POD, CLUSTER = str(DATA / "policy.yaml"), str(DATA / "pod.yaml"), str(DATA / "cluster.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["apply", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def annotations(out: str) -> dict[str, str]:
    [pod] = list(yaml.safe_load_all(out))
    return dict(pod["metadata"]["annotations"])


@pytest.mark.parametrize(
    "flags",
    [
        ("--set", "request.operation=UPDATE", "-u", str(DATA / "userinfo.yaml")),
        ("-f", str(DATA / "values.yaml"), "--userinfo", str(DATA / "userinfo.yaml")),
        ("--values-file", str(DATA / "values.yaml"), "-u", str(DATA / "userinfo.yaml")),
    ],
)
def test_values_set_and_userinfo_reach_the_request(capsys: pytest.CaptureFixture[str], flags: tuple[str, ...]) -> None:
    code, out, err = run(capsys, POLICY, "-r", POD, "--cluster-resources", CLUSTER, *flags)
    assert code == 0, err
    assert annotations(out) == {
        "user": "alice@example.com",
        "operation": "UPDATE",
        "namespace": "default",  # the Pod has no namespace: admitted in default, as kyverno apply reads it
        "web-replicas": "4",  # a GlobalContextEntry (apiCall urlPath) inside a ClusterResource wrapper
    }
    [pod] = list(yaml.safe_load_all(out))
    assert "namespace" not in pod["metadata"]  # the assumed namespace is not written back (kubectl's applies)
    assert err.splitlines()[0] == "Applying 1 policy rule(s) to 1 resource(s)..."
    assert err.splitlines()[-1] == "pass: 1, fail: 0, warn: 0, error: 0, skip: 0"


def test_set_and_values_file_together_are_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, POLICY, "-r", POD, "--set", "a=b", "-f", str(DATA / "values.yaml"))
    assert code == 2 and "pass the values either with --set or with --values-file" in err


def test_a_set_without_a_value_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, POLICY, "-r", POD, "--set", "request.operation")
    assert code == 2 and "--set 'request.operation': expected KEY=VALUE" in err


def test_context_file_serves_image_metadata(capsys: pytest.CaptureFixture[str]) -> None:
    suite = SUITES / "context-file"
    code, out, err = run(
        capsys, str(suite / "policy.yaml"), "-r", str(suite / "pod.yaml"), "--context-file", str(suite / "context.yaml")
    )
    assert code == 0, err
    [pod] = list(yaml.safe_load_all(out))
    assert pod["metadata"]["labels"] == {"arch": "amd64", "owner": "team-a"}


def test_table_prints_kyvernos_results_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, POLICY, "-r", POD, "--cluster-resources", CLUSTER, "--table", "--detailed-results")
    assert code == 0
    [table] = tables(out)
    header = [cell.strip() for cell in table.splitlines()[1].strip("│").split("│")]
    assert header == ["ID", "POLICY", "RULE", "RESOURCE", "RESULT", "MESSAGE"]
    assert rows(table) == ["1 | stamp-request |  | v1/Pod/default/web | Pass | success"]


def test_skips_and_errors_are_counted(capsys: pytest.CaptureFixture[str]) -> None:
    suite = SUITES / "long-match-condition-name"  # nightly applies, keep-forever's condition is false
    code, _, err = run(capsys, str(suite / "policy.yaml"), "-r", str(suite / "jobs.yaml"))
    assert code == 0 and err.splitlines()[-1] == "pass: 1, fail: 0, warn: 0, error: 0, skip: 1"
    code, _, err = run(capsys, POLICY, "-r", POD)  # no GlobalContextEntry: null has no string()
    assert code == 1 and err.splitlines()[-1] == "pass: 0, fail: 0, warn: 0, error: 1, skip: 0"


def test_errors_exit_1_whatever_the_warn_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    """kyverno apply: --warn-exit-code is for warnings alone; failures and errors still exit 1."""
    code, _, _ = run(capsys, POLICY, "-r", POD, "--warn-exit-code", "3", "--continue-on-fail")
    assert code == 1
    code, _, _ = run(capsys, POLICY, "-r", POD, "--cluster-resources", CLUSTER, "--warn-exit-code", "3")
    assert code == 0


def test_continue_on_fail_applies_to_every_resource(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    two = tmp_path / "two.yaml"
    two.write_text(Path(POD).read_text() + "---\n" + Path(POD).read_text().replace("name: web", "name: api"))
    code, out, err = run(capsys, POLICY, "-r", str(two), "--continue-on-fail")
    assert code == 1 and err.count("denied: Pod default/") == 2  # each resource was tried
    assert out == ""  # both denied: nothing for `kubectl apply -f -` (tests/cli/test_denied_output.py)


def test_output_file_and_directory_take_kyvernos_dash_o_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "mutated.yaml"
    code, out, err = run(capsys, POLICY, "-r", POD, "--cluster-resources", CLUSTER, "--output-file", str(target))
    assert code == 0 and out == "" and f"wrote 1 resources to {target}" in err
    assert yaml.safe_load(target.read_text())["metadata"]["annotations"]["web-replicas"] == "4"
    directory = tmp_path / "out"
    code, _, _ = run(capsys, POLICY, "-r", POD, "--cluster-resources", CLUSTER, "--output-dir", str(directory))
    assert code == 0 and [p.name for p in directory.iterdir()] == ["web-mutated.yaml"]


def test_a_path_given_to_dash_o_points_to_output_file(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["apply", POLICY, "-r", POD, "-o", "out/mutated.yaml"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "'out/mutated.yaml' is not an output format (yaml, json, name, patch): celmut's -o is the format" in err
    assert "use --output-file out/mutated.yaml" in err


def test_remove_color_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, POLICY, "-r", POD, "--cluster-resources", CLUSTER, "--diff", "--remove-color")
    assert code == 0 and "+    web-replicas: '4'" in out and "\x1b[" not in out


def test_exceptions_given_with_dash_e_skip_the_policy(capsys: pytest.CaptureFixture[str]) -> None:
    """kyverno apply -e/--exception: the exception's policy is skipped (counted as skip) and the
    header says how many exceptions were read (apply/command.go, "with %d exception(s)")."""
    exception = str(DATA / "exception.yaml")
    for flag in ("-e", "--exception", "--exceptions"):
        code, out, err = run(capsys, POLICY, "--resources", POD, flag, exception)
        assert code == 0, err
        assert "annotations" not in yaml.safe_load(out)["metadata"]
        assert err.splitlines()[0] == "Applying 1 policy rule(s) to 1 resource(s) with 1 exception(s)..."
        assert err.splitlines()[-1] == "pass: 0, fail: 0, warn: 0, error: 0, skip: 1"


def test_a_policy_given_with_dash_e_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, POLICY, "-r", POD, "-e", POLICY)
    assert code == 2 and f"{POLICY}: MutatingPolicy stamp-request: not a PolicyException (given with --exception)" in err


def test_apply_mutates_with_an_unbound_admission_policy_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """kyverno apply uses the same processor: a MAP without a binding mutates (admissionpolicy/mutate.go)."""
    suite = SUITES / "admission-policy-unbound"
    code, out, err = run(capsys, str(suite / "policy.yaml"), "--resource", str(suite / "secrets.yaml"))
    assert code == 0, err
    plain = next(doc for doc in yaml.safe_load_all(out) if doc and doc["metadata"]["name"] == "plain")
    assert plain["metadata"]["labels"] == {"tier": "bronze"}
    assert "warning: MutatingAdmissionPolicy tier-secrets has no binding: applied to everything" in err
