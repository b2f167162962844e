"""CEL layer benchmark: stock cel-python vs celmut's two engines — ``interpreted`` (the planner's
closures) and ``compiled`` (one generated Python function per expression) — side by side in one run.

Measures, on a realistic ~6 KB Pod: compiling an expression, getting the Pod into the engine's value
model, evaluating a typical match condition, and evaluating a JSONPatch-building map/filter.
Prints µs per call (median of repeats) and the ratios stock/compiled and interpreted/compiled. Never
asserts on time.
celmut needs no conversion: decoded JSON is its value model; its "conversion" row is building the
per-request activation with the input size known, as the webhook does.

    python benchmarks/cel_bench.py
"""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import celpy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import per_call_us, table
from workloads import (
    MATCH_EXPRESSION,
    PATCH_EXPRESSION_MAPS,
    PATCH_EXPRESSION_TYPED,
    pod_size_bytes,
    realistic_pod,
)

from celmut import cel


def main() -> None:
    pod = realistic_pod()
    size = pod_size_bytes()  # surfaces know the request size: the webhook passes the body length
    stock_env = celpy.Environment()
    counter = itertools.count()

    def stock_compile() -> object:
        return stock_env.program(stock_env.compile(f"{MATCH_EXPRESSION} && {next(counter)} > 0"))

    stock_match = stock_env.program(stock_env.compile(MATCH_EXPRESSION))
    stock_patch = stock_env.program(stock_env.compile(PATCH_EXPRESSION_MAPS))
    stock_activation = {"object": celpy.json_to_cel(pod)}
    results: dict[str, list[float]] = {
        "compile": [per_call_us(stock_compile)],
        "conversion (Pod → engine values)": [per_call_us(lambda: celpy.json_to_cel(pod))],
        "match condition": [per_call_us(lambda: stock_match.evaluate(stock_activation))],
        "JSONPatch map/filter": [per_call_us(lambda: stock_patch.evaluate(stock_activation))],
        "conversion + match condition": [per_call_us(lambda: stock_match.evaluate({"object": celpy.json_to_cel(pod)}))],
        "JSONPatch{} typed (celmut only)": [math.nan],
    }
    # celmut's two engines: the planner's closures, and the code generated from them
    for engine in ("interpreted", "compiled"):
        env = cel.Environment("kyverno", backend=engine)

        def compile_fresh(e: cel.Environment = env) -> object:
            return e.compile(f"{MATCH_EXPRESSION} && {next(counter)} > 0")  # fresh text: no cache hit

        match, patch, typed = (
            env.compile(MATCH_EXPRESSION),
            env.compile(PATCH_EXPRESSION_MAPS),
            env.compile(PATCH_EXPRESSION_TYPED),
        )
        # one budget across every timed call: no cost or allocation limit (a request's would trip)
        activation = cel.Activation(object=pod, budget=cel.Budget(limit=10**15, per_call_limit=10**9, max_bytes=10**15))
        assert bool(stock_match.evaluate(stock_activation)) == match.evaluate(activation)
        assert len(stock_patch.evaluate(stock_activation)) == len(patch.evaluate(activation))
        results["compile"].append(per_call_us(compile_fresh))
        # celmut needs no conversion: decoded JSON is its value model; building the activation
        results["conversion (Pod → engine values)"].append(
            per_call_us(lambda: cel.Activation(object=pod, input_size=size))
        )
        results["match condition"].append(per_call_us(lambda m=match, a=activation: m.evaluate(a)))
        results["JSONPatch map/filter"].append(per_call_us(lambda p=patch, a=activation: p.evaluate(a)))
        results["conversion + match condition"].append(
            per_call_us(lambda m=match: m.evaluate(cel.Activation(object=pod, input_size=size)))
        )
        results["JSONPatch{} typed (celmut only)"].append(per_call_us(lambda t=typed, a=activation: t.evaluate(a)))
    measured_size = per_call_us(lambda: cel.Activation(object=pod))

    def cell(value: float) -> str:
        return "n/a" if math.isnan(value) else f"{value:,.1f}"

    def ratio(a: float, b: float) -> str:
        return "" if math.isnan(a) else f"{a / b:,.1f}×"

    rows = [
        [name, *(cell(v) for v in values), ratio(values[0], values[2]), ratio(values[1], values[2])]
        for name, values in results.items()
    ]
    rows.append(["activation, size not given (walks the Pod)", "n/a", cell(measured_size), cell(measured_size), "", ""])
    headers = ["step", "stock celpy", "celmut interpreted", "celmut compiled", "stock/compiled", "interpreted/compiled"]
    print(f"Pod size: {pod_size_bytes():,} bytes (JSON); Python {sys.version.split()[0]}")
    print(table("CEL on cel-python: µs per call (median)", headers, rows))
    target = results["conversion + match condition"][2]
    print(f"\nconversion + match condition: {target:.1f} µs (target < 300 µs)")


if __name__ == "__main__":
    main()
