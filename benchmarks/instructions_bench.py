"""Machine instructions per admission, counted by valgrind's callgrind: this checkout beside another.

On a shared 2-core machine CPU time moves by ±20% from run to run, more than most changes to the
admission path; the number of instructions a request executes does not move at all (the same
requests, ``PYTHONHASHSEED=0``). For each tree and policy set a child process loads the policies,
warms up (50 requests) with callgrind's instrumentation off, then counts ``--requests`` admissions
only. Instructions are not time (a system call or a cache miss costs more than its instructions),
so read this beside ``serve_loop_bench.py``; but a change that saves instructions saves CPU.

Modes: ``serve`` — what the webhook does per AdmissionReview body (decode, admit, response, metrics,
audit annotations: ``Admission.inline``); ``api`` — ``celmut.load(...).apply(pod)``. Policy sets are
``serve_loop_bench.py``'s. Needs ``valgrind`` (``apt-get install valgrind``).

    python benchmarks/instructions_bench.py [--baseline DIR] [--mode serve|api] [--requests 100]
        [--policies SET ...]
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
POLICY_SETS = ("none", "no-match", "matching", "all-pods", "one-label")  # serve_loop_bench.py's


def _admissions(policy_set: str, mode: str) -> Callable[[int], None]:
    """One admission of ``policy_set`` per call (its index picks the body), with this tree's celmut."""
    sys.path.insert(0, str(HERE))
    import serve_loop_bench

    from celmut import cel

    chosen, pod = serve_loop_bench._policy_set(policy_set)
    if mode == "api":
        import yaml

        import celmut

        directory = Path(tempfile.mkdtemp(prefix="celmut-instructions-"))
        for policy in chosen:
            (directory / f"{policy['metadata']['name']}.yaml").write_text(yaml.safe_dump(policy))
        policies = celmut.load(directory)

        def apply(index: int) -> None:
            policies.apply(pod)

        return apply

    from workloads import admission_review

    from celmut.compile.pipeline import compile_documents
    from celmut.server.admission import Admission
    from celmut.server.metrics import Metrics
    from celmut.service.assembly import assemble_engine
    from celmut.service.settings import surface_engine
    from celmut.sources.documents import Document

    compilation = compile_documents(Document("bench.yaml", i, d) for i, d in enumerate(chosen))
    engine = assemble_engine(compilation, surface_engine())
    admission = Admission(Metrics(), None)
    bodies = [admission_review(pod) for _ in range(16)]

    def admit(index: int) -> None:
        budget = cel.Budget.with_timeout(100.0)
        answer = admission.inline(bodies[index % 16], engine, budget, None, time.perf_counter(), 100.0)
        assert answer is not None and answer.status == 200

    return admit


def child(policy_set: str, mode: str, requests: int, flag: str) -> None:
    """Warm up, say ``ready``, wait for ``flag`` (instrumentation is on), run, say ``done``, wait."""
    from celmut import heap

    admit = _admissions(policy_set, mode)
    heap.tune()
    for index in range(50):
        admit(index)
    heap.settle()
    print("ready", flush=True)
    while not os.path.exists(flag):
        time.sleep(0.05)
    for index in range(requests):
        admit(index)
    print("done", flush=True)
    while not os.path.exists(flag + ".end"):
        time.sleep(0.05)


def count(tree: Path, policy_set: str, mode: str, requests: int) -> float:
    """Instructions per admission of ``tree``'s celmut."""
    work = tempfile.mkdtemp(prefix="celmut-callgrind-")
    flag, out = os.path.join(work, "go"), os.path.join(work, "callgrind.out")
    command = [
        "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", sys.executable,
        str(Path(__file__).resolve()), "--child", policy_set, "--mode", mode, "--requests", str(requests),
        "--flag", flag,
    ]  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    process = subprocess.Popen(
        command, env=environment, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert process.stdout is not None
    if process.stdout.readline().strip() != "ready":
        raise SystemExit(f"{tree}: the child did not start (valgrind installed?)")
    subprocess.run(["callgrind_control", "--instr=on", str(process.pid)], capture_output=True, check=True)
    Path(flag).touch()
    if process.stdout.readline().strip() != "done":
        raise SystemExit(f"{tree}: the child failed while counting")
    subprocess.run(["callgrind_control", "--instr=off", str(process.pid)], capture_output=True, check=True)
    Path(flag + ".end").touch()
    process.wait(timeout=600)
    total = 0
    for name in glob.glob(out + "*"):
        for line in Path(name).read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                total = max(total, int(line.split()[1]))
    return total / requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, help="a directory holding another celmut package")
    parser.add_argument("--mode", choices=("serve", "api"), default="serve")
    parser.add_argument("--requests", type=int, default=100, help="admissions counted (default 100)")
    parser.add_argument("--policies", choices=POLICY_SETS, action="append", help="one policy set (repeatable)")
    parser.add_argument("--child", choices=POLICY_SETS, help=argparse.SUPPRESS)
    parser.add_argument("--flag", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.mode, args.requests, args.flag)
        return

    sys.path.insert(0, str(HERE))
    from serve_loop_bench import compared_trees
    from timing import table

    trees = compared_trees(args.baseline)
    rows = []
    for policy_set in args.policies or POLICY_SETS:
        counted = {name: count(tree, policy_set, args.mode, args.requests) for name, tree in trees.items()}
        row = [policy_set, *(f"{counted[name] / 1000:,.0f}" for name in trees)]
        if "baseline" in trees:
            row.append(f"{counted['celmut'] / counted['baseline']:.3f}×")
        rows.append(row)
    headers = [
        "policies",
        *(f"{name} k instr." for name in trees),
        *(["celmut / baseline"] if "baseline" in trees else []),
    ]
    what = "celmut.load(...).apply(pod)" if args.mode == "api" else "decode → admit → response (the webhook's work)"
    print(table(f"Instructions per admission (callgrind), {what}", headers, rows))


if __name__ == "__main__":
    main()
