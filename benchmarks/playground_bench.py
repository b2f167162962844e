"""The playground in headless Chromium (Debian's chromium and chromedriver, as the browser tests use):
what the first load costs with the editor, a run of 10 objects, and "Run as its pods" as the workload
grows.

* **first load**: a fresh browser profile each time (nothing cached) opens the page; the bytes are what
  came over the wire (``transferSize``: compressed) and what the browser decoded, for the page and all
  its files; the time is until the page is usable (its editors made, the catalog and the CEL
  environment in: ``performance.mark("celmut-ready")``), with DOMContentLoaded beside it. A reload
  (the files revalidated: 304s) is measured too.
* **a 10-object run**: the team-label example on 10 pods, from the Run button to the diff shown (the
  server's own time beside it), and the same request alone over HTTP.
* **the workload view**: the partialSpot preset on a Deployment of ``--page-replicas`` (100) replicas,
  from "Run as its pods" to the Pods table shown; and for each count of ``--replicas`` (10, 100, 1000)
  the request alone, the server's own time and the answer's size (a count over the page's limit of 500
  pods is left out: the page refuses it).
* **how the run grows**: the server's part of "Run as its pods" (the pods made, admitted one after the
  other, each one's reason) for each count of ``--replicas``, in a fresh process after a warm-up run,
  as CPU seconds; the page's 500-pod limit and 20 s bound are lifted for this figure alone.

``--baseline DIR`` runs another version of celmut beside this one (DIR holds its ``celmut`` package,
e.g. ``git archive main celmut | tar -x -C DIR``): a second playground whose requests alternate with
this one's, and its own growth runs (up to ``--baseline-most`` replicas: a quadratic baseline takes
minutes at 1000); each answer is compared with the baseline's, timings aside ("same" or "differs").
Each figure is the median of ``--runs`` (default 5; the growth runs once per count, ``--growth-runs``).
The growth table's "per pod vs 10" is the per-pod cost against the smallest count's: 1.0× for a run
linear in its pods. Figures only, never an assertion; on a busy machine read them side by side, as
ratios. ``--no-browser`` leaves out what needs Chromium.

    python benchmarks/playground_bench.py [--runs N] [--replicas 10 100 1000] [--baseline DIR]
        [--baseline-most 100] [--no-browser]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import table  # noqa: E402

from tests.playground.browser import chromium, missing  # noqa: E402
from tests.playground.page import by_id, choose_example, set_pane  # noqa: E402
from tests.playground.support import Playground, playground, without_timings  # noqa: E402

PAGE_LIMIT = 500  # the most pods the page runs (celmut.playground.workloads.MAX_PODS)
POD = """apiVersion: v1
kind: Pod
metadata: {{name: web-{n}, namespace: shop, labels: {{app: web}}}}
spec:
  containers: [{{name: web, image: nginx}}]
"""

# One growth run, in a fresh process of the package on sys.path: a warm-up run of 10 replicas (imports,
# compiled CEL), then the timed one; prints its CPU and wall seconds, its pods and its answer.
GROWTH = r"""
import json, resource, sys, time
from celmut.playground import session, workload_run, workloads
workloads.MAX_PODS = 10**9  # the page's limits, lifted for this figure
session.RUN_SECONDS = float("inf")
body = json.load(open(sys.argv[1]))
workload_run.run(session.State.from_json(body["warm"]), 0)
state = session.State.from_json(body["state"])
before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
answer = workload_run.run(state, 0)
wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
print(json.dumps({"cpu": cpu, "wall": wall, "pods": len(answer.get("pods", [])), "answer": answer}))
"""


def first_load(url: str) -> dict[str, float]:
    with chromium() as browser:
        browser.driver.get(url)
        browser.wait(lambda d: d.execute_script("return document.body.dataset.ready") == "true", "ready")
        cold = browser.driver.execute_script(LOAD_FIGURES)
        browser.driver.refresh()
        browser.wait(lambda d: d.execute_script("return document.body.dataset.ready") == "true", "ready")
        warm = browser.driver.execute_script(LOAD_FIGURES)
    return {**cold, "reload_ms": warm["ready_ms"], "reload_wire": warm["wire"]}


LOAD_FIGURES = """
const navigation = performance.getEntriesByType('navigation')[0];
const entries = [navigation, ...performance.getEntriesByType('resource')];
const ready = performance.getEntriesByName('celmut-ready')[0];
return {
  wire: entries.reduce((n, e) => n + e.transferSize, 0),
  decoded: entries.reduce((n, e) => n + e.decodedBodySize, 0),
  editor_wire: entries.filter(e => e.name.endsWith('/static/editor.js')).reduce((n, e) => n + e.transferSize, 0),
  requests: entries.length,
  dom_ms: navigation.domContentLoadedEventEnd,
  ready_ms: ready ? ready.startTime : -1,
};
"""


def post(served: Playground, path: str, body: Any) -> tuple[float, dict[str, Any], int]:
    with served.client() as client:
        started = time.perf_counter()
        answer = client.post(path, json=body)
        elapsed = time.perf_counter() - started
    return elapsed, answer.json(), len(answer.content)


def in_page(served: Playground, runs: int, state: dict[str, str], replicas: int) -> tuple[list[float], list[float]]:
    """(ms from Run to the diff shown, ms from "Run as its pods" to the Pods table) per run."""
    run_ms, pods_ms = [], []
    with chromium() as browser:
        browser.open(served.url)
        with browser.finishes("runs"):
            choose_example(browser, "spot-partial-workload")
        for _ in range(runs):
            with browser.finishes("runs"):
                set_pane(browser, "policies", state["policies"])
                set_pane(browser, "resources", state["resources"])
                set_pane(browser, "cluster", state["cluster"])
            started = time.perf_counter()
            with browser.finishes("runs"):
                by_id(browser, "run").click()
            run_ms.append((time.perf_counter() - started) * 1000)
        workload = (ROOT / "presets" / "spot-partial.yaml").read_text()
        deployment = (ROOT / "examples" / "workloads" / "web-deployment.yaml").read_text()
        deployment = deployment.replace("replicas: 10", f"replicas: {replicas}")
        with browser.finishes("runs"):
            set_pane(browser, "policies", workload)
            set_pane(browser, "resources", deployment)
        for _ in range(runs):
            by_id(browser, "tab-diff").click()  # where the offer is
            started = time.perf_counter()
            with browser.finishes("workloads"):
                by_id(browser, "run-pods").click()
            pods_ms.append((time.perf_counter() - started) * 1000)
    return run_ms, pods_ms


def workload_state(examples: dict[str, dict[str, str]], replicas: int) -> dict[str, str]:
    spot = dict(examples["spot-partial-workload"])
    spot["resources"] = spot["resources"].replace("replicas: 10", f"replicas: {replicas}")
    return spot


def growth(
    packages: dict[str, Path], examples: dict[str, dict[str, str]], counts: list[int], runs: int, most: int
) -> Iterator[tuple[int, dict[str, dict[str, Any]]]]:
    """Per count, each package's growth run (the median by CPU of ``runs``, the packages alternating);
    the baseline's only up to ``most`` replicas."""
    with tempfile.TemporaryDirectory(prefix="celmut-playground-bench-") as work:
        for count in counts:
            body = Path(work) / f"workload-{count}.json"
            body.write_text(
                json.dumps({"warm": workload_state(examples, 10), "state": workload_state(examples, count)})
            )
            running = {name: package for name, package in packages.items() if name == "celmut" or count <= most}
            samples: dict[str, list[dict[str, Any]]] = {name: [] for name in running}
            for _ in range(runs):
                for name, package in running.items():
                    done = subprocess.run(
                        [sys.executable, "-c", GROWTH, str(body)],
                        capture_output=True,
                        text=True,
                        cwd=package,  # ``-c`` imports from the working directory first
                        env={**os.environ, "PYTHONPATH": str(package)},
                        check=False,
                    )
                    if done.returncode:
                        raise SystemExit(f"{name}: growth run of {count} failed: {done.stderr[-2000:]}")
                    samples[name].append(json.loads(done.stdout))
            yield (
                count,
                {name: sorted(found, key=lambda s: s["cpu"])[len(found) // 2] for name, found in samples.items()},
            )


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--replicas", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--page-replicas", type=int, default=100, help="the workload the page runs in Chromium")
    parser.add_argument("--growth-runs", type=int, default=1)
    parser.add_argument("--baseline", type=Path, help="a directory holding another celmut package to run beside")
    parser.add_argument(
        "--baseline-most", type=int, default=1000, help="the baseline's growth runs stop at this many replicas"
    )
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    browser = not args.no_browser
    if browser and missing():
        print(f"no browser: {missing()} (--no-browser leaves out what needs it)")
        return 1
    packages = {"celmut": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    with ExitStack() as stack:
        served = {name: stack.enter_context(playground(package=package)) for name, package in packages.items()}
        with served["celmut"].client() as client:
            examples = {e["id"]: e["state"] for e in client.get("/api/examples").json()["examples"]}
        state = dict(examples["team-label"])
        state["resources"] = "---\n".join(POD.format(n=n) for n in range(10))
        rows: list[list[str]] = []
        if browser:
            loads = [first_load(served["celmut"].url) for _ in range(args.runs)]

            def loaded(key: str) -> float:
                return median([load[key] for load in loads])

            rows += [
                ["first load: bytes over the wire (all files)", f"{loaded('wire'):,.0f} B"],
                ["  of which the editor (gzip)", f"{loaded('editor_wire'):,.0f} B"],
                ["  bytes decoded", f"{loaded('decoded'):,.0f} B"],
                ["  requests", f"{loaded('requests'):.0f}"],
                ["  DOMContentLoaded", f"{loaded('dom_ms'):.0f} ms"],
                ["  usable (editors, catalog, CEL environment)", f"{loaded('ready_ms'):.0f} ms"],
                ["reload: bytes over the wire (304s)", f"{loaded('reload_wire'):,.0f} B"],
                ["  usable", f"{loaded('reload_ms'):.0f} ms"],
            ]
        figures: dict[str, dict[str, list[Any]]] = {name: {} for name in served}
        requests = [("10-object run", "/api/run", state)] + [
            (f"workload of {n}", "/api/workload", {"state": workload_state(examples, n), "resource": 0})
            for n in args.replicas
            if n <= PAGE_LIMIT
        ]
        for _ in range(args.runs):  # alternating: the same load on each
            for what, path, body in requests:
                for name, server in served.items():
                    figures[name].setdefault(what, []).append(post(server, path, body))
        if browser:
            for name, server in served.items():
                run_ms, pods_ms = in_page(server, args.runs, state, args.page_replicas)
                figures[name]["in page"] = [run_ms, pods_ms]
    print(figures_table(args, rows, figures, served))
    if args.replicas:
        print()
        print(growth_table(packages, examples, args.replicas, args.growth_runs, args.baseline_most))
    return 0


def figures_table(
    args: argparse.Namespace, rows: list[list[str]], figures: dict[str, Any], served: dict[str, Any]
) -> str:
    names = list(served)
    baseline = "baseline" in figures

    def ms(name: str, what: str, index: int, scale: float = 1000) -> float:
        return median([sample[index] if index != 1 else sample[1]["seconds"] for sample in figures[name][what]]) * scale

    def row(label: str, values: list[float], unit: str) -> list[str]:
        cells = [f"{v:,.0f} {unit}" for v in values]
        ratio = f"{values[0] / values[1]:.2f}×" if baseline and values[1] else ""
        return [label, *cells, ratio] if baseline else [label, *cells]

    out = [r + ([""] * len(names)) if baseline else r for r in rows]
    for what in figures["celmut"]:
        if what == "in page":
            continue
        out.append(row(f"{what}: the request alone", [ms(n, what, 0) for n in names], "ms"))
        out.append(row("  of which the server's run", [ms(n, what, 1) for n in names], "ms"))
        out.append(
            row("  answer size (JSON, before gzip)", [median([s[2] for s in figures[n][what]]) for n in names], "B")
        )
        answer = figures["celmut"][what][0][1]
        out.append(
            ["  summary", answer.get("summary", f"{len(answer.get('objects', []))} objects"), *[""] * (len(names) - 1)]
        )
        if baseline:
            same = without_timings(answer) == without_timings(figures["baseline"][what][0][1])
            out[-1] += ["same answer" if same else "the answers differ"]
    if "in page" in figures["celmut"]:
        out.append(row("10-object run: Run to the diff shown", [median(figures[n]["in page"][0]) for n in names], "ms"))
        out.append(row(f"workload of {args.page_replicas}: click to the Pods table shown",
                       [median(figures[n]["in page"][1]) for n in names], "ms"))  # fmt: skip
    headers = ["figure", *names, *(["celmut / baseline"] if baseline else [])]
    return table(f"celmut playground, median of {args.runs}", headers, out)


def growth_table(
    packages: dict[str, Path], examples: dict[str, Any], counts: list[int], runs: int, most: int
) -> str:
    """Per count: each package's CPU seconds and per pod, how the per-pod cost grew from the first count
    (1.0× when the run is linear in the pods), the summary, and the baseline beside."""
    names = list(packages)
    baseline = "baseline" in packages
    first: dict[str, float] = {}
    out: list[list[str]] = []
    for count, found in growth(packages, examples, counts, runs, most):
        per_pod = {n: found[n]["cpu"] / count for n in found}
        for n in per_pod:
            first.setdefault(n, per_pod[n])
        row = [f"{count} replicas"]
        for n in names:
            row += (
                [f"{found[n]['cpu']:.2f} s", f"{per_pod[n] * 1000:.2f} ms", f"{per_pod[n] / first[n]:.1f}×"]
                if n in found
                else ["-", "-", "-"]
            )
        mine = found["celmut"]
        row.append(mine["answer"].get("summary", ""))
        if baseline:
            theirs = found.get("baseline")
            same = theirs is not None and without_timings(mine["answer"]) == without_timings(theirs["answer"])
            row += (
                [f"{theirs['cpu'] / mine['cpu']:.1f}×", "same answer" if same else "the answers differ"]
                if theirs
                else ["-", f"baseline left out (over --baseline-most {most})"]
            )
        out.append(row)
    headers = ["workload"]
    for n in names:
        headers += [f"{n} CPU", f"{n} per pod", f"{n} per pod vs {counts[0]}"]
    headers += ["summary", *(["speed-up", "vs baseline"] if baseline else [])]
    title = f'how "Run as its pods" grows (partialSpot; the server\'s run, fresh process, CPU, median of {runs})'
    return table(title, headers, out)


if __name__ == "__main__":
    sys.exit(main())
