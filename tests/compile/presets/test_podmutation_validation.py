"""PodMutation validation (every problem reported with its field path, like a CRD would), the
generated policy's metadata, and the CLI: ``celmut compile`` prints the generated policies and
``celmut apply`` accepts a PodMutation file directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from celmut.compile.pipeline import compile_documents
from celmut.compile.presets.podmutation.compiler import COMPILER
from celmut.main import main
from celmut.policy.errors import PolicyError
from celmut.sources.documents import Document
from tests.compile.presets.test_podmutation_support import pod, podmutation


def errors_of(spec: dict[str, Any], **document: Any) -> list[str]:
    doc = {**podmutation("m", spec), **document}
    output = COMPILER.compile([Document("pm.yaml", 0, doc)])
    assert not output.policies
    (error,) = output.errors
    assert isinstance(error, PolicyError) and error.source == "pm.yaml" and error.kind == "PodMutation"
    return [str(e) for e in error.errors]


def matcher(type_: str, value: Any) -> dict[str, Any]:
    return {"type": type_, "value": value}


def group(name: str, percentage: Any, **configuration: Any) -> dict[str, Any]:
    return {"name": name, "percentage": percentage, "configuration": configuration}


INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "unknown matcher type": (
        {"filterV2": {"workload": {"names": [matcher("exact", "a"), matcher("glob", "b*")]}}},
        "spec.filterV2.workload.names[1].type: Unsupported value: 'glob'",
    ),
    "invalid regex": (
        {"filterV2": {"workload": {"namespaces": [matcher("regex", "team-(")]}}},
        "spec.filterV2.workload.namespaces[0].value: Invalid value: invalid regular expression",
    ),
    "regex that only compiles once anchored": (
        {"filterV2": {"workload": {"names": [matcher("regex", "a)|(b")]}}},
        "spec.filterV2.workload.names[0].value: Invalid value: invalid regular expression",
    ),
    "invalid label key regex": (
        {
            "filterV2": {
                "pod": {
                    "labels": {
                        "matchers": [{"keyMatcher": matcher("regex", "[a"), "valueMatcher": matcher("exact", "x")}]
                    }
                }
            }
        },
        "spec.filterV2.pod.labels.matchers[0].keyMatcher.value: Invalid value: invalid regular expression",
    ),
    "missing value matcher": (
        {"filterV2": {"pod": {"labels": {"matchers": [{"keyMatcher": matcher("exact", "a")}]}}}},
        "spec.filterV2.pod.labels.matchers[0].valueMatcher: Required value",
    ),
    "matcher without value": (
        {"filterV2": {"workload": {"kinds": [{"type": "exact"}]}}},
        "spec.filterV2.workload.kinds[0].value: Required value",
    ),
    "unknown label operator": (
        {"filterV2": {"pod": {"excludeLabels": {"matchers": [], "operator": "xor"}}}},
        "spec.filterV2.pod.excludeLabels.operator: Unsupported value: 'xor'",
    ),
    "legacy filter strings": (
        {"filter": {"workload": {"names": ["a", 3]}}},
        "spec.filter.workload.names[1]: must be a string",
    ),
    "legacy label without key": (
        {"filter": {"pod": {"labelsFilter": [{"value": "x"}]}}},
        "spec.filter.pod.labelsFilter[0].key: Required value",
    ),
    "legacy operator": (
        {"filter": {"pod": {"excludeLabelsOperator": "nand"}}},
        "spec.filter.pod.excludeLabelsOperator: Unsupported value: 'nand'",
    ),
    "spot percentage over 100": (
        {"spotConfig": {"mode": "only-spot", "distributionPercentage": 101}},
        "spec.spotConfig.distributionPercentage: Invalid value: 101: must be at most 100",
    ),
    "spot percentage below 0": (
        {"spotConfig": {"mode": "only-spot", "distributionPercentage": -1}},
        "spec.spotConfig.distributionPercentage: Invalid value: -1: must be at least 0",
    ),
    "spot percentage not an integer": (
        {"spotConfig": {"distributionPercentage": "50"}},
        "spec.spotConfig.distributionPercentage: must be an integer",
    ),
    "unknown spot mode": (
        {"spotConfig": {"mode": "always-spot"}},
        "spec.spotConfig.mode: Unsupported value: 'always-spot'",
    ),
    "group percentage over 100": (
        {"distributionGroups": [group("a", 150)]},
        "spec.distributionGroups[0].percentage: Invalid value: 150: must be at most 100",
    ),
    "group percentages summing over 100": (
        {"distributionGroups": [group("a", 60), group("b", 50)]},
        "spec.distributionGroups: Invalid value: group percentages sum to 110: must be at most 100",
    ),
    "duplicate group names": (
        {"distributionGroups": [group("a", 10), group("a", 10)]},
        "spec.distributionGroups[1].name: Duplicate value: 'a'",
    ),
    "reserved group name": (
        {"distributionGroups": [group("(none)", 10)]},
        "spec.distributionGroups[0].name: Invalid value: '(none)' is reserved",
    ),
    "group without configuration": (
        {"distributionGroups": [{"name": "a", "percentage": 10}]},
        "spec.distributionGroups[0].configuration: Required value",
    ),
    "unknown group spot mode": (
        {"distributionGroups": [group("a", 10, spotMode="sometimes")]},
        "spec.distributionGroups[0].configuration.spotMode: Unsupported value: 'sometimes'",
    ),
    "group patch error": (
        {"distributionGroups": [group("a", 10, patchesV2=[{"operations": [{"op": "add", "path": "x", "value": 1}]}])]},
        "spec.distributionGroups[0].configuration.patchesV2[0].operations[0].path: Invalid value: 'x'",
    ),
    "unknown op": (
        {"patchesV2": [{"operations": [{"op": "merge", "path": "/a", "value": 1}]}]},
        "spec.patchesV2[0].operations[0].op: Unsupported value: 'merge'",
    ),
    "missing value for add": (
        {"patches": [{"op": "add", "path": "/metadata/labels/a"}]},
        "spec.patches[0].value: Required value: the add operation needs a value",
    ),
    "missing from for move": (
        {"patchesV2": [{"operations": [{"op": "remove", "path": "/a"}, {"op": "move", "path": "/b"}]}]},
        "spec.patchesV2[0].operations[1].from: Required value",
    ),
    "path not starting with /": (
        {"patches": [{"op": "remove", "path": "metadata/labels/a"}]},
        "spec.patches[0].path: Invalid value: 'metadata/labels/a': a JSON Pointer must start with '/'",
    ),
    "missing path": (
        {"patches": [{"op": "remove"}]},
        "spec.patches[0].path: Required value",
    ),
    "bad ~ escape": (
        {"patches": [{"op": "remove", "path": "/metadata/annotations/a~2b"}]},
        "spec.patches[0].path: Invalid value: '/metadata/annotations/a~2b': '~' must be escaped",
    ),
    "value that is not JSON": (
        {"patches": [{"op": "add", "path": "/a", "value": {"n": float("nan")}}]},
        "spec.patches[0].value: Invalid value: nan is not a JSON number",
    ),
    "patchesV2 group without operations": (
        {"patchesV2": [{}]},
        "spec.patchesV2[0].operations: Required value",
    ),
    "unknown field in spec": (
        {"filterv2": {}},
        "spec.filterv2: unknown field 'filterv2'",
    ),
    "unknown field in an operation": (
        {"patches": [{"op": "remove", "path": "/a", "form": "/b"}]},
        "spec.patches[0].form: unknown field 'form'",
    ),
    "unknown restart policy": (
        {"restartPolicy": "now"},
        "spec.restartPolicy: Unsupported value: 'now'",
    ),
}


@pytest.mark.parametrize(("spec", "expected"), list(INVALID.values()), ids=list(INVALID))
def test_validation_error(spec: dict[str, Any], expected: str) -> None:
    messages = errors_of(spec)
    assert any(m.startswith(expected) for m in messages), messages


def test_every_error_is_collected() -> None:
    messages = errors_of(
        {
            "filterV2": {"workload": {"names": [matcher("glob", "a")]}},
            "spotConfig": {"distributionPercentage": 200},
            "patches": [{"op": "add", "path": "a"}],
            "bogus": 1,
        }
    )
    assert [m.split(":")[0] for m in messages] == [
        "spec.bogus",
        "spec.filterV2.workload.names[0].type",
        "spec.patches[0].path",
        "spec.patches[0].value",
        "spec.spotConfig.distributionPercentage",
    ]


def test_metadata_and_version_are_checked() -> None:
    assert errors_of({}, apiVersion="pod-mutations.cast.ai/v2") == [
        "apiVersion: Unsupported value: 'pod-mutations.cast.ai/v2': supported: 'pod-mutations.cast.ai/v1'"
    ]
    assert errors_of({}, metadata={"name": "Bad_Name"}) == [
        "metadata.name: Invalid value: 'Bad_Name': must be a lowercase RFC 1123 subdomain"
    ]


def test_an_invalid_podmutation_does_not_stop_the_others() -> None:
    documents = [
        Document("a.yaml", 0, podmutation("good", {})),
        Document("b.yaml", 0, podmutation("bad", {"spotConfig": {"mode": "x"}})),
        Document("c.yaml", 0, podmutation("good", {})),
    ]
    compilation = compile_documents(documents)
    assert [str(e) for e in compilation.errors] == [
        "b.yaml: PodMutation bad: spec.spotConfig.mode: Unsupported value: 'x': supported values: "
        "'optional-spot', 'only-spot', 'preferred-spot'",
        "c.yaml: PodMutation good: metadata.name: Duplicate value: 'good' is also defined in a.yaml",
    ]
    assert [p.name for p in compilation.compiled.policies] == ["podmutation-good"]


def test_generated_policy_records_restart_policy_and_castai_annotations() -> None:
    annotations = {
        "pod-mutations.cast.ai/pod-mutation-id": "3f1c",
        "pod-mutations.cast.ai/pod-mutation-name": "Friendly name",
        "pod-mutations.cast.ai/pod-mutation-source": "api",
        "unrelated": "not copied",
    }
    output = COMPILER.compile(
        [Document("pm.yaml", 0, podmutation("api-mutation-3f1c", {"restartPolicy": "immediate"}, annotations))]
    )
    (policy,) = output.policies
    assert policy["metadata"]["name"] == "podmutation-api-mutation-3f1c"
    assert policy["metadata"]["annotations"] == {
        "celmut.io/generated-from": "pod-mutations.cast.ai/v1 PodMutation api-mutation-3f1c (pm.yaml)",
        "celmut.io/restart-policy": "immediate",
        "celmut.io/specificity": "score 0 (workload names: 0, namespaces: 0, label conditions: 0)",
        "pod-mutations.cast.ai/pod-mutation-id": "3f1c",
        "pod-mutations.cast.ai/pod-mutation-name": "Friendly name",
        "pod-mutations.cast.ai/pod-mutation-source": "api",
    }
    assert policy["spec"]["failurePolicy"] == "Ignore"
    names = [c["name"] for c in policy["spec"]["matchConditions"]]
    assert names == ["not-yet-applied", "not-ignored", "filters-match", "most-specific"]
    default = COMPILER.compile([Document("pm.yaml", 0, podmutation("d", {}))]).policies[0]
    assert default["metadata"]["annotations"]["celmut.io/restart-policy"] == "deferred"


# --- CLI ---------------------------------------------------------------------------------------------

MUTATION = podmutation(
    "frontend",
    {
        "filterV2": {"workload": {"names": [matcher("regex", "frontend-.*")]}},
        "patchesV2": [{"operations": [{"op": "add", "path": "/metadata/labels/environment", "value": "production"}]}],
        "spotConfig": {"mode": "only-spot"},
    },
)


def write(tmp_path: Path, name: str, *documents: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


def test_celmut_compile_prints_the_generated_policies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "pm.yaml", MUTATION, podmutation("fallback", {}))
    assert main(["compile", path]) == 0
    printed = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [(p["kind"], p["metadata"]["name"]) for p in printed] == [
        ("MutatingPolicy", "podmutation-frontend"),
        ("MutatingPolicy", "podmutation-fallback"),
    ]
    expressions = [m["jsonPatch"]["expression"] for m in printed[0]["spec"]["mutations"]]
    assert 'JSONPatch{op: "add", path: "/metadata/labels/environment", value: "production"}' in expressions[0]
    assert expressions[1].startswith('object.metadata.?annotations[?"pod-mutations.cast.ai/pod-mutation-name"]')
    # what is printed is itself a valid policy set
    assert not compile_documents([Document("out.yaml", i, p) for i, p in enumerate(printed)]).errors


def test_celmut_compile_reports_validation_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "pm.yaml", podmutation("bad", {"spotConfig": {"distributionPercentage": 101}}))
    assert main(["compile", path]) == 2
    assert "PodMutation bad: spec.spotConfig.distributionPercentage: Invalid value: 101" in capsys.readouterr().err


def test_celmut_apply_accepts_a_podmutation_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policies = write(tmp_path, "pm.yaml", MUTATION)
    resources = write(tmp_path, "pods.yaml", pod("frontend-web"), pod("backend"))
    assert main(["apply", policies, "-r", resources]) == 0
    frontend, backend = yaml.safe_load_all(capsys.readouterr().out)
    assert frontend["metadata"]["labels"]["environment"] == "production"
    assert frontend["spec"]["nodeSelector"] == {"scheduling.cast.ai/spot": "true"}
    assert frontend["metadata"]["annotations"] == {
        "pod-mutations.cast.ai/pod-mutation-name": "frontend",
        "celmut.io/placement": "spot",
    }
    assert backend == pod("backend")
