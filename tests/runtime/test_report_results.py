"""Report results from policy outcomes, each case pinned to the Kyverno source it follows
(kyverno/kyverno pkg/cel/policies/mpol/engine/engine.go handlePolicy, pkg/controllers/report/utils/
scanner.go ScanResource, pkg/utils/report/results.go ToPolicyReportResult)."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.runtime.report_objects import ResourceRef, build_report
from celmut.runtime.report_results import (
    PROCESS_ADMISSION,
    PROCESS_BACKGROUND,
    PolicyReporting,
    ReportResult,
    result_of,
)
from celmut.runtime.results import PolicyOutcome

MPOL = PolicyReporting(key="add-labels", source="KyvernoMutatingPolicy")
NS_MPOL = PolicyReporting(key="team-a/add-labels", source="KyvernoMutatingPolicy")
MAP = PolicyReporting(key="set-replicas", source="MutatingAdmissionPolicy")
UNSCORED = PolicyReporting(key="add-labels", source="KyvernoMutatingPolicy", scored=False)
ANNOTATED = PolicyReporting(key="add-labels", source="KyvernoMutatingPolicy", category="Best Practices", severity="low")


def outcome(status: str, **fields: Any) -> PolicyOutcome:
    return PolicyOutcome(policy="add-labels", kind="MutatingPolicy", status=status, **fields)  # type: ignore[arg-type]


CASES = [
    # scanner.go: a pass whose patched resource differs from the stored one is a fail
    ("background, would change: fail", outcome("applied"), MPOL, PROCESS_BACKGROUND,
     {"result": "fail", "message": "mutation is not applied", "rule": "",
      "properties": {"process": "background scan"}}),
    # engine.go: RulePass("", Mutation, "success")
    ("background, already mutated: pass", outcome("unchanged"), MPOL, PROCESS_BACKGROUND,
     {"result": "pass", "message": "success", "rule": ""}),
    ("admission, applied: pass", outcome("applied"), MPOL, PROCESS_ADMISSION,
     {"result": "pass", "message": "success", "properties": {"process": "admission review"}}),
    # engine.go: CompiledPolicy.Evaluate returns nil (a matchCondition is false): RuleSkip("", ..., "skip")
    ("matchCondition false: skip", outcome("skipped", cause="matchCondition", cause_name="c0"), MPOL,
     PROCESS_BACKGROUND, {"result": "skip", "message": "skip", "rule": ""}),
    # engine.go: RuleSkip("exception", ..., "rule is skipped due to policy exception: <keys>"); results.go
    # adds the exceptions property (names, comma-separated)
    ("exception: skip", outcome("excepted", cause="exception", cause_name="team-a/spare-b"), MPOL,
     PROCESS_BACKGROUND,
     {"result": "skip", "rule": "exception", "message": "rule is skipped due to policy exception: team-a/spare-b",
      "properties": {"exceptions": "spare-b", "process": "background scan"}}),
    # engine.go: RuleError("evaluation", ..., "failed to evaluate policy", err)
    ("error", outcome("error", reason="no such key: team", path="spec.mutations[0]"), MPOL, PROCESS_BACKGROUND,
     {"result": "error", "rule": "evaluation",
      "message": "failed to evaluate policy: spec.mutations[0]: no such key: team"}),
    # results.go: a fail of an unscored policy is a warn
    ("unscored fail: warn", outcome("applied"), UNSCORED, PROCESS_BACKGROUND, {"result": "warn", "scored": False}),
    # results.go: cache.MetaNamespaceKeyFunc names a namespaced policy namespace/name
    ("namespaced policy key", outcome("unchanged"), NS_MPOL, PROCESS_BACKGROUND, {"policy": "team-a/add-labels"}),
    # results.go: category and severity from the policies.kyverno.io annotations
    ("category and severity", outcome("unchanged"), ANNOTATED, PROCESS_BACKGROUND,
     {"category": "Best Practices", "severity": "low"}),
    # results.go: a MAP result names the policy as its rule, its binding as mapBinding; pkg/admissionpolicy
    # mutate: RulePass(name, ..., "mutation is successfully applied")
    ("MutatingAdmissionPolicy pass", outcome("unchanged", binding="set-replicas-binding"), MAP, PROCESS_BACKGROUND,
     {"source": "MutatingAdmissionPolicy", "policy": "set-replicas", "rule": "set-replicas",
      "message": "mutation is successfully applied",
      "properties": {"mapBinding": "set-replicas-binding", "process": "background scan"}}),
]


@pytest.mark.parametrize(("what", "given", "policy", "process", "expected"), CASES, ids=[c[0] for c in CASES])
def test_outcome_to_report_result(
    what: str, given: PolicyOutcome, policy: PolicyReporting, process: str, expected: dict[str, Any]
) -> None:
    result = result_of(given, policy, process, now=1700000000)
    assert result is not None
    serialised = result.to_dict()
    assert serialised["timestamp"] == {"nanos": 0, "seconds": 1700000000}
    for key, value in expected.items():
        assert serialised.get(key, "") == value, key


@pytest.mark.parametrize("cause", ["matchConstraints", "namespace", "noBinding", "controlledReplicaSet"])
def test_a_policy_that_does_not_match_has_no_result(cause: str) -> None:
    """engine.go: the matcher says no match: no rule response, so no result."""
    assert result_of(outcome("skipped", cause=cause), MPOL, PROCESS_BACKGROUND, 0) is None


def test_the_report_counts_and_sorts_its_results_and_bounds_them() -> None:
    ref = ResourceRef("v1", "ConfigMap", "default", "cm", "uid-1")
    results = [
        ReportResult(policy=f"p{i}", result="fail" if i % 2 else "pass", message="m", source="KyvernoMutatingPolicy")
        for i in (3, 1, 2, 0)
    ]
    report = build_report(ref, results)
    assert [r["policy"] for r in report["results"]] == ["p0", "p1", "p2", "p3"]
    assert report["summary"] == {"error": 0, "fail": 2, "pass": 2, "skip": 0, "warn": 0}
    bounded = build_report(ref, results, limit=3)
    assert len(bounded["results"]) == 3 and sum(bounded["summary"].values()) == 3


def test_a_stored_result_reads_back_equal() -> None:
    result = result_of(outcome("excepted", cause_name="ns/e"), MPOL, PROCESS_BACKGROUND, 42)
    assert result is not None
    assert ReportResult.from_dict(result.to_dict()) == result
