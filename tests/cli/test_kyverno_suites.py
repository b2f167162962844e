"""``celmut test`` on Kyverno-format suites, run as a user runs them (``celmut.main.main``, and one
process), asserting the printed table and the exit code (issue 14). Each suite under
tests/data/kyverno-tests/ pins one behaviour of ``kyverno test`` (cmd/cli/kubectl-kyverno/commands/
test); its kyverno-test.yaml says which and cites the upstream file. The failing ones live in
tests/data/failing-kyverno-tests/."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from celmut.main import main

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "tests" / "data" / "kyverno-tests"
FAILING = ROOT / "tests" / "data" / "failing-kyverno-tests"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["test", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def tables(out: str) -> list[str]:
    """Every boxed table printed, as text."""
    found: list[str] = []
    lines = out.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("┌"):
            end = next(i for i in range(index, len(lines)) if lines[i].startswith("└"))
            found.append("\n".join(lines[index : end + 1]))
    return found


def rows(table: str) -> list[str]:
    """The body rows of a table, cells stripped and joined with ' | '."""
    body = [line for line in table.splitlines()[3:-1]]
    return [" | ".join(cell.strip() for cell in line.strip("│").split("│")) for line in body]


def test_resources_without_namespaces_are_in_default(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(SUITES / "no-namespace"))
    assert code == 0, out + err
    [table] = tables(out)
    assert table.splitlines()[1] == "│ ID │ POLICY     │ RULE │ RESOURCE                       │ RESULT │ REASON │"
    assert rows(table) == [
        "1 | add-labels |  | v1/Pod/default/web | Pass | Ok",
        "2 | add-labels |  | apps/v1/Deployment/default/api | Pass | Ok",
        "3 | add-labels |  | v1/Namespace/team-a | Pass | Ok",  # cluster-scoped: named default/team-a, as Kyverno
    ]
    assert "\nTest Summary: 3 tests passed and 0 tests failed\n" in out


def test_cluster_resource_wrappers_are_unwrapped(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(SUITES / "cluster-resource-wrapper"))
    assert code == 0
    assert rows(tables(out)[0]) == ["1 | paint-widgets |  | example.com/v1/Widget/blue-widget | Pass | Ok"]
    assert "Loading Kubernetes resources ...\n" in out


def test_a_context_file_serves_images_resources_and_global_context(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(SUITES / "context-file"))
    assert code == 0
    assert rows(tables(out)[0]) == ["1 | describe-image |  | v1/Pod/default/web | Pass | Ok"]


def test_global_context_entries_are_served_from_mocks_and_cluster_resources(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(SUITES / "global-context-entries"), "--detailed-results")
    assert code == 0
    assert rows(tables(out)[0]) == ["1 | tag-from-global-context |  | v1/Pod/shop/web | Pass | Ok | success"]


def test_a_result_without_a_patched_document_is_dropped_with_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(SUITES / "missing-patched-document"))
    assert code == 0
    assert rows(tables(out)[0]) == ["1 | add-team |  | v1/Pod/shop/web | Pass | Ok"]
    assert (
        "note: results[0] (policy add-team): patched.yaml has no document for v1/Pod/shop/cache: kyverno test drops "
        "this result (failOnMissingResources: true fails it instead)\n"
    ) in out
    assert "Test Summary: 1 tests passed and 0 tests failed" in out  # no row, no count: as Kyverno


def test_fail_on_missing_resources_fails_the_result_instead(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(FAILING / "fail-on-missing-resources"))
    assert code == 1
    assert rows(tables(out)[0])[1] == "2 | add-team |  | v1/Pod/shop/cache | Fail | Resource error"


def test_excluded_resources_pass_as_excluded_and_their_files_are_not_read(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(SUITES / "excluded"))
    assert code == 0, out + err
    assert rows(tables(out)[0]) == [
        "1 | inject-sidecar |  | v1/Pod/default/opted-out | Pass | Excluded",
        "2 | inject-sidecar |  | v1/Pod/default/legacy | Pass | Excluded",  # its never-written.yaml is not read
        "3 | inject-sidecar |  | v1/Pod/default/app | Pass | Ok",
    ]
    assert (
        "note: results[1] (policy inject-sidecar): v1/Pod/default/legacy is Excluded (objectSelector does not match); "
        "kyverno test reports that as a pass whatever the expected result (pass)\n"
    ) in out
    assert "Test Summary: 3 tests passed and 0 tests failed" in out  # Excluded counts as a skip, shown as passed


def test_results_for_other_policy_kinds_are_listed_at_the_end(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(SUITES / "mixed-policy-kinds"))
    assert code == 0
    results, others = tables(out)
    assert rows(results) == ["1 | default-pull-policy |  | v1/Pod/default/web | Pass | Ok"]
    assert rows(others) == [
        "1 | require-team-label |  | web | Not evaluated | ValidatingPolicy: celmut runs mutating policies only",
        "2 | require-requests | check-requests | web | Not evaluated | ClusterPolicy: celmut runs mutating policies only",
    ]
    assert out.index("Test Summary: 1 tests passed and 0 tests failed") < out.index(
        "Not evaluated by celmut: 2 results for policy kinds it does not run; they change nothing (--require-all "
        "fails them)"
    )


def test_require_all_fails_the_results_celmut_does_not_evaluate(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(SUITES / "mixed-policy-kinds"), "--require-all")
    assert code == 1
    assert "Test Summary: 1 tests passed and 2 tests failed" in out


def test_a_sentence_as_match_condition_name_is_accepted_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(SUITES / "long-match-condition-name"))
    assert code == 0
    assert rows(tables(out)[0]) == [
        "1 | add-ttl-to-jobs |  | batch/v1/Job/batch/nightly | Pass | Ok",
        "2 | add-ttl-to-jobs |  | batch/v1/Job/batch/keep-forever | Pass | Ok",
    ]
    assert "is not a qualified name; accepted as Kyverno does for a MutatingPolicy" in err


def test_a_missing_patched_file_that_is_needed_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(FAILING / "missing-patched-file"))
    assert code == 2
    assert rows(tables(out)[0]) == ["1 | add-team |  | v1/Pod/shop/web | Fail | Resource error"]
    assert err.strip().endswith("patchedResources: " + str(FAILING / "missing-patched-file/not-there.yaml") + ": no such file or directory")
    assert "Traceback" not in out + err


def test_a_failing_row_shows_the_diff_from_expected_to_actual(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(FAILING / "wrong-expectation"))
    assert code == 1
    assert (
        "Resource diff in row 1: apps/v1/Deployment/shop/web differs from patched.yaml:\n"
        "--- expected/apps.v1.Deployment.shop.web\n"
        "+++ actual/apps.v1.Deployment.shop.web\n"
        "@@ -3,7 +3,7 @@\n"
        " metadata:\n"
        "   labels:\n"
        "     app: web\n"
        "-    env: staging\n"
        "+    env: production\n"
    ) in out


def test_fail_only_prints_the_failures_in_one_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(FAILING / "wrong-expectation"), "--fail-only")
    assert code == 1
    assert "\nTest Summary: 1 out of 2 tests failed\n" in out
    assert "Aggregated Failed Test Cases : \n" in out
    [failed] = tables(out)
    assert rows(failed) == ["1 | add-env-label |  | apps/v1/Deployment/shop/web | Fail | Resource diff"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("policy=default-pull-*", ["1 | default-pull-policy |  | v1/Pod/default/web | Pass | Ok"]),
        ("policy=nothing-like-this", []),
    ],
)
def test_the_test_case_selector_filters_results(capsys: pytest.CaptureFixture[str], selector: str, expected: list[str]) -> None:
    code, out, _ = run(capsys, str(SUITES / "mixed-policy-kinds"), "--test-case-selector", selector)
    assert code == 0
    assert rows(tables(out)[0]) == expected
    assert "Not evaluated" not in out


def test_a_resource_selector_narrows_the_resources_checked(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(SUITES / "excluded"), "-t", "resource=default/app")
    assert code == 0
    assert rows(tables(out)[0]) == ["1 | inject-sidecar |  | v1/Pod/default/app | Pass | Ok"]


def test_a_bad_selector_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(SUITES / "excluded"), "-t", "polcy=x")
    assert code == 2 and "--test-case-selector: 'polcy=x': expected policy=GLOB" in err


def test_no_test_files_pass_unless_tests_are_required(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, str(tmp_path))
    assert code == 0 and out == "No test yamls available\n"  # as kyverno test
    code, _, err = run(capsys, str(tmp_path), "--require-tests")
    assert code == 1 and "no tests found" in err


def test_json_output_has_kyvernos_keys_and_nothing_else_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(FAILING / "wrong-expectation"), "-o", "json")
    assert code == 1
    first, second = json.loads(out)
    assert {k: first[k] for k in ("ID", "POLICY", "RESOURCE", "RESULT", "REASON")} == {
        "ID": 1,
        "POLICY": "add-env-label",
        "RESOURCE": "apps/v1/Deployment/shop/web",
        "RESULT": "Fail",
        "REASON": "Resource diff",
    }
    assert "-    env: staging\n+    env: production\n" in first["DIFF"]
    assert second["RESULT"] == "Pass" and "DIFF" not in second


def test_junit_xml_for_ci(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    code, out, _ = run(capsys, str(SUITES / "mixed-policy-kinds"), str(FAILING / "wrong-expectation"), "--junit", str(report))
    assert code == 1 and "Test Summary: 2 tests passed and 1 tests failed" in out  # the table is still printed
    root = ET.fromstring(report.read_text())
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "5", "failures": "1", "errors": "0", "skipped": "2"
    }
    failure = root.find("./testsuite[@name='wrong-expectation']/testcase/failure")
    assert failure is not None and failure.get("message") == "Resource diff"
    assert "+    env: production" in (failure.text or "")
    code, out, _ = run(capsys, str(SUITES / "mixed-policy-kinds"), "-o", "junit")
    assert ET.fromstring(out).get("skipped") == "2"


def test_json_payloads_are_mutated_by_json_mode_policies_in_file_order(capsys: pytest.CaptureFixture[str]) -> None:
    """Upstream test/cli/test-mutating-policy/json-document-mutation's shape: results name documents
    by their declared paths and compare each policy's own output, integers above 2^53 exact."""
    code, out, err = run(capsys, str(SUITES / "json-documents"))
    assert code == 0, out + err
    assert rows(tables(out)[0]) == [
        "1 | tag-origin |  | ledger.json | Pass | Ok",
        "2 | copy-origin |  | ledger.json | Pass | Ok",  # needs tag-origin's field: file order, not by name
        "3 | guarded-rebate |  | ledger.json | Pass | Ok",  # a failed test rolled the policy back: skip
        "4 | review-open |  | archive/ledger.json | Pass | Ok",  # matchCondition false: skip
        "5 | mark-small |  | ledger.json | Pass | Ok",  # PolicyException: skip
        "6 | mark-small |  | archive/ledger.json | Pass | Ok",
    ]
    assert "\nTest Summary: 6 tests passed and 0 tests failed\n" in out


def test_a_json_document_root_can_change_type(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(SUITES / "json-document-roots"))
    assert code == 0, out + err
    assert [r.split(" | ")[1] for r in rows(tables(out)[0])] == ["listify", "first-item", "as-text"]


def test_a_failing_json_policy_is_an_error_result_and_stops_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(SUITES / "json-document-error"))
    assert code == 0, out + err
    assert rows(tables(out)[0])[1] == "2 | rename-missing |  | settings.json | Pass | Ok"


def test_a_json_document_that_differs_fails_with_a_diff(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(FAILING / "json-document-mismatch"))
    assert code == 1, out + err
    assert rows(tables(out)[0]) == [
        "1 | increment |  | counter.json | Fail | Resource diff",
        "2 | increment |  | flags.json | Fail | Resource error",  # the run failed: no document published
    ]
    assert "--- expected/counter.json\n+++ actual/counter.json\n@@ -1 +1 @@\n-5\n+4\n" in out
    assert "Traceback" not in out + err


def test_the_single_json_payload_is_mutated_by_every_mutating_policy(capsys: pytest.CaptureFixture[str]) -> None:
    """Upstream json-payload and non-k8s-json's shape: the older ``jsonPayload`` field, a
    Kubernetes-mode policy, a result without resources (output.go then checks every result)."""
    code, out, err = run(capsys, str(SUITES / "json-payload-single"))
    assert code == 0, out + err
    assert rows(tables(out)[0]) == ["1 | stamp-order |  | order.json | Pass | Ok"]


def test_a_kubernetes_mode_policy_skips_json_payloads(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``jsonPayloads`` (JSON document mutation): a Kubernetes-mode MutatingPolicy is skipped
    (processor/json.go), so a result expecting pass fails, and one expecting skip passes."""
    single = SUITES / "json-payload-single"
    for name in ("policy.yaml", "order.json"):
        (tmp_path / name).write_text((single / name).read_text())
    (tmp_path / "kyverno-test.yaml").write_text(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: t}\npolicies: [policy.yaml]\n"
        "jsonPayloads: [order.json]\nresults:\n"
        "- {policy: stamp-order, isMutatingPolicy: true, resources: [order.json], result: skip}\n"
        "- {policy: stamp-order, isMutatingPolicy: true, result: pass}\n"
    )
    code, out, err = run(capsys, str(tmp_path))
    assert code == 1, out + err
    assert rows(tables(out)[0]) == [
        "1 | stamp-order |  | order.json | Pass | Ok",
        "2 | stamp-order |  | order.json | Fail | Want pass, got skip",
    ]


def test_mutate_existing_targets_are_reported_only_for_target_resources(capsys: pytest.CaptureFixture[str]) -> None:
    """Upstream mutate-existing-same-trigger-and-target's shape: one row, not the trigger twice."""
    code, out, err = run(capsys, str(SUITES / "mutate-existing-own-trigger"))
    assert code == 0, out + err
    assert rows(tables(out)[0]) == ["1 | stamp-queues |  | v1/Service/jobs/queue | Pass | Ok"]


def test_an_unbound_admission_policy_applies_as_in_the_kyverno_cli(capsys: pytest.CaptureFixture[str]) -> None:
    """Upstream test-mutating-admission-policy/with-apply-configuration's shape (a MAP, no binding)."""
    code, out, err = run(capsys, str(SUITES / "admission-policy-unbound"))
    assert code == 0, out + err
    assert rows(tables(out)[0]) == [
        "1 | tier-secrets |  | v1/Secret/vault/plain | Pass | Ok",
        "2 | tier-secrets |  | v1/Secret/vault/tiered | Pass | Ok",  # no effect: skip, as expected
    ]
    assert "note: MutatingAdmissionPolicy tier-secrets has no binding: applied to everything" in out


def test_test_fields_are_matched_case_insensitively_as_encoding_json_does(capsys: pytest.CaptureFixture[str]) -> None:
    """Upstream check-user-info writes `userInfo:` for the Test's `userinfo` field; Kyverno decodes a Test
    through encoding/json (cmd/cli/kubectl-kyverno/test/load.go), which accepts any case."""
    code, out, err = run(capsys, str(SUITES / "field-name-case"))
    assert code == 0, out + err
    assert rows(tables(out)[0]) == [
        "1 | stamp-requester |  | v1/ConfigMap/helpdesk/ticket-17 | Pass | Ok",  # the user file was read
        "2 | stamp-requester |  | v1/ConfigMap/helpdesk/ticket-18 | Pass | Ok",  # already stamped: skip
    ]
    assert "not a field" not in err


def test_values_and_context_struct_keys_are_matched_case_insensitively(capsys: pytest.CaptureFixture[str]) -> None:
    """Kyverno reads Values and Context files with UnmarshalStrict (cmd/cli/kubectl-kyverno/values/load.go,
    context/load.go → utils/common LoadYAML): struct keys fold at every level, map keys (labels) do not."""
    code, out, err = run(capsys, str(SUITES / "values-context-field-case"))
    assert code == 0, out + err
    assert rows(tables(out)[0]) == [
        "1 | stamp-region |  | v1/ConfigMap/shop/orders | Pass | Ok",  # NamespaceSelector/Labels and Spec/GlobalContext read
        "2 | stamp-region |  | v1/ConfigMap/lab/scratch | Pass | Excluded",  # label `tier` is not the selector's `Tier`
    ]


def test_every_suite_passes_as_a_user_runs_it() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "celmut", "test", str(SUITES)], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Test Summary: 34 tests passed and 0 tests failed" in result.stdout
    assert "Traceback" not in result.stderr
