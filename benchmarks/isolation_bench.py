"""Where an admission runs: on the event loop alone, on a thread pool, or in a process pool.

One run, side by side (20 MutatingPolicies, 5 matching a ~6 KB Pod; one more policy that burns CPU
until the 9 s deadline, each of its 15 variables within its limits, on pods labelled ``slow``):

1. the cost of a benign admission through each mechanism (sequential, µs per admission);
2. while one pathological admission runs: the event loop's lag (a 1 ms ticker, as /healthz would
   see it) and the latency of a benign admission submitted meanwhile.

The thread pool is what celmut serves with: the process pool isolates better (it can preempt), but
every admission pays the round trip, and the workers cannot share the webhook's cluster caches,
lookups and hot reloads without a second copy of each.

3. through the real server (``celmut serve`` as the chart runs it, its own process): the latency
   of benign admissions and of ``/healthz`` alone, while a pathological admission runs, and while
   a reload compiles a policy with a 99,000-code-point expression.

    python benchmarks/isolation_bench.py
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import table
from workloads import admission_review, realistic_pod

from celmut import cel
from celmut.compile.pipeline import compile_documents
from celmut.runtime import AdmissionEngine
from celmut.server.admission import Admission
from celmut.server.metrics import Metrics
from celmut.service.assembly import EngineSettings, assemble_engine
from celmut.sources.documents import Document
from policies import benchmark_policies, variables_policy

BURNER = "lists.range(950).map(i, [i]).distinct().size() > 0"  # ~1 s of CPU per variable, within its limits
BURN = variables_policy(
    "burn",
    [{"name": f"v{i}", "expression": BURNER} for i in range(15)],
    15,
    [{"name": "slow", "expression": "has(object.metadata.labels.slow)"}],
)
DEADLINE_SECONDS = 9.0
STATE: dict[str, Any] = {}  # the engine a forked worker process inherits


def build() -> tuple[AdmissionEngine, Admission]:
    documents = [*benchmark_policies(), BURN]
    compilation = compile_documents(Document("bench.yaml", i, d) for i, d in enumerate(documents))
    assert not compilation.errors, compilation.errors
    return assemble_engine(compilation, EngineSettings()), Admission(Metrics())


def answer(body: bytes) -> bytes:
    """What a process-pool worker runs: body in, response out."""
    engine, admission = STATE["engine"], STATE["admission"]
    return admission.answer(body, engine, cel.Budget.with_timeout(DEADLINE_SECONDS), None, time.perf_counter()).body


def bodies() -> tuple[bytes, bytes]:
    benign = admission_review(realistic_pod())
    review = orjson.loads(benign)
    review["request"]["object"]["metadata"].setdefault("labels", {})["slow"] = "yes"
    return benign, orjson.dumps(review)


async def per_admission_us(submit: Any, body: bytes, count: int = 300) -> float:
    for _ in range(20):
        await submit(body)
    started = time.perf_counter()
    for _ in range(count):
        await submit(body)
    return (time.perf_counter() - started) / count * 1e6


async def under_load(submit: Any, benign: bytes, slow: bytes) -> tuple[float, float, float, float]:
    """(max loop lag ms, p99 loop lag ms, benign latency ms, pathological seconds)."""
    lags: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            started = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append((time.perf_counter() - started - 0.001) * 1000)

    async def pathological() -> float:
        started = time.perf_counter()
        await submit(slow)
        done.set()
        return time.perf_counter() - started

    tick = asyncio.create_task(ticker())
    slow_task = asyncio.create_task(pathological())
    await asyncio.sleep(0.2)
    started = time.perf_counter()
    await submit(benign)
    benign_ms = (time.perf_counter() - started) * 1000
    seconds = await slow_task
    await tick
    lags.sort()
    return lags[-1], lags[int(len(lags) * 0.99)], benign_ms, seconds


async def main() -> None:
    engine, admission = build()
    STATE.update(engine=engine, admission=admission)
    benign, slow = bodies()
    loop = asyncio.get_running_loop()
    threads = concurrent.futures.ThreadPoolExecutor(4)
    processes = concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"))

    async def inline(body: bytes) -> bytes:
        return answer(body)

    async def thread(body: bytes) -> bytes:
        return await loop.run_in_executor(threads, answer, body)

    async def process(body: bytes) -> bytes:
        return await loop.run_in_executor(processes, answer, body)

    mechanisms = {"event loop (before)": inline, "thread pool (celmut)": thread, "process pool": process}
    costs = {name: await per_admission_us(submit, benign) for name, submit in mechanisms.items()}
    base = costs["event loop (before)"]
    print(
        table(
            "benign admission, sequential",
            ["mechanism", "µs/admission", "ratio"],
            [[name, f"{us:.0f}", f"{us / base:.2f}x"] for name, us in costs.items()],
        )
    )
    rows = []
    for name, submit in mechanisms.items():
        worst, p99, benign_ms, seconds = await under_load(submit, benign, slow)
        rows.append([name, f"{worst:.1f}", f"{p99:.1f}", f"{benign_ms:.1f}", f"{seconds:.2f}"])
    print()
    print(
        table(
            "while one admission burns its whole budget",
            ["mechanism", "loop lag max ms", "loop lag p99 ms", "benign admission ms", "pathological s"],
            rows,
        )
    )
    threads.shutdown()
    processes.shutdown()


# --- through the real server ---------------------------------------------------------------------------


def _latencies(client: httpx.Client, benign: bytes, count: int) -> tuple[list[float], list[float]]:
    admissions, probes = [], []
    for _ in range(count):
        started = time.perf_counter()
        client.post("/mutate", content=benign, headers={"Content-Type": "application/json"}).raise_for_status()
        admissions.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        client.get("/healthz").raise_for_status()
        probes.append((time.perf_counter() - started) * 1000)
    return admissions, probes


def _summary(values: list[float]) -> str:
    values = sorted(values)
    return f"{statistics.median(values):.1f} / {values[int(len(values) * 0.99)]:.1f} / {values[-1]:.1f}"


def served() -> None:
    benign, slow = bodies()
    with tempfile.TemporaryDirectory() as tmp:
        policies = Path(tmp) / "policies"
        policies.mkdir()
        for index, document in enumerate([*benchmark_policies(), BURN]):
            (policies / f"p{index}.yaml").write_text(yaml.safe_dump(document))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        command = [sys.executable, "-m", "celmut.main", "serve", "--policies", str(policies), "--self-signed"]
        command += ["--cert-dir", f"{tmp}/tls", "--port", str(port), "--timeout", "10", "--reload-interval", "0.5"]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
        try:
            while not Path(f"{tmp}/tls/ca.crt").exists():
                time.sleep(0.1)
            context = ssl.create_default_context(cafile=f"{tmp}/tls/ca.crt")
            with httpx.Client(base_url=f"https://127.0.0.1:{port}", verify=context, timeout=30) as client:
                while True:
                    try:
                        client.get("/readyz").raise_for_status()
                        break
                    except httpx.HTTPError:
                        time.sleep(0.1)
                rows = [["idle", *map(_summary, _latencies(client, benign, 200))]]

                def pathological() -> None:
                    with httpx.Client(base_url=f"https://127.0.0.1:{port}", verify=context, timeout=30) as other:
                        other.post("/mutate", content=slow, headers={"Content-Type": "application/json"})

                burner = threading.Thread(target=pathological)
                burner.start()
                time.sleep(0.3)
                rows.append(["a pathological admission running", *map(_summary, _latencies(client, benign, 300))])
                burner.join()
                big = "[" + ",".join(["object.metadata.name"] * 4700) + "].size() > 0"
                document = {**benchmark_policies()[0], "metadata": {"name": "big-expression"}}
                document = yaml.safe_load(yaml.safe_dump(document))
                document["spec"]["matchConditions"] = [{"name": "big", "expression": big}]
                (policies / "big.yaml").write_text(yaml.safe_dump(document))
                time.sleep(0.6)
                rows.append(["a reload compiling 99,000 code points", *map(_summary, _latencies(client, benign, 400))])
        finally:
            process.terminate()
            process.wait(30)
    print()
    print(
        table(
            "celmut serve (chart defaults): latency ms, p50 / p99 / max",
            ["while", "benign admission", "/healthz"],
            rows,
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
    served()
