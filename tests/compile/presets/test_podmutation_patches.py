"""PodMutation patches: each patch example of the CAST AI reference on real pods, all-or-nothing
application (a failed ``test`` skips the PodMutation with a reason, a missing path makes it a policy
error and the pod is admitted unchanged), ``add`` creating missing parents, and patches composed
with spot placement without overwriting each other."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.runtime import AdmissionInput
from tests.compile.presets.test_podmutation_support import NAME_ANNOTATION, cluster, mutated_by, pod, podmutation

SPOT_TOLERATION = {"key": "scheduling.cast.ai/spot", "operator": "Exists", "effect": "NoSchedule"}


def ops(*operations: dict[str, Any]) -> dict[str, Any]:
    return {"patchesV2": [{"operations": list(operations)}]}


def run(spec: dict[str, Any], subject: dict[str, Any]) -> Any:
    offline = cluster(podmutation("m", spec))
    return offline.engine.admit(AdmissionInput.from_object(subject))


def without_record(obj: dict[str, Any]) -> dict[str, Any]:
    """The pod without the name annotation the PodMutation records (and an annotations map it emptied)."""
    metadata = dict(obj["metadata"])
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items() if k != NAME_ANNOTATION}
    metadata.pop("annotations", None)
    if annotations:
        metadata["annotations"] = annotations
    return {**obj, "metadata": metadata}


AZURE_POD = pod(
    labels={"agentpool": "pool1", "app": "web"},
    nodeSelector={"agentpool": "pool1"},
    tolerations=[{"key": "agentpool", "operator": "Equal", "value": "pool1", "effect": "NoSchedule"}],
)

# (spec, incoming pod, {JSON pointer-ish dotted path: expected value})
EXAMPLES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "add labels": (
        ops(
            {"op": "add", "path": "/metadata/labels/environment", "value": "production"},
            {"op": "add", "path": "/metadata/labels/team", "value": "platform"},
        ),
        pod(),
        {"metadata.labels": {"pod-template-hash": "5d8f7c", "environment": "production", "team": "platform"}},
    ),
    "add annotations with ~1 escapes": (
        ops(
            {"op": "add", "path": "/metadata/annotations/prometheus.io~1scrape", "value": "true"},
            {"op": "add", "path": "/metadata/annotations/prometheus.io~1port", "value": "9090"},
        ),
        pod(),  # no annotations yet: add creates the map
        {"metadata.annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090", NAME_ANNOTATION: "m"}},
    ),
    "add node selector map": (
        ops(
            {
                "op": "add",
                "path": "/spec/nodeSelector",
                "value": {"scheduling.cast.ai/node-template": "production-template"},
            }
        ),
        pod(),
        {"spec.nodeSelector": {"scheduling.cast.ai/node-template": "production-template"}},
    ),
    "add to an existing node selector": (
        ops(
            {
                "op": "add",
                "path": "/spec/nodeSelector/scheduling.cast.ai~1node-template",
                "value": "production-template",
            }
        ),
        pod(nodeSelector={"zone": "a"}),
        {"spec.nodeSelector": {"zone": "a", "scheduling.cast.ai/node-template": "production-template"}},
    ),
    "add to a missing node selector creates it": (
        ops(
            {
                "op": "add",
                "path": "/spec/nodeSelector/scheduling.cast.ai~1node-template",
                "value": "production-template",
            }
        ),
        pod(),
        {"spec.nodeSelector": {"scheduling.cast.ai/node-template": "production-template"}},
    ),
    "append a toleration with /-": (
        ops({"op": "add", "path": "/spec/tolerations/-", "value": SPOT_TOLERATION}),
        pod(tolerations=[{"key": "other", "operator": "Exists"}]),
        {"spec.tolerations": [{"key": "other", "operator": "Exists"}, SPOT_TOLERATION]},
    ),
    "append a toleration to a pod without tolerations": (
        ops(
            {"op": "add", "path": "/spec/tolerations/-", "value": SPOT_TOLERATION},
            {
                "op": "add",
                "path": "/spec/tolerations/-",
                "value": {
                    "key": "scheduling.cast.ai/node-template",
                    "operator": "Equal",
                    "value": "gpu-nodes",
                    "effect": "NoSchedule",
                },
            },
        ),
        pod(),
        {
            "spec.tolerations": [
                SPOT_TOLERATION,
                {
                    "key": "scheduling.cast.ai/node-template",
                    "operator": "Equal",
                    "value": "gpu-nodes",
                    "effect": "NoSchedule",
                },
            ]
        },
    ),
    "remove a label": (
        ops({"op": "remove", "path": "/metadata/labels/deprecated-label"}),
        pod(labels={"deprecated-label": "x", "keep": "y"}),
        {"metadata.labels": {"keep": "y", "pod-template-hash": "5d8f7c"}},
    ),
    "replace a value": (
        ops({"op": "replace", "path": "/spec/nodeSelector/environment", "value": "production"}),
        pod(nodeSelector={"environment": "staging"}),
        {"spec.nodeSelector": {"environment": "production"}},
    ),
    "azure agentpool migration with move": (
        ops(
            {"op": "move", "from": "/metadata/labels/agentpool", "path": "/metadata/labels/dedicated"},
            {"op": "move", "from": "/spec/nodeSelector/agentpool", "path": "/spec/nodeSelector/dedicated"},
            {"op": "replace", "path": "/spec/tolerations/0/key", "value": "dedicated"},
        ),
        AZURE_POD,
        {
            "metadata.labels": {"app": "web", "pod-template-hash": "5d8f7c", "dedicated": "pool1"},
            "spec.nodeSelector": {"dedicated": "pool1"},
            "spec.tolerations": [{"key": "dedicated", "operator": "Equal", "value": "pool1", "effect": "NoSchedule"}],
        },
    ),
    "legacy patches format": (
        {
            "patches": [
                {"op": "add", "path": "/metadata/labels/environment", "value": "production"},
                {"op": "add", "path": "/metadata/labels/managed-by", "value": "castai"},
            ]
        },
        pod(),
        {"metadata.labels": {"pod-template-hash": "5d8f7c", "environment": "production", "managed-by": "castai"}},
    ),
    "patchesV2 groups then legacy patches, in order": (
        {
            "patchesV2": [
                {"operations": [{"op": "add", "path": "/metadata/labels/step", "value": "1"}]},
                {"operations": [{"op": "replace", "path": "/metadata/labels/step", "value": "2"}]},
            ],
            "patches": [{"op": "copy", "from": "/metadata/labels/step", "path": "/metadata/labels/copied"}],
        },
        pod(),
        {"metadata.labels": {"pod-template-hash": "5d8f7c", "step": "2", "copied": "2"}},
    ),
    "a test that holds lets the patches apply": (
        ops(
            {"op": "test", "path": "/metadata/labels/tier", "value": "web"},
            {"op": "add", "path": "/metadata/labels/checked", "value": "yes"},
        ),
        pod(labels={"tier": "web"}),
        {"metadata.labels": {"tier": "web", "pod-template-hash": "5d8f7c", "checked": "yes"}},
    ),
    "values of every JSON type": (
        ops(
            {
                "op": "add",
                "path": "/spec/affinity",
                "value": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 50,
                                "preference": {
                                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]
                                },
                            }
                        ]
                    }
                },
            },
            {"op": "add", "path": "/spec/priority", "value": 10},
            {"op": "add", "path": "/spec/hostNetwork", "value": False},
            {"op": "add", "path": "/metadata/labels/quoted", "value": 'a "quoted" \\ value'},
            {"op": "add", "path": "/spec/overhead", "value": None},
        ),
        pod(),
        {
            "spec.affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 50,
                            "preference": {
                                "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]
                            },
                        }
                    ]
                }
            },
            "spec.priority": 10,
            "spec.hostNetwork": False,
            "metadata.labels.quoted": 'a "quoted" \\ value',
            "spec.overhead": None,
        },
    ),
}


def dig(obj: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        obj = obj[part]
    return obj


@pytest.mark.parametrize(("spec", "subject", "expected"), list(EXAMPLES.values()), ids=list(EXAMPLES))
def test_patch_example(spec: dict[str, Any], subject: dict[str, Any], expected: dict[str, Any]) -> None:
    result = run(spec, subject)
    assert not result.errored, (result.warnings, [o.reason for o in result.outcomes])
    assert mutated_by(result) == "m"
    for dotted, value in expected.items():
        assert dig(result.object, dotted) == value, dotted


def test_a_failed_test_skips_the_whole_podmutation_with_a_reason() -> None:
    spec = {
        **ops(
            {"op": "add", "path": "/metadata/labels/before", "value": "x"},
            {"op": "test", "path": "/metadata/labels/tier", "value": "web"},
            {"op": "add", "path": "/metadata/labels/after", "value": "x"},
        ),
        "spotConfig": {"mode": "only-spot"},
    }
    subject = pod(labels={"tier": "api"})
    result = run(spec, subject)
    assert result.allowed and not result.errored and not result.changed
    assert result.object == subject  # no label, no spot change, no annotation: nothing partial
    (outcome,) = result.outcomes
    assert outcome.status == "unchanged"
    assert "JSONPatch test at /metadata/labels/tier did not hold" in outcome.reason


@pytest.mark.parametrize(
    ("operation", "message"),
    [
        (
            {"op": "remove", "path": "/metadata/labels/absent"},
            "JSON Patch: error in remove for path: '/metadata/labels/absent': "
            "Unable to remove nonexistent key: absent: missing value",
        ),
        (
            {"op": "replace", "path": "/spec/affinity/nodeAffinity", "value": {}},
            "JSON Patch: replace operation does not apply: doc is missing path: /spec/affinity/nodeAffinity",
        ),
        (
            {"op": "move", "from": "/metadata/labels/agentpool", "path": "/metadata/labels/dedicated"},
            "JSON Patch: error in move for path: 'agentpool'",
        ),
        (
            {"op": "test", "path": "/metadata/annotations/absent", "value": "x"},
            "JSON Patch: test operation does not apply: is missing path: /metadata/annotations/absent",
        ),
        (
            {"op": "add", "path": "/spec/containers/5/env", "value": []},
            'JSON Patch: add operation does not apply: doc is missing path: "/spec/containers/5/env"',
        ),
    ],
    # json-patch v4 patch.go (json_patch.go applies it): partialDoc.remove, Patch.replace (a missing
    # parent; a missing member would be added), Patch.move, Patch.test (a missing parent; a missing
    # member fails the test instead), Patch.add
    ids=["remove", "replace", "move", "test", "add below a missing list item"],
)
def test_a_missing_path_is_a_policy_error_and_the_pod_is_admitted_unchanged(
    operation: dict[str, Any], message: str
) -> None:
    spec = {
        **ops({"op": "add", "path": "/metadata/labels/before", "value": "x"}, operation),
        "spotConfig": {"mode": "only-spot"},
    }
    subject = pod()
    result = run(spec, subject)
    assert result.allowed and not result.changed and result.object == subject
    (outcome,) = result.outcomes
    assert outcome.status == "error" and message in outcome.reason
    assert outcome.path == "spec.mutations[0].jsonPatch.expression"
    assert any(message in w and "failurePolicy Ignore" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("spec", "subject", "expected"),
    [
        (
            {
                **ops(
                    {"op": "add", "path": "/spec/nodeSelector", "value": {"scheduling.cast.ai/node-template": "prod"}}
                ),
                "spotConfig": {"mode": "only-spot"},
            },
            pod(),
            {"spec.nodeSelector": {"scheduling.cast.ai/node-template": "prod", "scheduling.cast.ai/spot": "true"}},
        ),
        (
            {
                **ops({"op": "add", "path": "/spec/tolerations", "value": [{"key": "gpu", "operator": "Exists"}]}),
                "spotConfig": {"mode": "optional-spot"},
            },
            pod(),
            {"spec.tolerations": [{"key": "gpu", "operator": "Exists"}, SPOT_TOLERATION]},
        ),
        (
            {
                **ops({"op": "add", "path": "/metadata/annotations", "value": {"team": "a"}}),
                "spotConfig": {"mode": "optional-spot"},
            },
            pod(),
            {"metadata.annotations": {"team": "a", NAME_ANNOTATION: "m", "celmut.io/placement": "spot"}},
        ),
    ],
    ids=["node selector map then only-spot", "toleration list then spot", "annotations map then records"],
)
def test_patches_that_create_a_container_are_extended_not_overwritten(
    spec: dict[str, Any], subject: dict[str, Any], expected: dict[str, Any]
) -> None:
    result = run(spec, subject)
    assert not result.errored, result.warnings
    for dotted, value in expected.items():
        assert dig(result.object, dotted) == value, dotted


def test_the_patched_pod_differs_from_the_input_only_by_the_patches_and_the_record() -> None:
    spec = ops({"op": "add", "path": "/metadata/labels/environment", "value": "production"})
    result = run(spec, pod())
    expected = pod(labels={"environment": "production"})
    assert without_record(result.object) == expected
    assert result.patch == [
        {"op": "add", "path": "/metadata/labels/environment", "value": "production"},
        {"op": "add", "path": "/metadata/annotations", "value": {NAME_ANNOTATION: "m"}},
    ]


def test_a_pod_this_podmutation_already_mutated_is_not_patched_again() -> None:
    """Reinvocation (or the controller re-checking a running pod) must not append twice."""
    spec = ops({"op": "add", "path": "/spec/tolerations/-", "value": {"key": "team", "operator": "Exists"}})
    first = run(spec, pod())
    assert first.object["spec"]["tolerations"] == [{"key": "team", "operator": "Exists"}]
    second = run(spec, first.object)
    assert second.patch == []
    assert second.outcomes[0].reason == "matchCondition 'not-yet-applied' is false"
