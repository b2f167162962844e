"""``celmut apply --policy-report`` with mutateExisting targets (``--target-resources``), as Kyverno's CLI
reports them: kyverno/kyverno ``cmd/cli/kubectl-kyverno/processor/policy_processor.go`` evaluates each
target against each mutateExisting policy and keeps one engine response per (target, policy) with rules,
whose ``Resource`` is the *trigger* (a passing rule carries the target as its ``PatchedTarget``);
``cmd/cli/kubectl-kyverno/report/report.go`` ``ComputePolicyReportResult`` makes each rule a result with
``ToPolicyReportResult`` and the trigger as its subject. ``patched-target`` is **not** among the
properties: only the cluster's mutation reports add it (``pkg/utils/report/results.go``
``MutationEngineResponseToReportResults``), never the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from celmut.main import main

NS_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["namespaces"]}
CM_TARGETS = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]}
TOUCH = 'Object{metadata: Object.metadata{labels: Object.metadata.labels{touched: "yes"}}}'
FAILING = "Object{metadata: Object.metadata{labels: Object.metadata.labels{touched: object.data.missing}}}"


def mutate_existing(name: str, expression: str = TOUCH, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": name},
        "spec": {
            "evaluation": {"admission": {"enabled": False}, "mutateExisting": {"enabled": True}},
            "matchConstraints": {"resourceRules": [NS_RULE]},
            "targetMatchConstraints": CM_TARGETS,
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}],
            **spec,
        },
    }


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def configmap(name: str, **labels: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


TRIGGER = {"apiVersion": "v1", "kind": "Namespace", "name": "trigger"}
CASES = [
    (
        "a target it changes: pass / success, the trigger as subject, no patched-target property",
        [mutate_existing("touch")],
        [configmap("target")],
        [("touch", "pass", "success", {"process": "background scan"})],
    ),
    (
        "a target that already has the mutation: pass too (the rule passed; the CLI does not scan)",
        [mutate_existing("touch")],
        [configmap("target", touched="yes")],
        [("touch", "pass", "success", {"process": "background scan"})],
    ),
    (
        "two targets: one result each, both about the trigger",
        [mutate_existing("touch")],
        [configmap("one"), configmap("two")],
        [
            ("touch", "pass", "success", {"process": "background scan"}),
            ("touch", "pass", "success", {"process": "background scan"}),
        ],
    ),
    (
        "a targetMatchCondition leaves the target out: skip / skip (mpol engine.go)",
        [mutate_existing("touch", targetMatchConditions=[{"name": "not-this", "expression": "false"}])],
        [configmap("target")],
        [("touch", "skip", "skip", {"process": "background scan"})],
    ),
    (
        "a mutation that fails on the target: error, rule evaluation",
        [mutate_existing("breaks", FAILING)],
        [configmap("target")],
        [("breaks", "error", None, {"process": "background scan"})],
    ),
    (
        "background and admission off: an empty process (results.go selectProcess has neither)",
        [
            mutate_existing(
                "touch",
                evaluation={
                    "admission": {"enabled": False},
                    "mutateExisting": {"enabled": True},
                    "background": {"enabled": False},
                },
            )
        ],
        [configmap("target")],
        [("touch", "pass", "success", {"process": ""})],
    ),
]


@pytest.mark.parametrize(("what", "policies", "targets", "expected"), CASES, ids=[c[0] for c in CASES])
def test_mutate_existing_targets_in_the_policy_report_as_kyverno_apply_prints_them(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    what: str,
    policies: list[Any],
    targets: list[Any],
    expected: list[tuple[str, str, str | None, dict[str, str]]],
) -> None:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump_all(policies))
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(namespace("trigger")))
    (tmp_path / "t.yaml").write_text(yaml.safe_dump_all(targets))
    args = ["apply", str(tmp_path / "p.yaml"), "-r", str(tmp_path / "r.yaml")]
    main([*args, "--target-resources", str(tmp_path / "t.yaml"), "--policy-report"])
    reports = [r for r in yaml.safe_load_all(capsys.readouterr().out) if r]
    [report] = reports
    assert (report["kind"], report["metadata"]["name"]) == ("ClusterPolicyReport", "merged")
    got = report["results"]
    assert len(got) == len(expected), got
    for result, (policy, outcome, message, properties) in zip(got, expected, strict=True):
        assert result["policy"] == policy and result["result"] == outcome
        if message is not None:
            assert result["message"] == message
        else:
            assert result["message"].startswith("failed to evaluate policy: ") and result["rule"] == "evaluation"
        assert result["properties"] == properties  # no patched-target: ToPolicyReportResult alone
        assert result["subjects"] == [TRIGGER]
    counts = {k: sum(1 for e in expected if e[1] == k) for k in ("error", "fail", "pass", "skip", "warn")}
    assert report["summary"] == counts
