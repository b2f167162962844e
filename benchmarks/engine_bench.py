"""CEL engines side by side in one run: stock cel-python, and celmut's two engines (``interpreted``:
the planner's closures; ``compiled``: the Python code generated from them), on the same ~6 KB Pod.

Rows: compiling an expression; getting the Pod into the engine's values; a typical match
condition; a JSONPatch-building map/filter; conversion + match together; a whole admission request
through the runtime (20 MutatingPolicies, 5 matching — benchmarks/policies.py); and the floor:
JSON-decoding and re-encoding the AdmissionReview alone. µs per call, median of repeats; reports,
never asserts.

Stock cel-python cannot run the benchmark policies (typed JSONPatch/Object constructions, optional
syntax), so its admission row is the CEL work of the same request only, written with map literals
and has(): the Pod converted for each policy that evaluates CEL, and every condition and mutation
evaluated — a lower bound (no matching, patching or merging).

The floor uses orjson, celmut's webhook codec (a project dependency, ~5x the stdlib on these
bodies); the stdlib json floor is printed too.

    python benchmarks/engine_bench.py [--requests N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import celpy
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import per_call_us, table
from workloads import (
    MATCH_EXPRESSION,
    PATCH_EXPRESSION_MAPS,
    PATCH_EXPRESSION_TYPED,
    admission_review,
    pod_size_bytes,
    realistic_pod,
)

from celmut import cel
from celmut.compile.pipeline import compile_documents
from celmut.runtime import AdmissionEngine, AdmissionInput
from celmut.server.review import build_response, parse_review
from celmut.service.assembly import EngineSettings, assemble_engine
from celmut.sources.documents import Document
from policies import benchmark_policies

# celmut's engines: the planner's closures (the reference) and the code generated from them
ENGINES = ("interpreted", "compiled")

# The CEL of the benchmark request, in what stock cel-python accepts: (conditions, mutations) of each
# policy that evaluates CEL on the Pod, in evaluation order (policies.py).
STOCK_POLICIES: list[tuple[list[str], list[str]]] = [
    ([], ['[{"op": "add", "path": "/metadata/labels/policy-0", "value": "applied"}]']),
    (
        [],
        [
            '{"spec": {"containers": object.spec.containers.map(c, {"name": c.name, '
            '"securityContext": {"allowPrivilegeEscalation": false}})}}'
        ],
    ),
    (
        ['has(object.metadata.labels) && "team" in object.metadata.labels'],
        ['[{"op": "add", "path": "/metadata/annotations/owner-2", "value": object.metadata.labels.team}]'],
    ),
    (
        ['object.spec.containers.exists(c, c.image.startsWith("nginx"))'],
        ['{"metadata": {"annotations": {"web-server-3": "nginx"}}}'],
    ),
    (
        [],
        [
            "object.spec.containers.filter(c, !has(c.resources.limits.cpu)).map(c, "
            '{"op": "add", "path": "/metadata/annotations/no-cpu-limit-" + c.name, "value": "true"})'
        ],
    ),
    (['object.metadata.namespace == "kube-system"'], []),
    (['"never" in object.metadata.labels'], []),
    (['object.spec.containers.all(c, c.image.startsWith("gcr.io/"))'], []),
    (
        [
            'has(object.metadata.annotations) && "skip" in object.metadata.annotations && '
            'object.metadata.annotations["skip"] == "true"'
        ],
        [],
    ),
    (["size(object.spec.containers) > 10"], []),
    (['request.operation == "UPDATE"'], []),
]


# Heavier expressions: where the evaluator, not the conversion, dominates.
HEAVY = {
    "regex over 51 env names": (
        'object.spec.containers.all(c, c.env.all(e, e.name.matches("^[A-Z_0-9]+$") && '
        "(!has(e.value) || size(e.value) < 100)))"
    ),
    "arithmetic, 408 iterations": "object.spec.containers.all(c, c.env.all(e, [1, 2, 3, 4, 5, 6, 7, 8].all(i, "
    "i * i + size(e.name) > 0)))",
}


def median_us(fn: Any, requests: int) -> float:
    for _ in range(min(200, requests)):
        fn()
    samples = []
    for _ in range(requests):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def cel_rows(pod: dict[str, Any]) -> dict[str, list[float]]:
    size = pod_size_bytes()
    stock_env = celpy.Environment()
    counter = itertools.count()
    stock_match = stock_env.program(stock_env.compile(MATCH_EXPRESSION))
    stock_patch = stock_env.program(stock_env.compile(PATCH_EXPRESSION_MAPS))
    stock_activation = {"object": celpy.json_to_cel(pod)}
    rows: dict[str, list[float]] = {
        "compile": [
            per_call_us(lambda: stock_env.program(stock_env.compile(f"{MATCH_EXPRESSION} && {next(counter)} > 0")))
        ],
        "conversion (Pod → engine values)": [per_call_us(lambda: celpy.json_to_cel(pod))],
        "match condition": [per_call_us(lambda: stock_match.evaluate(stock_activation))],
        "JSONPatch map/filter": [per_call_us(lambda: stock_patch.evaluate(stock_activation))],
        "conversion + match condition": [per_call_us(lambda: stock_match.evaluate({"object": celpy.json_to_cel(pod)}))],
    }
    heavy_stock = {name: stock_env.program(stock_env.compile(source)) for name, source in HEAVY.items()}
    for name, program in heavy_stock.items():
        rows[name] = [per_call_us(lambda p=program: p.evaluate(stock_activation))]
    for engine in ENGINES:
        env = cel.Environment("kyverno", backend=engine)
        match, patch = env.compile(MATCH_EXPRESSION), env.compile(PATCH_EXPRESSION_TYPED)
        # one budget across every timed call: no cost or allocation limit (a request's would trip)
        budget = cel.Budget(limit=10**15, per_call_limit=10**9, max_bytes=10**15)
        warm = cel.Activation(object=pod, budget=budget, input_size=size)
        assert match.evaluate(warm) is True and len(patch.evaluate(warm)) == 3

        def fresh() -> cel.Activation:  # a new request: a new budget, so nothing converted is reused
            return cel.Activation(object=pod, input_size=size)

        warm_match = per_call_us(lambda m=match, a=warm: m.evaluate(a))
        fresh_match = per_call_us(lambda m=match: m.evaluate(fresh()))
        activation = per_call_us(fresh)
        rows["compile"].append(per_call_us(lambda e=env: e.compile(f"{MATCH_EXPRESSION} && {next(counter)} > 0")))
        # celmut needs no conversion (decoded JSON is its value model): building the activation
        rows["conversion (Pod → engine values)"].append(max(fresh_match - warm_match, activation))
        rows["match condition"].append(warm_match)
        rows["JSONPatch map/filter"].append(per_call_us(lambda p=patch, a=warm: p.evaluate(a)))
        rows["conversion + match condition"].append(fresh_match)
        for name, source in HEAVY.items():
            heavy = env.compile(source)
            rows[name].append(per_call_us(lambda p=heavy, a=warm: p.evaluate(a)))
    return rows


def stock_admission(pod: dict[str, Any]) -> Any:
    env = celpy.Environment()
    programs = [
        ([env.program(env.compile(c)) for c in conditions], [env.program(env.compile(m)) for m in mutations])
        for conditions, mutations in STOCK_POLICIES
    ]
    request = {"operation": "CREATE", "object": pod, "oldObject": None}

    def admit() -> None:
        for conditions, mutations in programs:
            activation = {"object": celpy.json_to_cel(pod), "request": celpy.json_to_cel(request)}
            for program in conditions:
                program.evaluate(activation)
            for program in mutations:
                program.evaluate(activation)

    return admit


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    pod = realistic_pod()
    print(f"Pod {pod_size_bytes():,} bytes (JSON); engines: stock cel-python, celmut on {', '.join(ENGINES)}")

    rows = cel_rows(pod)
    body = admission_review(pod)
    floor_orjson = median_us(lambda: orjson.dumps(orjson.loads(body)), args.requests)
    floor_json = median_us(lambda: json.dumps(json.loads(body)).encode(), args.requests)

    admit_us, end_to_end = [median_us(stock_admission(pod), max(args.requests // 20, 50))], ["n/a"]
    for engine in ENGINES:
        compilation = compile_documents(
            (Document("bench.yaml", i, d) for i, d in enumerate(benchmark_policies())), backend=engine
        )
        assert not compilation.errors, compilation.errors
        runtime = assemble_engine(compilation, EngineSettings())

        def admit(r: AdmissionEngine = runtime) -> Any:
            request = AdmissionInput.from_object(pod)
            request.input_size = len(body)
            return r.admit(request)

        def serve(r: AdmissionEngine = runtime) -> bytes:
            review = parse_review(body)
            return build_response(review, r.admit(review.request))

        applied = [o.policy for o in admit().outcomes if o.status == "applied"]
        assert len(applied) == 5, applied
        admit_us.append(median_us(admit, args.requests))
        end_to_end.append(f"{median_us(serve, args.requests):,.1f}")

    headers = ["step", "stock celpy", *(f"celmut {e}" for e in ENGINES), *(f"stock/{e}" for e in ENGINES)]

    def row(name: str, values: list[float], extra: list[str] | None = None) -> list[str]:
        cells = [name, *(f"{x:,.1f}" for x in values)]
        cells += [f"{values[0] / x:,.1f}×" for x in values[1:]]
        return cells

    lines = [row(name, values) for name, values in rows.items()]
    lines.append(row("admission, 20 policies (stock: CEL work only)", admit_us))
    lines.append(["decode + admission + encode (orjson)", *end_to_end, *([""] * len(ENGINES))])
    print(table("µs per call (median)", headers, lines))
    print(
        f"\nfloor (decode + re-encode the {len(body):,}-byte AdmissionReview): "
        f"orjson {floor_orjson:,.1f} µs, stdlib json {floor_json:,.1f} µs"
    )
    interpreted, compiled = admit_us[1 + ENGINES.index("interpreted")], admit_us[1 + ENGINES.index("compiled")]
    print(f"admission, interpreted/compiled: {interpreted / compiled:,.2f}×")
    for engine, value in zip(ENGINES, admit_us[1:], strict=True):
        print(
            f"admission on {engine}: {value / floor_orjson:,.1f}× the orjson floor, "
            f"{value / floor_json:,.1f}× the stdlib floor (target ≤ 3×); "
            f"{admit_us[0] / value:,.1f}× faster than stock cel-python's CEL work (target ≥ 20×)"
        )


if __name__ == "__main__":
    main()
