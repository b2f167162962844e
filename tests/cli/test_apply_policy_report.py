"""``celmut apply --policy-report`` prints what ``kyverno apply --policy-report`` prints for the same files:
kyverno/kyverno cmd/cli/kubectl-kyverno/report/report.go (ComputePolicyReports, MergeClusterReports),
commands/apply/command.go (printReports) and pkg/utils/report/results.go (ToPolicyReportResult), with
the MutatingPolicy outcomes of pkg/cel/policies/mpol/engine/engine.go."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from celmut.main import main

CM_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}
ADD_LABEL = 'Object{metadata: Object.metadata{labels: Object.metadata.labels{foo: "bar"}}}'
MUTATIONS = [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": ADD_LABEL}}]


def mpol(name: str, kind: str = "MutatingPolicy", namespace: str = "", **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": kind,
        "metadata": metadata,
        "spec": {"matchConstraints": {"resourceRules": [CM_RULE]}, "mutations": MUTATIONS, **spec},
    }


def cm(name: str, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}


SKIP_B = [{"name": "not-b", "expression": "object.metadata.name != 'b'"}]
MAP = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "MutatingAdmissionPolicy",
    "metadata": {"name": "set-foo"},
    "spec": {
        "matchConstraints": {"resourceRules": [CM_RULE]},
        "reinvocationPolicy": "Never",
        "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": ADD_LABEL}}],
    },
}
MAP_BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "MutatingAdmissionPolicyBinding",
    "metadata": {"name": "set-foo-binding"},
    "spec": {"policyName": "set-foo"},
}
EXCEPTION = {
    "apiVersion": "policies.kyverno.io/v1",
    "kind": "PolicyException",
    "metadata": {"name": "spare-a", "namespace": "default"},
    "spec": {
        "policyRefs": [{"name": "add-foo", "kind": "MutatingPolicy"}],
        "matchConditions": [{"name": "is-a", "expression": "object.metadata.name == 'a'"}],
    },
}

CASES = [
    # engine.go: pass "success"; a false matchCondition: skip "skip"; results.go: process from the spec
    (
        "cluster policy: merged ClusterPolicyReport",
        [mpol("add-foo", matchConditions=SKIP_B)],
        [cm("a"), cm("b")],
        [
            (
                "ClusterPolicyReport",
                "merged",
                "",
                [
                    {
                        "policy": "add-foo",
                        "result": "pass",
                        "message": "success",
                        "properties": {"process": "background scan"},
                        "subject": "a",
                    },
                    {
                        "policy": "add-foo",
                        "result": "skip",
                        "message": "skip",
                        "properties": {"process": "background scan"},
                        "subject": "b",
                    },
                ],
                {"pass": 1, "skip": 1},
            )
        ],
    ),
    # results.go selectProcess: background off, admission on: "admission review"
    (
        "background off: admission review",
        [mpol("add-foo", evaluation={"background": {"enabled": False}})],
        [cm("a")],
        [
            (
                "ClusterPolicyReport",
                "merged",
                "",
                [
                    {
                        "policy": "add-foo",
                        "result": "pass",
                        "properties": {"process": "admission review"},
                        "subject": "a",
                    },
                ],
                {"pass": 1},
            )
        ],
    ),
    # report.go ComputePolicyReports: a namespaced policy gets its own PolicyReport (after ---)
    (
        "namespaced policy: its own PolicyReport",
        [mpol("ns-foo", "NamespacedMutatingPolicy", "default")],
        [cm("a")],
        [
            (
                "PolicyReport",
                "ns-foo",
                "default",
                [
                    {"policy": "default/ns-foo", "result": "pass", "subject": "a"},
                ],
                {"pass": 1},
            )
        ],
    ),
    # engine.go: an exception: skip, rule "exception"; results.go: property exceptions
    (
        "exception: skip",
        [mpol("add-foo"), EXCEPTION],
        [cm("a")],
        [
            (
                "ClusterPolicyReport",
                "merged",
                "",
                [
                    {
                        "policy": "add-foo",
                        "result": "skip",
                        "rule": "exception",
                        "message": "rule is skipped due to policy exception: default/spare-a",
                        "properties": {"exceptions": "spare-a", "process": "background scan"},
                        "subject": "a",
                    },
                ],
                {"skip": 1},
            )
        ],
    ),
    # a PolicyException with reportResult pass: RulePass("exception", ..., "rule is passed due to policy
    # exception: <ns/name>") (chainsaw mutating-policies/reporting/with-exception-pass-result, in-cluster too)
    (
        "exception with reportResult pass: pass",
        [mpol("add-foo"), {**EXCEPTION, "spec": {**EXCEPTION["spec"], "reportResult": "pass"}}],
        [cm("a")],
        [
            (
                "ClusterPolicyReport",
                "merged",
                "",
                [
                    {
                        "policy": "add-foo",
                        "result": "pass",
                        "rule": "exception",
                        "message": "rule is passed due to policy exception: default/spare-a",
                        "properties": {"exceptions": "spare-a", "process": "background scan"},
                        "subject": "a",
                    },
                ],
                {"pass": 1},
            )
        ],
    ),
    # results.go: a MAP result is named after the MAP (policy and rule) with its binding as mapBinding
    (
        "MutatingAdmissionPolicy",
        [MAP, MAP_BINDING],
        [cm("a")],
        [
            (
                "ClusterPolicyReport",
                "merged",
                "",
                [
                    {
                        "policy": "set-foo",
                        "rule": "set-foo",
                        "result": "pass",
                        "source": "MutatingAdmissionPolicy",
                        "message": "mutation is successfully applied",
                        "properties": {"mapBinding": "set-foo-binding", "process": "background scan"},
                        "subject": "a",
                    },
                ],
                {"pass": 1},
            )
        ],
    ),
]


@pytest.mark.parametrize(("what", "policies", "resources", "expected"), CASES, ids=[c[0] for c in CASES])
def test_policy_report_as_kyverno_apply_prints_it(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    what: str,
    policies: list[Any],
    resources: list[Any],
    expected: list[Any],
) -> None:
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all(policies))
    (tmp_path / "resources.yaml").write_text(yaml.safe_dump_all(resources))
    code = main(["apply", str(tmp_path / "policies.yaml"), "-r", str(tmp_path / "resources.yaml"), "--policy-report"])
    out = capsys.readouterr().out
    assert code == 0
    if any(kind == "PolicyReport" for kind, *_ in expected):
        assert out.startswith("---\n")  # printReports: "---" before each PolicyReport
    reports = [r for r in yaml.safe_load_all(out) if r]
    assert len(reports) == len(expected)
    for report, (kind, name, namespace, results, counts) in zip(reports, expected, strict=True):
        assert report["apiVersion"] == "wgpolicyk8s.io/v1alpha2" and report["kind"] == kind
        assert report["metadata"] == {
            "creationTimestamp": None,
            "name": name,
            **({"namespace": namespace} if namespace else {}),
        }
        assert report["summary"] == {"error": 0, "fail": 0, "pass": 0, "skip": 0, "warn": 0, **counts}
        assert len(report["results"]) == len(results)
        for got, want in zip(report["results"], results, strict=True):
            assert got["scored"] is True and got["timestamp"]["seconds"] > 0
            assert got["source"] == want.get("source", "KyvernoMutatingPolicy")
            assert got["subjects"] == [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": want["subject"], "namespace": "default"}
            ]
            for key in ("policy", "result", "message", "rule", "properties"):
                if key in want:
                    assert got.get(key) == want[key], key


def test_json_output_is_one_json_document_per_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import json

    (tmp_path / "p.yaml").write_text(yaml.safe_dump(mpol("add-foo")))
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(cm("a")))
    assert (
        main(["apply", str(tmp_path / "p.yaml"), "-r", str(tmp_path / "r.yaml"), "--policy-report", "-o", "json"]) == 0
    )
    [line] = [line for line in capsys.readouterr().out.splitlines() if line]
    assert json.loads(line)["kind"] == "ClusterPolicyReport"
