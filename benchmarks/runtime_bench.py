"""Policy runtime benchmark: one admission request through 20 MutatingPolicies (5 matching) on a
~6 KB Pod. Prints p50/p99 latency and throughput; never asserts on time.

    python benchmarks/runtime_bench.py [--requests N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import pod_size_bytes, realistic_pod

from celmut.compile.pipeline import compile_documents
from celmut.runtime import AdmissionInput
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


if __name__ == "__main__":
    main()
