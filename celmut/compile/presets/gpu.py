"""CastSlice GPU slicing as a MutatingPolicy.

Claims ``apiVersion: presets.celmut.io/v1alpha1, kind: GpuSlicing``::

    apiVersion: presets.celmut.io/v1alpha1
    kind: GpuSlicing
    metadata:
      name: gpu-slicing                     # the policy's name (default gpu-slicing)
    spec:
      workloadTypes: {training: 8, render: 3}   # optional: overrides/extends the presets
      sharedResource: nvidia.com/gpu-shared     # optional: the resource the GPUs become

The generated policy runs on pod CREATE, as CastSlice does:

* **Opt-in**: only a pod whose annotation ``castops.io/optimize`` is exactly ``"true"`` (and that
  asks for ``nvidia.com/gpu`` somewhere) is changed; any other pod is skipped by a named
  matchCondition.
* **Slice count**, highest priority first: ``castops.io/slice-ratio`` (a positive integer), else the
  preset of ``castops.io/workload-type`` (training 4, inference 2, batch 2, dev 1, plus
  ``spec.workloadTypes``), else 1. An empty annotation counts as absent.
* **Rewrite**: in every initContainer, container and ephemeralContainer, ``nvidia.com/gpu`` is
  removed from ``resources.limits`` and from ``resources.requests`` and the shared resource is added
  there with the slice count (a quantity string; the original GPU count is replaced, as CastSlice
  does). Map keys are JSON-Pointer escaped at compile time (``nvidia.com~1gpu``).
* **Invalid values are reported, never guessed**: a ``castops.io/slice-ratio`` that is not a positive
  integer (at most 9 digits) or an unknown ``castops.io/workload-type`` (only read when there is no
  slice ratio) leaves the pod unchanged (still asking for whole GPUs), skipped by the matchCondition
  ``castops.io/slice-ratio-is-a-positive-integer`` or ``castops.io/workload-type-is-known`` — the
  reason celmut reports names the annotation, whatever the CEL engine.
* **Idempotent**: a rewritten pod has no ``nvidia.com/gpu`` left, so a second invocation is skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from celmut import jsonutil, names
from celmut.compile import cel_literals as lit
from celmut.compile.presets import placement as pl
from celmut.compile.presets import yaml_format
from celmut.compile.presets.base import GENERATED_BY, PresetOutput, compile_each
from celmut.policy.errors import FieldError, PolicyError
from celmut.policy.fields import Reader
from celmut.sources.documents import Document

API_VERSION = "presets.celmut.io/v1alpha1"
KIND = "GpuSlicing"
GPU = "nvidia.com/gpu"
DEFAULT_SHARED = "nvidia.com/gpu-shared"
DEFAULT_NAME = "gpu-slicing"
WORKLOAD_TYPES = {"training": 4, "inference": 2, "batch": 2, "dev": 1}
OPTIMIZE_ANNOTATION = "castops.io/optimize"
RATIO_ANNOTATION = "castops.io/slice-ratio"
TYPE_ANNOTATION = "castops.io/workload-type"
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
SECTIONS = ("limits", "requests")


def claims(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and document.get("kind") == KIND
        and str(document.get("apiVersion", "")).startswith("presets.celmut.io/")
    )


def parse(document: Document) -> tuple[str, dict[str, int], str]:
    """(policy name, workload types, shared resource); raises PolicyError naming every invalid field."""
    errors: list[FieldError] = []
    root = Reader(document.content, "", errors)
    root.unknown_fields(["apiVersion", "kind", "metadata", "spec", "status"])
    root.string("apiVersion", enum=[API_VERSION])
    name = root.child("metadata").string("name", default=DEFAULT_NAME)
    if not names.is_dns_subdomain(name):
        root.fail(f"Invalid value: {name!r}: must be a lowercase RFC 1123 subdomain", "metadata.name")
    spec = root.child("spec")
    spec.unknown_fields(["workloadTypes", "sharedResource"])
    types = dict(WORKLOAD_TYPES)
    overrides = spec.child("workloadTypes")
    for key, count in overrides.data.items():
        if not isinstance(key, str) or not key or key != key.strip():
            overrides.fail(f"Invalid value: {key!r}: must be a non-empty name without surrounding blanks", str(key))
        elif isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 999_999_999:
            overrides.fail(f"Invalid value: {count!r}: must be a positive integer (the slice count)", key)
        else:
            types[key] = count
    shared = spec.string("sharedResource", default=DEFAULT_SHARED)
    if "/" not in shared or not names.is_qualified_name(shared):
        spec.fail(f"Invalid value: {shared!r}: must be an extended resource name (domain/name)", "sharedResource")
    elif shared == GPU:
        spec.fail(f"Invalid value: {shared!r}: must differ from {GPU}", "sharedResource")
    if errors:
        raise PolicyError(document.path, KIND, name, errors)
    return name, types, shared


def _annotation(name: str) -> str:
    return f'object.metadata.?annotations[?{lit.cel_string(name)}].orValue("")'


def gpu_resources_cel() -> str:
    """JSON Pointers of the resource maps (limits/requests of every container) holding nvidia.com/gpu."""
    parts = []
    for containers in CONTAINER_LISTS:
        for section in SECTIONS:
            parts.append(
                f"object.spec.?{containers}.orValue([]).transformList(i, c,\n"
                f"  c.?resources.?{section}[?{lit.cel_string(GPU)}].hasValue(),\n"
                f'  "/spec/{containers}/" + string(i) + "/resources/{section}")'
            )
    return " +\n".join(parts)


def variables(types: dict[str, int]) -> list[dict[str, str]]:
    type_map = "{" + ", ".join(f"{lit.cel_string(k)}: {v}" for k, v in types.items()) + "}"
    return [
        pl.variable("gpuResources", gpu_resources_cel()),
        pl.variable("sliceRatioAnnotation", _annotation(RATIO_ANNOTATION)),
        pl.variable(
            "sliceRatio",
            f"""
// {RATIO_ANNOTATION}: a positive integer, the highest priority; 0 when absent, -1 when invalid
variables.sliceRatioAnnotation == "" ? 0 :
variables.sliceRatioAnnotation.matches("^[0-9]{{1,9}}$") && int(variables.sliceRatioAnnotation) > 0 ?
  int(variables.sliceRatioAnnotation) : -1
""",
        ),
        pl.variable("workloadType", _annotation(TYPE_ANNOTATION)),
        pl.variable("workloadTypes", type_map),
        pl.variable(
            "sliceCount",
            f"""
// the slice ratio, else the {TYPE_ANNOTATION} preset, else 1
variables.sliceRatio > 0 ? variables.sliceRatio :
variables.workloadType != "" ? variables.workloadTypes[variables.workloadType] :
1
""",
        ),
    ]


def match_conditions() -> list[dict[str, str]]:
    """Opt-in and GPUs, then the annotations' validity: an invalid value skips the pod, and the
    condition's name (the reason celmut reports) names the annotation."""
    return [
        pl.variable("opted-in", f'{_annotation(OPTIMIZE_ANNOTATION)} == "true"'),
        pl.variable("asks-for-nvidia-gpus", "size(variables.gpuResources) > 0"),
        pl.variable(f"{RATIO_ANNOTATION}-is-a-positive-integer", "variables.sliceRatio >= 0"),
        pl.variable(
            f"{TYPE_ANNOTATION}-is-known",
            'variables.sliceRatio > 0 || variables.workloadType == "" ||\n'
            "  variables.workloadType in variables.workloadTypes",
        ),
    ]


def patches_cel(shared: str) -> str:
    gpu, shared_key = jsonutil.escape_pointer(GPU), jsonutil.escape_pointer(shared)
    return f"""
variables.gpuResources.map(p, JSONPatch{{op: "remove", path: p + "/{gpu}"}}) +
variables.gpuResources.map(p,
  JSONPatch{{op: "add", path: p + "/{shared_key}", value: string(variables.sliceCount)}})
""".strip()


def build_policy(name: str, types: dict[str, int], shared: str) -> dict[str, Any]:
    policy = pl.mutating_policy(
        name,
        variables=variables(types),
        match_conditions=match_conditions(),
        patches=patches_cel(shared),
        annotations={GENERATED_BY: f"{API_VERSION} {KIND} {name}"},
        labels={"celmut.io/preset": "gpu-slicing"},
    )
    return yaml_format.readable(policy)


class GpuSlicingCompiler:
    name = "gpu-slicing"

    def claims(self, document: Any) -> bool:
        return claims(document)

    def compile(self, documents: Sequence[Document]) -> PresetOutput:
        def duplicate(document: Document, parsed: tuple[str, dict[str, int], str], first: str) -> PolicyError:
            name = parsed[0]
            problem = FieldError("metadata.name", f"Duplicate value: {name!r} is already defined in {first}")
            return PolicyError(document.path, KIND, name, [problem])

        return compile_each(
            documents,
            parse,
            lambda document, parsed: (parsed[0], document.path),
            lambda _document, parsed: build_policy(*parsed),
            duplicate,
        )


COMPILER = GpuSlicingCompiler()
