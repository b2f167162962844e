"""What OpenTelemetry tracing costs an admission: off (the default), and on.

Runs the webhook's admission path (:class:`celmut.server.admission.Admission`, a review body in, the
response bytes out; four policies, one of them skipped by a matchCondition) in interleaved rounds:

* **off** — ``tracing=None``, as every webhook runs without the OTEL_* variables;
* **on** — the SDK with its batch processor and an exporter that discards (what the spans cost the
  admission, without the network).

It prints the median µs per admission of each, their ratio, and what the off path adds over the code
before tracing existed: the two ``tracing is not None`` tests of an admission, timed alone, as a share
of an admission. And it lists the OpenTelemetry modules loaded while tracing was off (none of the SDK
or the exporter; FastAPI itself imports opentelemetry-api). Figures only, never an assertion.

    python benchmarks/tracing_bench.py [--rounds N] [--per-round N]
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import sys
import tempfile
import time
import timeit
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

POLICY = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {{name: {name}}}
spec:
  autogen: {{podControllers: {{controllers: []}}}}
  matchConstraints:
    resourceRules: [{{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}}]
  matchConditions: [{{name: c, expression: '{condition}'}}]
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{{op: "add", path: "/metadata/labels/{name}", value: "yes"}}]'
"""


def _body() -> bytes:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
    }
    request = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "name": "web",
        "namespace": "shop",
        "operation": "CREATE",
        "userInfo": {"username": "alice"},
        "object": pod,
        "dryRun": False,
    }
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--per-round", type=int, default=300)
    args = parser.parse_args()

    from celmut import cel
    from celmut.server.admission import Admission
    from celmut.server.metrics import Metrics
    from celmut.server.run import ServeConfig, build_store
    from celmut.service.settings import ServiceSettings

    with tempfile.TemporaryDirectory() as directory:
        for index, condition in enumerate(["true", "true", "true", "false"]):
            Path(directory, f"p{index}.yaml").write_text(POLICY.format(name=f"p{index}", condition=condition))
        metrics = Metrics()
        store = build_store(ServeConfig(ServiceSettings(policy_paths=(directory,))), metrics)
        store.reload(force=True)
    engine = store.engine
    assert engine is not None
    body = _body()
    off = Admission(metrics)
    loaded_off = sorted({n.split(".")[1] for n in sys.modules if n.startswith("opentelemetry.")})

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from celmut.service.tracing_otel import OtelTracing

    class Discard(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Discard()))
    on = Admission(metrics, tracing=OtelTracing(provider))
    headers = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}

    def run(admission: Admission, trace: dict[str, str] | None) -> float:
        started = time.perf_counter()
        for _ in range(args.per_round):
            answer = admission.answer(body, engine, cel.Budget.with_timeout(8.0), None, time.perf_counter(), trace)
            assert answer.status == 200
        return (time.perf_counter() - started) / args.per_round * 1e6

    patch = json.loads(off.answer(body, engine, cel.Budget.with_timeout(8.0), None, time.perf_counter()).body)
    assert base64.b64decode(patch["response"]["patch"])  # the policies did change the pod
    timings: dict[str, list[float]] = {"off": [], "on": []}
    run(off, None), run(on, headers)  # warm-up
    for _ in range(args.rounds):
        timings["off"].append(run(off, None))
        timings["on"].append(run(on, headers))
    provider.shutdown()
    median = {name: statistics.median(values) for name, values in timings.items()}
    check = min(timeit.repeat("a.tracing is not None", globals={"a": off}, number=200_000, repeat=5)) / 200_000 * 1e6
    print(f"admission, tracing off: {median['off']:8.1f} µs   (median of {args.rounds} rounds × {args.per_round})")
    print(f"admission, tracing on:  {median['on']:8.1f} µs   (SDK + batch processor, spans discarded)")
    print(f"ratio on / off:         {median['on'] / median['off']:8.3f}")
    print(
        f"off path added by tracing: 2 × {check * 1000:.0f} ns = {2 * check:.3f} µs per admission "
        f"({2 * check / median['off'] * 100:.3f} % of an admission)"
    )
    print(f"opentelemetry modules loaded while off: {', '.join(loaded_off) or 'none'} (FastAPI imports the API)")


if __name__ == "__main__":
    main()
