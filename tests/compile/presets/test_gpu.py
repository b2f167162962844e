"""GpuSlicing → MutatingPolicy (CastSlice): every annotation combination (optimize missing, false,
true; slice-ratio valid, invalid, zero; each workload type; custom types), every container list and
both resource sections with JSON Pointer escaping, idempotence of the shipped policy, validation
errors with field paths, and the shipped file staying equal to what ``celmut compile`` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from celmut.compile.pipeline import compile_documents, compile_paths
from celmut.main import main
from celmut.runtime import AdmissionEngine, AdmissionInput, AdmissionResult
from celmut.sources.documents import Document

ROOT = Path(__file__).resolve().parents[3]
GPU, SHARED = "nvidia.com/gpu", "nvidia.com/gpu-shared"
OPTIMIZE, RATIO, TYPE = "castops.io/optimize", "castops.io/slice-ratio", "castops.io/workload-type"


def slicing(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "presets.celmut.io/v1alpha1",
        "kind": "GpuSlicing",
        "metadata": {"name": "gpu-slicing"},
        "spec": spec,
    }


def engine(document: dict[str, Any] | None = None) -> AdmissionEngine:
    compilation = compile_documents([Document("gpu.yaml", 0, document or slicing())])
    assert not compilation.errors, compilation.errors
    return AdmissionEngine(compilation.compiled)


def gpu_pod(annotations: dict[str, str] | None, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "trainer", "namespace": "ml"}
    if annotations is not None:
        metadata["annotations"] = annotations
    containers = [{"name": "main", "image": "cuda", "resources": {"limits": {GPU: 1}}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {"containers": containers, **spec}}


def admit(obj: dict[str, Any], document: dict[str, Any] | None = None) -> AdmissionResult:
    return engine(document).admit(AdmissionInput.from_object(obj))


def slices(result: AdmissionResult) -> Any:
    """The shared slice count of the first container, "unchanged", or "invalid" (skipped for an invalid annotation)."""
    assert not result.errored, result.outcomes
    if not result.patch:
        return "invalid" if result.outcomes[0].reason.startswith("matchCondition 'castops.io/") else "unchanged"
    assert result.object is not None
    limits = result.object["spec"]["containers"][0]["resources"]["limits"]
    assert GPU not in limits
    return limits[SHARED]


ANNOTATIONS = {
    "optimize missing: unchanged": (None, "unchanged"),
    "no annotations at all: unchanged": ({}, "unchanged"),
    "optimize false: unchanged": ({OPTIMIZE: "false"}, "unchanged"),
    "optimize True (not exactly true): unchanged": ({OPTIMIZE: "True"}, "unchanged"),
    "optimize yes: unchanged": ({OPTIMIZE: "yes"}, "unchanged"),
    "slice-ratio without optimize: unchanged": ({RATIO: "4"}, "unchanged"),
    "optimize true alone: 1 slice": ({OPTIMIZE: "true"}, "1"),
    "slice-ratio 8": ({OPTIMIZE: "true", RATIO: "8"}, "8"),
    "slice-ratio 1": ({OPTIMIZE: "true", RATIO: "1"}, "1"),
    "slice-ratio beats workload-type": ({OPTIMIZE: "true", RATIO: "3", TYPE: "training"}, "3"),
    "slice-ratio valid, an unknown workload-type is not read": ({OPTIMIZE: "true", RATIO: "3", TYPE: "gaming"}, "3"),
    "slice-ratio 0 is invalid": ({OPTIMIZE: "true", RATIO: "0"}, "invalid"),
    "slice-ratio negative is invalid": ({OPTIMIZE: "true", RATIO: "-2"}, "invalid"),
    "slice-ratio not a number is invalid": ({OPTIMIZE: "true", RATIO: "half"}, "invalid"),
    "slice-ratio fractional is invalid": ({OPTIMIZE: "true", RATIO: "1.5"}, "invalid"),
    "slice-ratio too large is invalid (not an overflow)": (
        {OPTIMIZE: "true", RATIO: "99999999999999999999"},
        "invalid",
    ),
    "slice-ratio invalid beats a valid workload-type": ({OPTIMIZE: "true", RATIO: "x", TYPE: "dev"}, "invalid"),
    "slice-ratio empty counts as absent": ({OPTIMIZE: "true", RATIO: "", TYPE: "batch"}, "2"),
    "workload-type training: 4": ({OPTIMIZE: "true", TYPE: "training"}, "4"),
    "workload-type inference: 2": ({OPTIMIZE: "true", TYPE: "inference"}, "2"),
    "workload-type batch: 2": ({OPTIMIZE: "true", TYPE: "batch"}, "2"),
    "workload-type dev: 1": ({OPTIMIZE: "true", TYPE: "dev"}, "1"),
    "workload-type unknown is invalid": ({OPTIMIZE: "true", TYPE: "gaming"}, "invalid"),
    "workload-type is case-sensitive": ({OPTIMIZE: "true", TYPE: "Training"}, "invalid"),
    "workload-type empty counts as absent": ({OPTIMIZE: "true", TYPE: ""}, "1"),
}


@pytest.mark.parametrize(("annotations", "expected"), ANNOTATIONS.values(), ids=ANNOTATIONS.keys())
def test_annotations(annotations: dict[str, str] | None, expected: str) -> None:
    obj = gpu_pod(annotations)
    result = admit(obj)
    assert slices(result) == expected
    if expected == "invalid":  # left unchanged, the reason naming the annotation
        assert result.object == obj
        bad_ratio = bool((annotations or {}).get(RATIO))
        assert result.outcomes[0].reason == (
            f"matchCondition '{RATIO}-is-a-positive-integer' is false"
            if bad_ratio
            else f"matchCondition '{TYPE}-is-known' is false"
        )
    if expected == "unchanged":
        assert result.outcomes[0].reason == "matchCondition 'opted-in' is false"


CUSTOM = {
    "an overridden preset": ({TYPE: "training"}, "8"),
    "a new workload type": ({TYPE: "render"}, "3"),
    "untouched presets stay": ({TYPE: "inference"}, "2"),
    "the default is still 1": ({}, "1"),
    "slice-ratio still wins": ({TYPE: "render", RATIO: "5"}, "5"),
}


@pytest.mark.parametrize(("annotations", "expected"), CUSTOM.values(), ids=CUSTOM.keys())
def test_custom_workload_types(annotations: dict[str, str], expected: str) -> None:
    document = slicing(workloadTypes={"training": 8, "render": 3})
    assert slices(admit(gpu_pod({OPTIMIZE: "true", **annotations}), document)) == expected


def test_every_container_list_and_both_sections_are_rewritten() -> None:
    obj = gpu_pod(
        {OPTIMIZE: "true", TYPE: "inference"},
        initContainers=[{"name": "init", "image": "i", "resources": {"limits": {GPU: 1}, "requests": {GPU: 1}}}],
        ephemeralContainers=[{"name": "debug", "image": "d", "resources": {"requests": {GPU: "2", "cpu": "1"}}}],
    )
    obj["spec"]["containers"] += [
        {"name": "cpu-only", "image": "c", "resources": {"limits": {"cpu": "1"}}},
        {"name": "both", "image": "b", "resources": {"limits": {GPU: 2, "memory": "1Gi"}, "requests": {GPU: 2}}},
        {"name": "bare", "image": "x"},
    ]
    result = admit(obj)
    assert result.object is not None
    spec = result.object["spec"]
    assert spec["initContainers"][0]["resources"] == {"limits": {SHARED: "2"}, "requests": {SHARED: "2"}}
    assert spec["ephemeralContainers"][0]["resources"] == {"requests": {"cpu": "1", SHARED: "2"}}
    assert [c.get("resources") for c in spec["containers"]] == [
        {"limits": {SHARED: "2"}},
        {"limits": {"cpu": "1"}},
        {"limits": {"memory": "1Gi", SHARED: "2"}, "requests": {SHARED: "2"}},
        None,
    ]
    removed = {op["path"] for op in result.patch if op["op"] == "remove"}
    assert removed == {
        "/spec/initContainers/0/resources/limits/nvidia.com~1gpu",
        "/spec/initContainers/0/resources/requests/nvidia.com~1gpu",
        "/spec/containers/0/resources/limits/nvidia.com~1gpu",
        "/spec/containers/2/resources/limits/nvidia.com~1gpu",
        "/spec/containers/2/resources/requests/nvidia.com~1gpu",
        "/spec/ephemeralContainers/0/resources/requests/nvidia.com~1gpu",
    }


def test_an_existing_shared_request_is_replaced() -> None:
    obj = gpu_pod({OPTIMIZE: "true", RATIO: "4"})
    obj["spec"]["containers"][0]["resources"]["limits"][SHARED] = "1"
    assert slices(admit(obj)) == "4"


def test_a_pod_without_gpus_is_skipped() -> None:
    obj = gpu_pod({OPTIMIZE: "true"})
    obj["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2"}}
    result = admit(obj)
    assert not result.patch and result.outcomes[0].reason == "matchCondition 'asks-for-nvidia-gpus' is false"


def test_a_custom_shared_resource_is_used() -> None:
    result = admit(gpu_pod({OPTIMIZE: "true"}), slicing(sharedResource="example.com/time-sliced-gpu"))
    assert result.object is not None
    assert result.object["spec"]["containers"][0]["resources"] == {"limits": {"example.com/time-sliced-gpu": "1"}}


def test_shipped_policy_equals_what_celmut_compile_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(ROOT / "presets/gpu-slicing.yaml")]) == 0
    printed = list(yaml.safe_load_all(capsys.readouterr().out))
    shipped = list(yaml.safe_load_all((ROOT / "policies/presets/gpu-slicing.yaml").read_text()))
    assert shipped == printed, "regenerate: celmut compile presets/gpu-slicing.yaml > policies/presets/gpu-slicing.yaml"


@pytest.mark.parametrize(
    "annotations",
    [{OPTIMIZE: "true"}, {OPTIMIZE: "true", RATIO: "8"}, {OPTIMIZE: "true", TYPE: "training"}],
    ids=["default", "slice-ratio", "workload-type"],
)
def test_shipped_policy_is_idempotent_on_reinvocation(annotations: dict[str, str]) -> None:
    compilation = compile_paths(str(ROOT / "policies/presets/gpu-slicing.yaml"))
    assert not compilation.errors
    shipped = AdmissionEngine(compilation.compiled)
    obj = gpu_pod(annotations, initContainers=[{"name": "i", "image": "i", "resources": {"requests": {GPU: 1}}}])
    first = shipped.admit(AdmissionInput.from_object(obj))
    assert first.patch and first.object is not None
    again = shipped.admit(AdmissionInput.from_object(first.object))
    assert again.patch == [] and again.outcomes[0].reason == "matchCondition 'asks-for-nvidia-gpus' is false"


INVALID = {
    "wrong apiVersion": (slicing() | {"apiVersion": "presets.celmut.io/v2"}, "apiVersion: Unsupported value"),
    "unknown spec field": (slicing(slices=4), "spec.slices: unknown field"),
    "zero slices for a type": (slicing(workloadTypes={"dev": 0}), "spec.workloadTypes.dev: Invalid value: 0"),
    "a boolean slice count": (slicing(workloadTypes={"dev": True}), "spec.workloadTypes.dev: Invalid value: True"),
    "a string slice count": (slicing(workloadTypes={"dev": "2"}), "spec.workloadTypes.dev: Invalid value: '2'"),
    "workloadTypes not a map": (slicing(workloadTypes=["dev"]), "spec.workloadTypes: must be an object"),
    "a shared resource without a domain": (slicing(sharedResource="gpu-shared"), "spec.sharedResource: Invalid value"),
    "the shared resource is the GPU itself": (slicing(sharedResource=GPU), "must differ from nvidia.com/gpu"),
    "an invalid name": (slicing() | {"metadata": {"name": "GPU"}}, "metadata.name: Invalid value: 'GPU'"),
}


@pytest.mark.parametrize(("document", "message"), INVALID.values(), ids=INVALID.keys())
def test_invalid_documents_are_reported_with_the_field_path(document: dict[str, Any], message: str) -> None:
    errors = compile_documents([Document("gpu.yaml", 0, document)]).errors
    assert len(errors) == 1 and message in str(errors[0]) and str(errors[0]).startswith("gpu.yaml: GpuSlicing")


def test_the_name_defaults_and_duplicates_are_rejected() -> None:
    unnamed = slicing() | {"metadata": {}}
    compilation = compile_documents([Document("a.yaml", 0, unnamed)])
    assert [p.name for p in compilation.compiled.policies] == ["gpu-slicing"]
    errors = compile_documents([Document("a.yaml", 0, unnamed), Document("b.yaml", 0, slicing())]).errors
    assert len(errors) == 1 and "'gpu-slicing' is already defined in a.yaml" in str(errors[0])
