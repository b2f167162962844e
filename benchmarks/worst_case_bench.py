"""The worst one admission can cost the webhook: CPU time and peak RSS, per kind of pathology.

Each case is a MutatingPolicy whose 15 variables each spend as much of one operation as the
per-expression limit (1e6 cost units) allows — together more than the request's budget (1e7) —
run through the webhook's own admission path (``celmut.server.admission``) with the chart's
defaults (timeout 10 s, so a 9 s deadline), each in a fresh process so its peak RSS is its own.
Printed: the outcome (which limit stopped it), CPU seconds, wall seconds, and the peak RSS over the
process's RSS once the policies were loaded.

    python benchmarks/worst_case_bench.py [case ...]
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import table
from workloads import admission_review, realistic_pod

from policies import variables_policy

BIG_TEXT = "x" * 2_500_000  # one annotation near the API server's 3 MiB request limit
CASES: dict[str, str] = {
    "loop": "lists.range(220000).all(i, i >= 0)",
    "sort ints": "lists.range(45000).map(i, 45000 - i).sort().size() > 0",
    "sort strings": "lists.range(38000).map(i, string(45000 - i)).sort().size() > 0",
    "sortBy": "lists.range(45000).sortBy(i, -i).size() > 0",
    "equality": "lists.range(300000) == lists.range(300000)",
    "nested equality": "lists.range(100000).map(i, [[i], [i]]) == lists.range(100000).map(i, [[i], [i]])",
    "in list": "lists.range(200000).map(i, [i]).exists(x, x in [[-1], [-2], [-3]])",
    "distinct": "lists.range(950).map(i, [i]).distinct().size() > 0",
    "sets": "!sets.intersects(lists.range(650).map(i, [i]), lists.range(650).map(i, [-i - 1]))",
    "format": "'%s'.format([lists.range(250000)]).size() > 0",
    "json": "json.marshal(lists.range(250000)).size() > 0",
    "strings built": "lists.range(100000).map(i, string(i) + '-0123456789abcdef0123456789abcdef').size() > 0",
    "maps built": "lists.range(60000).map(i, {'a': [i], 'b': [i]}).size() > 0",
    "ints built": "lists.range(900000).size() > 0",
    "string doubling": "size(cel.bind(a, object.metadata.annotations.big, a + a + a + a + a + a)) > 0",
    "regex on input": "!object.metadata.annotations.big.matches('^(x|y)*z$')",
    "split input": "object.metadata.annotations.big.split('').size() > 0",
    "replace input": "object.metadata.annotations.big.replace('x', 'yy').size() > 0",
    "shared structure": "variables.m.size() > 0 && variables.m == variables.n",
}
VARIABLES = 15  # more than the request budget (1e7) allows when each spends near 1e6
LEVELS = [{"name": "m0", "expression": "{'k': [1, 2, 3, 4, 5, 6, 7, 8]}"}] + [
    {"name": f"m{i}", "expression": "{" + ", ".join(f"'k{k}': variables.m{i - 1}" for k in range(8)) + "}"}
    for i in range(1, 10)
]


def policy(expression: str) -> dict[str, Any]:
    variables = [{"name": f"v{i}", "expression": expression} for i in range(VARIABLES)]
    if "variables.m" in expression:
        variables = [
            *LEVELS,
            *[
                {"name": "n" + v["name"][1:], "expression": v["expression"].replace("variables.m", "variables.n")}
                for v in LEVELS
            ],
            {"name": "m", "expression": "variables.m9"},
            {"name": "n", "expression": "variables.n9"},
            *variables,
        ]
    return variables_policy("worst", variables, VARIABLES)


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def run_case(name: str) -> dict[str, Any]:
    """In this (fresh) process: load the policy, admit one big pod, measure."""
    from celmut import cel, heap
    from celmut.compile.pipeline import compile_documents
    from celmut.server.admission import Admission
    from celmut.server.app import ServerSettings
    from celmut.server.metrics import Metrics
    from celmut.service.assembly import EngineSettings, assemble_engine
    from celmut.sources.documents import Document

    heap.tune()
    compilation = compile_documents([Document("worst.yaml", 0, policy(CASES[name]))])
    assert not compilation.errors, compilation.errors
    engine = assemble_engine(compilation, EngineSettings())
    pod = realistic_pod()
    pod["metadata"].setdefault("annotations", {})["big"] = BIG_TEXT
    body = admission_review(pod)
    heap.settle()
    loaded = rss_kb()
    resource_before = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter()
    budget = cel.Budget.with_timeout(ServerSettings().deadline_seconds)
    answer = Admission(Metrics()).answer(body, engine, budget, None, wall)
    wall = time.perf_counter() - wall
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - resource_before.ru_utime - resource_before.ru_stime
    response = orjson.loads(answer.body)["response"]
    outcome = (response.get("warnings") or ["no limit reached"])[0].replace(" (ignored: failurePolicy Ignore)", "")
    return {
        "outcome": outcome.rsplit(": ", 1)[-1][:60],
        "cpu": cpu,
        "wall": wall,
        "peak_mb": (usage.ru_maxrss - loaded) / 1024,
        "after_mb": (rss_kb() - loaded) / 1024,
        "spent": budget.spent,
        "allocated_mb": budget.allocated / 2**20,
    }


def main(names: list[str]) -> None:
    rows = []
    worst_cpu = worst_rss = 0.0
    for name in names or list(CASES):
        done = subprocess.run(
            [sys.executable, __file__, "--case", name], capture_output=True, text=True, check=False, timeout=120
        )
        if done.returncode != 0:
            rows.append([name, "crashed: " + done.stderr.strip().splitlines()[-1][:60], "", "", "", ""])
            continue
        result = json.loads(done.stdout.strip().splitlines()[-1])
        worst_cpu, worst_rss = max(worst_cpu, result["cpu"]), max(worst_rss, result["peak_mb"])
        rows.append(
            [
                name,
                result["outcome"],
                f"{result['cpu']:.2f}",
                f"{result['wall']:.2f}",
                f"{result['peak_mb']:.0f}",
                f"{result['after_mb']:.0f}",
            ]
        )
    headers = ["case", "stopped by", "CPU s", "wall s", "peak +MB", "after +MB"]
    print(table("one pathological admission (chart defaults)", headers, rows))
    print(f"\nworst CPU {worst_cpu:.2f} s, worst peak RSS +{worst_rss:.0f} MB over the loaded process")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        print(json.dumps(run_case(sys.argv[2])))
    else:
        main(sys.argv[1:])
