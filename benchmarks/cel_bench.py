"""CEL layer benchmark: stock cel-python vs celmut (on cel-python), side by side in one run.

Measures, on a realistic ~6 KB Pod: compiling an expression, getting the Pod into the engine's value
model, evaluating a typical match condition, and evaluating a JSONPatch-building map/filter.
Prints µs per call (median of repeats) and the ratio stock/celmut. Never asserts on time.
celmut needs no conversion: decoded JSON is its value model; its "conversion" row is building the
per-request activation with the input size known, as the webhook does.

    python benchmarks/cel_bench.py
"""

from __future__ import annotations

import itertools
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
    celmut_env = cel.Environment("kyverno")
    counter = itertools.count()

    def stock_compile() -> object:
        return stock_env.program(stock_env.compile(f"{MATCH_EXPRESSION} && {next(counter)} > 0"))

    def celmut_compile() -> object:
        return celmut_env.compile(f"{MATCH_EXPRESSION} && {next(counter)} > 0")  # fresh text: no cache hit

    stock_match = stock_env.program(stock_env.compile(MATCH_EXPRESSION))
    stock_patch = stock_env.program(stock_env.compile(PATCH_EXPRESSION_MAPS))
    celmut_match = celmut_env.compile(MATCH_EXPRESSION)
    celmut_patch = celmut_env.compile(PATCH_EXPRESSION_MAPS)
    celmut_typed = celmut_env.compile(PATCH_EXPRESSION_TYPED)

    stock_activation = {"object": celpy.json_to_cel(pod)}
    celmut_activation = cel.Activation(object=pod, budget=cel.Budget(limit=10**15, per_call_limit=10**9))
    assert bool(stock_match.evaluate(stock_activation)) == celmut_match.evaluate(celmut_activation)
    assert len(stock_patch.evaluate(stock_activation)) == len(celmut_patch.evaluate(celmut_activation))

    results = {
        "compile": (per_call_us(stock_compile), per_call_us(celmut_compile)),
        "conversion (Pod → engine values)": (
            per_call_us(lambda: celpy.json_to_cel(pod)),
            per_call_us(lambda: cel.Activation(object=pod, input_size=size)),
        ),
        "match condition": (
            per_call_us(lambda: stock_match.evaluate(stock_activation)),
            per_call_us(lambda: celmut_match.evaluate(celmut_activation)),
        ),
        "JSONPatch map/filter": (
            per_call_us(lambda: stock_patch.evaluate(stock_activation)),
            per_call_us(lambda: celmut_patch.evaluate(celmut_activation)),
        ),
        "conversion + match condition": (
            per_call_us(lambda: stock_match.evaluate({"object": celpy.json_to_cel(pod)})),
            per_call_us(lambda: celmut_match.evaluate(cel.Activation(object=pod, input_size=size))),
        ),
    }
    measured_size = per_call_us(lambda: cel.Activation(object=pod))
    typed = per_call_us(lambda: celmut_typed.evaluate(celmut_activation))
    rows = [[name, f"{stock:,.1f}", f"{mine:,.1f}", f"{stock / mine:,.1f}×"] for name, (stock, mine) in results.items()]
    rows.append(["JSONPatch{} typed (celmut only)", "n/a", f"{typed:,.1f}", ""])
    rows.append(["activation, size not given (walks the Pod)", "n/a", f"{measured_size:,.1f}", ""])
    print(f"Pod size: {pod_size_bytes():,} bytes (JSON); Python {sys.version.split()[0]}")
    print(table("CEL on cel-python: µs per call (median)", ["step", "stock celpy", "celmut", "ratio"], rows))
    target = results["conversion + match condition"][1]
    print(f"\nconversion + match condition: {target:.1f} µs (target < 300 µs)")


if __name__ == "__main__":
    main()
