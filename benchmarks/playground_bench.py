"""The playground in headless Chromium (Debian's chromium and chromedriver, as the browser tests use):
what the first load costs with the editor, a run of 10 objects, and the workload view of 100 replicas.

* **first load**: a fresh browser profile each time (nothing cached) opens the page; the bytes are what
  came over the wire (``transferSize``: compressed) and what the browser decoded, for the page and all
  its files; the time is until the page is usable (its editors made, the catalog and the CEL
  environment in: ``performance.mark("celmut-ready")``), with DOMContentLoaded beside it. A reload
  (the files revalidated: 304s) is measured too.
* **a 10-object run**: the team-label example on 10 pods, from the Run button to the diff shown (the
  server's own time beside it), and the same request alone over HTTP.
* **the workload view of 100 replicas**: the partialSpot preset on a Deployment of 100 replicas, from
  "Run as its 100 pods" to the Pods table shown, and the request alone (its size too).

Each figure is the median of ``--runs`` (default 5). Figures only, never an assertion; on a busy
machine read them side by side, as ratios.

    python benchmarks/playground_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import table  # noqa: E402

from tests.playground.browser import chromium, missing  # noqa: E402
from tests.playground.page import by_id, choose_example, set_pane  # noqa: E402
from tests.playground.support import Playground, playground  # noqa: E402

POD = """apiVersion: v1
kind: Pod
metadata: {{name: web-{n}, namespace: shop, labels: {{app: web}}}}
spec:
  containers: [{{name: web, image: nginx}}]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--replicas", type=int, default=100)
    args = parser.parse_args()
    if missing():
        print(f"no browser: {missing()}")
        return 1
    with playground() as served:
        with served.client() as client:
            examples = {e["id"]: e["state"] for e in client.get("/api/examples").json()["examples"]}
        state = dict(examples["team-label"])
        state["resources"] = "---\n".join(POD.format(n=n) for n in range(10))
        loads = [first_load(served.url) for _ in range(args.runs)]
        runs = [post(served, "/api/run", state) for _ in range(args.runs)]
        spot = dict(examples["spot-partial-workload"])
        spot["resources"] = spot["resources"].replace("replicas: 10", f"replicas: {args.replicas}")
        pods = [post(served, "/api/workload", {"state": spot, "resource": 0}) for _ in range(args.runs)]
        run_ms, pods_ms = in_page(served, args.runs, state, args.replicas)

    def median(values: list[float]) -> float:
        return float(statistics.median(values))

    def loaded(key: str) -> float:
        return median([load[key] for load in loads])

    rows = [
        ["first load: bytes over the wire (all files)", f"{loaded('wire'):,.0f} B"],
        ["  of which the editor (gzip)", f"{loaded('editor_wire'):,.0f} B"],
        ["  bytes decoded", f"{loaded('decoded'):,.0f} B"],
        ["  requests", f"{loaded('requests'):.0f}"],
        ["  DOMContentLoaded", f"{loaded('dom_ms'):.0f} ms"],
        ["  usable (editors, catalog, CEL environment)", f"{loaded('ready_ms'):.0f} ms"],
        ["reload: bytes over the wire (304s)", f"{loaded('reload_wire'):,.0f} B"],
        ["  usable", f"{loaded('reload_ms'):.0f} ms"],
        ["10-object run: Run to the diff shown", f"{median(run_ms):.0f} ms"],
        ["  the request alone", f"{median([r[0] for r in runs]) * 1000:.0f} ms"],
        ["  of which the server's run", f"{median([r[1]['seconds'] for r in runs]) * 1000:.0f} ms"],
        [f"workload of {args.replicas}: click to the Pods table shown", f"{median(pods_ms):.0f} ms"],
        ["  the request alone", f"{median([p[0] for p in pods]) * 1000:.0f} ms"],
        ["  of which the server's run", f"{median([p[1]['seconds'] for p in pods]) * 1000:.0f} ms"],
        ["  answer size (JSON, before gzip)", f"{median([p[2] for p in pods]):,.0f} B"],
        ["  summary", pods[0][1].get("summary", json.dumps(pods[0][1])[:80])],
    ]
    print(table(f"celmut playground, median of {args.runs} (headless Chromium)", ["figure", "value"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
