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
    mutate_existing_result,
    patched_target,
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
    (
        "background, would change: fail",
        outcome("applied"),
        MPOL,
        PROCESS_BACKGROUND,
        {
            "result": "fail",
            "message": "mutation is not applied",
            "rule": "",
            "properties": {"process": "background scan"},
        },
    ),
    # engine.go: RulePass("", Mutation, "success")
    (
        "background, already mutated: pass",
        outcome("unchanged"),
        MPOL,
        PROCESS_BACKGROUND,
        {"result": "pass", "message": "success", "rule": ""},
    ),
    (
        "admission, applied: pass",
        outcome("applied"),
        MPOL,
        PROCESS_ADMISSION,
        {"result": "pass", "message": "success", "properties": {"process": "admission review"}},
    ),
    # engine.go: CompiledPolicy.Evaluate returns nil (a matchCondition is false): RuleSkip("", ..., "skip")
    (
        "matchCondition false: skip",
        outcome("skipped", cause="matchCondition", cause_name="c0"),
        MPOL,
        PROCESS_BACKGROUND,
        {"result": "skip", "message": "skip", "rule": ""},
    ),
    # engine.go: RuleSkip("exception", ..., "rule is skipped due to policy exception: <keys>"); results.go
    # adds the exceptions property (names, comma-separated)
    (
        "exception: skip",
        outcome("excepted", cause="exception", cause_name="team-a/spare-b"),
        MPOL,
        PROCESS_BACKGROUND,
        {
            "result": "skip",
            "rule": "exception",
            "message": "rule is skipped due to policy exception: team-a/spare-b",
            "properties": {"exceptions": "spare-b", "process": "background scan"},
        },
    ),
    # engine.go: RuleError("evaluation", ..., "failed to evaluate policy", err)
    (
        "error",
        outcome("error", reason="no such key: team", path="spec.mutations[0]"),
        MPOL,
        PROCESS_BACKGROUND,
        {
            "result": "error",
            "rule": "evaluation",
            "message": "failed to evaluate policy: spec.mutations[0]: no such key: team",
        },
    ),
    # results.go: a fail of an unscored policy is a warn
    ("unscored fail: warn", outcome("applied"), UNSCORED, PROCESS_BACKGROUND, {"result": "warn", "scored": False}),
    # results.go: cache.MetaNamespaceKeyFunc names a namespaced policy namespace/name
    ("namespaced policy key", outcome("unchanged"), NS_MPOL, PROCESS_BACKGROUND, {"policy": "team-a/add-labels"}),
    # results.go: category and severity from the policies.kyverno.io annotations
    (
        "category and severity",
        outcome("unchanged"),
        ANNOTATED,
        PROCESS_BACKGROUND,
        {"category": "Best Practices", "severity": "low"},
    ),
    # results.go: a MAP result names the policy as its rule, its binding as mapBinding; pkg/admissionpolicy
    # mutate: RulePass(name, ..., "mutation is successfully applied")
    (
        "MutatingAdmissionPolicy pass",
        outcome("unchanged", binding="set-replicas-binding"),
        MAP,
        PROCESS_BACKGROUND,
        {
            "source": "MutatingAdmissionPolicy",
            "policy": "set-replicas",
            "rule": "set-replicas",
            "message": "mutation is successfully applied",
            "properties": {"mapBinding": "set-replicas-binding", "process": "background scan"},
        },
    ),
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


def test_an_exception_whose_report_result_is_pass_reports_a_pass() -> None:
    """PolicyException ``spec.reportResult: pass``: RulePass("exception", ..., "rule is passed due to policy
    exception: <ns/name>") with the exceptions property (chainsaw mutating-policies/reporting/
    with-exception-pass-result); any other exception stays a skip."""
    excepted = outcome("excepted", cause="exception", cause_name="team-a/spare-b")
    passed = result_of(excepted, MPOL, PROCESS_BACKGROUND, 0, exception_results={"team-a/spare-b": "pass"})
    assert passed is not None
    assert (passed.result, passed.rule, passed.message) == (
        "pass",
        "exception",
        "rule is passed due to policy exception: team-a/spare-b",
    )
    assert dict(passed.properties) == {"exceptions": "spare-b", "process": "background scan"}
    other = result_of(excepted, MPOL, PROCESS_BACKGROUND, 0, exception_results={"team-a/other": "pass"})
    assert other is not None and other.result == "skip"


def test_audit_annotations_are_properties_under_their_own_keys() -> None:
    """The mpol engine hands a policy's evaluated auditAnnotations to its rule response as properties, which
    ToPolicyReportResult copies (chainsaw mutating-policies/reporting/audit-annotations: ``resource-name``,
    ``data-key``); the runtime keys them ``<policy>.<key>`` as the audit log does. Not on a skip or error."""
    annotated = outcome("unchanged", audit_annotations={"add-labels.resource-name": "cm/x", "add-labels.k.v": "1"})
    result = result_of(annotated, MPOL, PROCESS_BACKGROUND, 0)
    assert result is not None
    assert dict(result.properties) == {"process": "background scan", "resource-name": "cm/x", "k.v": "1"}
    failed = result_of(outcome("error", reason="boom", audit_annotations={"add-labels.a": "b"}), MPOL, "x", 0)
    assert failed is not None and dict(failed.properties) == {"process": "x"}


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        # Go's schema.GroupVersionKind.String(): "<group>/<version>, Kind=<kind>" (core: empty group)
        (
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"}},
            "/v1, Kind=ConfigMap Name=cm Namespace=ns",
        ),
        (
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}},
            "apps/v1, Kind=Deployment Name=web Namespace=prod",
        ),
        ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}, "/v1, Kind=Namespace Name=team-a"),
    ],
)
def test_a_target_mutate_existing_patched_is_a_pass_with_the_patched_target_property(
    target: dict[str, Any], expected: str
) -> None:
    """pkg/background/mpol/processor.go ``audit`` reports on the patched target; results.go
    MutationEngineResponseToReportResults adds ``patched-target`` (getResourceInfo); the process follows the
    policy's evaluation settings (selectProcess)."""
    result = mutate_existing_result(MPOL, target, 7)
    assert patched_target(target) == expected
    assert {k: v for k, v in result.to_dict().items() if k != "timestamp"} == {
        "message": "success",
        "policy": "add-labels",
        "properties": {"patched-target": expected, "process": "background scan"},
        "result": "pass",
        "scored": True,
        "source": "KyvernoMutatingPolicy",
    }
    admission_only = PolicyReporting(key="add-labels", source="KyvernoMutatingPolicy", background=False)
    assert dict(mutate_existing_result(admission_only, target, 7).properties)["process"] == "admission review"
