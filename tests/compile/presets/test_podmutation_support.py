"""Helpers shared by the PodMutation tests, and the CEL literal conversion they rely on: every JSON
value a patch can carry becomes a CEL literal that evaluates back to the same value."""

from __future__ import annotations

import json
from typing import Any

import pytest

from celmut import cel
from celmut.compile.cel_literals import cel_string
from celmut.compile.pipeline import Compilation, compile_documents
from celmut.compile.presets.podmutation.patches import cel_literal
from celmut.runtime import AdmissionResult
from celmut.service.offline import OfflineCluster
from celmut.sources.documents import Document
from tests.cel.helpers import evaluate
from tests.offline import offline_cluster

NAME_ANNOTATION = "pod-mutations.cast.ai/pod-mutation-name"


def podmutation(name: str, spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "pod-mutations.cast.ai/v1", "kind": "PodMutation", "metadata": metadata, "spec": spec}


def compile_mutations(*documents: dict[str, Any]) -> Compilation:
    compilation = compile_documents([Document("podmutations.yaml", i, d) for i, d in enumerate(documents)])
    assert not compilation.errors, [str(e) for e in compilation.errors]
    return compilation


def cluster(*documents: dict[str, Any], objects: tuple[dict[str, Any], ...] = ()) -> OfflineCluster:
    return offline_cluster(documents, objects)


_OWNERS = {
    # workload kind -> (owner kind, owner name pattern, extra labels)
    "Deployment": ("ReplicaSet", "{name}-5d8f7c", {"pod-template-hash": "5d8f7c"}),
    "StatefulSet": ("StatefulSet", "{name}", {}),
    "DaemonSet": ("DaemonSet", "{name}", {}),
    "ReplicaSet": ("ReplicaSet", "{name}", {}),
    "Job": ("Job", "{name}", {}),
    "CronJob": ("Job", "{name}-28375020", {}),
}


def pod(
    workload: str = "web",
    kind: str = "Deployment",
    index: int = 0,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """Pod ``index`` of a workload (``kind`` "Pod": a bare pod named ``workload``)."""
    metadata: dict[str, Any] = {"name": f"{workload}-{index}" if kind != "Pod" else workload, "namespace": namespace}
    all_labels = dict(labels or {})
    if kind != "Pod":
        owner_kind, owner_name, extra = _OWNERS[kind]
        all_labels.update(extra)
        metadata["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner_kind,
                "name": owner_name.format(name=workload),
                "uid": "u",
                "controller": True,
            }
        ]
    if all_labels:
        metadata["labels"] = all_labels
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


def admit(offline: OfflineCluster, *pods: dict[str, Any]) -> list[AdmissionResult]:
    return [run.result for run in offline.admit(list(pods))]


def mutated_by(result: AdmissionResult) -> str | None:
    """The PodMutation recorded on the admitted pod (None: the pod was not mutated)."""
    assert result.object is not None
    return ((result.object.get("metadata") or {}).get("annotations") or {}).get(NAME_ANNOTATION)


def annotation(result: AdmissionResult, key: str) -> str | None:
    assert result.object is not None
    return ((result.object.get("metadata") or {}).get("annotations") or {}).get(key)


LABEL_PATCH = {"patches": [{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]}


# --- CEL literals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -42,
        2**63 - 1,
        1.5,
        1e300,
        -0.25,
        "plain",
        'quote " and backslash \\',
        "newline\n tab\t control\x01 del\x7f",
        "unicode é 😀",
        [],
        {},
        [1, 2, 3],
        [1, "a", None, True, 1.5],
        {"weight": 1, "name": "x"},
        {"a": [], "b": [1]},
        [{"a": 1}, {"b": "x"}],
        {"key": "scheduling.cast.ai/spot", "operator": "Exists", "effect": "NoSchedule"},
        {"nested": {"list": [{"x": [1, {"y": None}]}], "flag": False}, "n": 2.0},
    ],
    ids=lambda v: json.dumps(v, ensure_ascii=True)[:40],
)
def test_every_json_value_becomes_a_cel_literal_with_the_same_value(value: Any) -> None:
    result = cel.to_plain(evaluate(cel_literal(value)))
    assert result == value and json.dumps(result) == json.dumps(value)  # same types too (1.0 stays a double)


def test_mixed_literals_are_wrapped_in_dyn_and_uniform_ones_are_not() -> None:
    assert cel_literal({"a": "x", "b": "y"}) == '{"a": "x", "b": "y"}'
    assert cel_literal({"weight": 1, "name": "x"}) == '{"weight": dyn(1), "name": dyn("x")}'
    assert cel_literal([1, "a"]) == '[dyn(1), dyn("a")]'
    assert cel_string('a"b\\c\n') == '"a\\"b\\\\c\\n"'
