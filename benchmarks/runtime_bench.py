"""Policy runtime benchmark: one admission request through 20 MutatingPolicies (5 matching) on a
~6 KB Pod. Prints p50/p99 latency and throughput; never asserts on time.

Then the typed conversion of an ApplyConfiguration (what kube-apiserver does before and after merging
one): µs per call of typing a per-request configuration (one securityContext per container of the
Pod) against the Pod schema, of the merge itself, and of a MutatingAdmissionPolicy's conversion of
the merged Pod to its Go type — beside the merge, in the same run. (A literal configuration is typed
once per schema, not per request.)

Then the cost of provenance (who changed what), side by side in the same run: the webhook's work per request
(admit + AdmissionReview response) without and with the provenance audit annotations (on by default),
with the ``celmut.io/mutated-by`` summary on the object (``serve --record-provenance``), and with
per-mutation explanations (``explain``: what ``celmut apply --explain`` pays, never the webhook).

    python benchmarks/runtime_bench.py [--requests N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import per_call_us, table
from workloads import pod_size_bytes, realistic_pod

from celmut.compile.pipeline import compile_documents
from celmut.runtime import AdmissionInput, AdmissionResult, go_convert, merge, mutations, typed
from celmut.runtime.provenance import from_outcomes
from celmut.runtime.schemas import SchemaRegistry
from celmut.server import review as reviews
from celmut.server.audit import provenance_annotations
from celmut.service.assembly import EngineSettings, assemble_engine
from celmut.sources.documents import Document
from policies import benchmark_policies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()

    compilation = compile_documents(Document("bench.yaml", i, d) for i, d in enumerate(benchmark_policies()))
    assert not compilation.errors, compilation.errors
    engine = assemble_engine(compilation, EngineSettings())
    pod = realistic_pod()
    size = pod_size_bytes()

    def admit() -> object:
        request = AdmissionInput.from_object(pod)
        request.input_size = size
        return engine.admit(request)

    result = admit()
    applied = [o.policy for o in result.outcomes if o.status == "applied"]
    assert len(applied) == 5, applied
    for _ in range(200):
        admit()
    samples = []
    started = time.perf_counter()
    for _ in range(args.requests):
        t0 = time.perf_counter()
        admit()
        samples.append((time.perf_counter() - t0) * 1e6)
    elapsed = time.perf_counter() - started
    samples.sort()
    p50 = statistics.median(samples)
    p99 = samples[int(len(samples) * 0.99) - 1]
    print(f"Pod {size:,} bytes; 20 policies, 5 matching ({', '.join(applied)}); {args.requests} requests")
    print(f"  p50 {p50:,.0f} µs   p99 {p99:,.0f} µs   mean {statistics.fmean(samples):,.0f} µs")
    print(
        f"  throughput {args.requests / elapsed:,.0f} requests/s on one core; patch has {len(result.patch)} operations"
    )
    typed_conversion_costs(pod)
    provenance_costs(compilation, pod, size)


def typed_conversion_costs(pod: dict[str, Any]) -> None:
    """µs per call of the typed conversion's steps on a per-request ApplyConfiguration."""
    registry = SchemaRegistry()
    schema = registry.for_kind("v1", "Pod")
    assert schema is not None
    context = {"runAsNonRoot": True, "allowPrivilegeEscalation": False}
    containers = [{"name": c["name"], "securityContext": context} for c in pod["spec"]["containers"]]
    configuration = {"spec": {"containers": containers}, "metadata": {"labels": {"typed": "yes"}}}
    merged = merge.apply_configuration(pod, configuration, schema)
    node = typed.node_of(schema)
    rows = [
        [
            "type the configuration (ObjectToTyped + atomic guard)",
            per_call_us(lambda: mutations.check_configuration(configuration, schema, replace_atomic=False)),
        ],
        ["merge (for scale)", per_call_us(lambda: merge.apply_configuration(pod, configuration, schema))],
        [
            "MAP: merged Pod to its Go type (FromUnstructured)",
            per_call_us(lambda: go_convert.convert(merged, node, pod)),
        ],
    ]
    print()
    print(
        table(f"Typed conversion, {len(containers)} containers", ["step", "µs"], [[r[0], f"{r[1]:,.1f}"] for r in rows])
    )


ROUNDS = 7


def provenance_costs(compilation: object, pod: dict[str, object], size: int) -> None:
    """µs per request of the webhook's work with each provenance setting, and the ratio to none."""
    engine = assemble_engine(compilation, EngineSettings())  # type: ignore[arg-type]
    recording = assemble_engine(compilation, EngineSettings(record_provenance=True))  # type: ignore[arg-type]
    review = reviews.Review("admission.k8s.io/v1", "uid", AdmissionInput.from_object(pod))

    def request() -> AdmissionInput:
        fresh = AdmissionInput.from_object(pod)
        fresh.input_size = size
        return fresh

    def without_annotations(result: AdmissionResult) -> AdmissionResult:
        return AdmissionResult(result.allowed, result.original, result.object, result.patch, [], "", result.warnings)

    def no_provenance() -> object:  # the response of a result with no outcomes builds no annotations
        return reviews.build_response(review, without_annotations(engine.admit(request())))

    def audit_annotations() -> object:  # what `celmut serve` does
        return reviews.build_response(review, engine.admit(request()))

    def record_on_object() -> object:  # serve --record-provenance
        return reviews.build_response(review, recording.admit(request()))

    def explained() -> object:  # celmut apply --explain, celmut explain
        result = engine.admit(request(), explain=True)
        return from_outcomes(result.outcomes, result.object).to_dict()

    sample = engine.admit(request())
    annotations = provenance_annotations(sample)
    variants = [
        ("no provenance (admit + response)", no_provenance),
        ("audit annotations (default)", audit_annotations),
        ("+ celmut.io/mutated-by on the object", record_on_object),
        ("explain (per mutation, CLI only)", explained),
    ]
    # Interleaved rounds, each variant beside the baseline: a busy shared machine drifts between rounds,
    # the ratio within a round does not; the medians of both are printed.
    costs: dict[str, list[float]] = {name: [] for name, _ in variants}
    ratios: dict[str, list[float]] = {name: [] for name, _ in variants}
    for _ in range(ROUNDS):
        base = per_call_us(no_provenance, min_time=0.3, repeats=3)
        for name, fn in variants:
            cost = base if fn is no_provenance else per_call_us(fn, min_time=0.3, repeats=3)
            costs[name].append(cost)
            ratios[name].append(cost / base)
    rows = [
        [name, f"{statistics.median(costs[name]):,.0f}", f"{statistics.median(ratios[name]):.2f}×"]
        for name, _ in variants
    ]
    sizes = ", ".join(f"{key} {len(value)} B" for key, value in annotations.items())
    title = f"\nProvenance, same run (auditAnnotations: {sizes})"
    print(table(title, ["webhook work per request", "µs", "ratio"], rows))


if __name__ == "__main__":
    main()
