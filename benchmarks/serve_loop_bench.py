"""The webhook's per-request work without HTTP, this checkout beside another: CPU µs per request.

What ``celmut serve`` does for each AdmissionReview body once uvicorn hands it over — decode and
validate the review, admit it, build the response, count metrics and audit annotations
(``Admission.inline``) — in a loop over a ~6 KB Pod, with the webhook's garbage-collector settings.
Policy sets (``benchmarks/policies.py``): none; 20 none of which match the Pod; 20 of which 5 match;
the all-pods set: 20 all on Pods (autogen on) of which 5 match a Pod with 12 env vars per container
(``all-pods``); one policy adding a label (``one-label``). ``--workers-metrics`` counts as a
``serve --workers N`` worker does; ``--api`` measures ``celmut.load(...).apply(pod)`` instead (the
public Python API: no review, no metrics, every policy's outcome reported).

Small changes drown in this machine's noise when served (``webhook_bench.py``: ±15% between runs),
so each tree runs in its own process, the trees alternate round by round, and the figure is the
minimum CPU time over rounds and repeats (sensitive to ~1%: a 4 µs loop added per request shows).

    python benchmarks/serve_loop_bench.py [--baseline DIR] [--rounds 3] [--requests 1500] [--workers-metrics]
        [--api] [--policies SET ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
POLICY_SETS = ("none", "no-match", "matching", "all-pods", "one-label")


def compared_trees(baseline: Path | None) -> dict[str, Path]:
    """This checkout's celmut, and the one in ``baseline`` when given."""
    trees = {"celmut": HERE.parent}
    if baseline is not None:
        trees["baseline"] = baseline.resolve()
    return trees


def _policy_set(name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The policies and the Pod of one set."""
    sys.path.insert(0, str(HERE))
    from workloads import pod_with_env, realistic_pod

    from policies import all_pods_policies, benchmark_policies, non_matching_policies, one_label_policy

    if name == "all-pods":
        return all_pods_policies(), pod_with_env()
    if name == "one-label":
        return [one_label_policy()], realistic_pod()
    chosen = {"none": list, "no-match": non_matching_policies, "matching": benchmark_policies}[name]()
    return chosen, realistic_pod()


def _min_cpu_us(run: Callable[[int], None], requests: int) -> float:
    samples = []
    for _ in range(5):
        started = time.process_time()
        run(requests)
        samples.append((time.process_time() - started) / requests * 1e6)
    return min(samples)


def api_loop(policy_set: str, requests: int) -> float:
    """``celmut.load(...).apply(pod)``: minimum CPU µs per call over 5 repeats."""
    import yaml

    import celmut

    chosen, pod = _policy_set(policy_set)
    directory = Path(tempfile.mkdtemp(prefix="celmut-api-loop-"))
    for policy in chosen:
        (directory / f"{policy['metadata']['name']}.yaml").write_text(yaml.safe_dump(policy))
    policies = celmut.load(directory)

    def run(count: int) -> None:
        for _ in range(count):
            policies.apply(pod)

    run(300)
    return _min_cpu_us(run, requests)


def serve_loop(policy_set: str, requests: int, shared_metrics: bool) -> float:
    """Minimum CPU µs per request over 5 repeats (run in a child process, with its tree's celmut)."""
    sys.path.insert(0, str(HERE))
    from workloads import admission_review

    from celmut import cel, heap
    from celmut.compile.pipeline import compile_documents
    from celmut.server.admission import Admission
    from celmut.server.metrics import Metrics, share_between_workers
    from celmut.service.assembly import assemble_engine
    from celmut.service.settings import surface_engine
    from celmut.sources.documents import Document

    chosen, pod = _policy_set(policy_set)
    compilation = compile_documents(Document("bench.yaml", i, d) for i, d in enumerate(chosen))
    engine = assemble_engine(compilation, surface_engine())
    if shared_metrics:
        directory = tempfile.mkdtemp(prefix="celmut-serve-loop-")
        share_between_workers(directory)
        metrics = Metrics(directory)
    else:
        metrics = Metrics()
    admission = Admission(metrics, None)
    bodies = [admission_review(pod) for _ in range(64)]

    def run(count: int) -> None:
        for index in range(count):
            budget = cel.Budget.with_timeout(10.0)
            answer = admission.inline(bodies[index % 64], engine, budget, None, time.perf_counter(), 0.5)
            assert answer is not None and answer.status == 200

    heap.tune()  # what serve does before loading
    first = admission.inline(bodies[0], engine, cel.Budget.with_timeout(10.0), None, time.perf_counter(), 0.5)
    assert first is not None and b"internal error" not in first.body, first  # a failing tree measures nothing
    run(300)
    heap.settle()  # and once loaded
    return _min_cpu_us(run, requests)


def measure(tree: Path, policy_set: str, requests: int, shared_metrics: bool, api: bool) -> float:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", policy_set, "--requests", str(requests)]
    if shared_metrics:
        command.append("--workers-metrics")
    if api:
        command.append("--api")
    environment = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory() as outside:  # not the checkout: python would import its celmut first
        done = subprocess.run(command, env=environment, cwd=outside, capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, help="a directory holding another celmut package")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the trees (default 3)")
    parser.add_argument("--requests", type=int, default=1500, help="requests per repeat (default 1500)")
    parser.add_argument("--workers-metrics", action="store_true", help="count metrics as a --workers worker")
    parser.add_argument("--api", action="store_true", help="celmut.load(...).apply(pod) instead of the webhook's work")
    parser.add_argument("--policies", choices=POLICY_SETS, action="append", help="one policy set (repeatable)")
    parser.add_argument("--child", choices=POLICY_SETS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        figure = (
            api_loop(args.child, args.requests)
            if args.api
            else serve_loop(args.child, args.requests, args.workers_metrics)
        )
        print(f"{figure:.2f}")
        return

    sys.path.insert(0, str(HERE))
    from timing import table

    trees = compared_trees(args.baseline)
    rows = []
    for policy_set in args.policies or POLICY_SETS:
        best = dict.fromkeys(trees, float("inf"))
        for _ in range(args.rounds):
            for name, tree in trees.items():
                best[name] = min(best[name], measure(tree, policy_set, args.requests, args.workers_metrics, args.api))
        row = [policy_set, *(f"{best[name]:.1f}" for name in trees)]
        if "baseline" in trees:
            row.append(f"{best['celmut'] / best['baseline']:.2f}×")
        rows.append(row)
    headers = ["policies", *(f"{name} µs" for name in trees), *(["celmut / baseline"] if "baseline" in trees else [])]
    metrics = "as a --workers worker" if args.workers_metrics else "one process"
    what = "celmut.load(...).apply(pod)" if args.api else f"decode → admit → response, metrics {metrics}"
    print(table(f"CPU µs per request, {what} (min of rounds)", headers, rows))


if __name__ == "__main__":
    main()
