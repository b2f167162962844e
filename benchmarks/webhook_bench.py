"""Webhook load test over HTTPS on loopback: celmut serve vs. the best Python floor.

The floor is a trivial FastAPI endpoint that only decodes the AdmissionReview with orjson and
encodes an allowing response, on uvicorn with httptools and uvloop (the fastest Python stack there
is, and the one celmut serves on); ``--h11-floor`` adds the same app on uvicorn's pure-Python h11
protocol and asyncio's loop. celmut runs 20 MutatingPolicies (5 matching a ~6 KB Pod;
``--no-match``: none matching; ``--all-pods``: the all-pods set, all 20 on Pods with autogen, 5
matching a Pod with 12 env vars per container).
Each server runs in its own process; the client sends at a fixed rate (open loop, one
request every 1/rate seconds, so a slow server cannot slow the client down) and measures latency
from the moment each request was due. CPU per request is the server process's user+system time
over the timed phase. The two servers are measured in A-B-B-A order to even out drift.

    python benchmarks/webhook_bench.py [--rate 200] [--seconds 8] [--baseline DIR] [--no-match]
        [--workers N] [--baseline-workers N] [--h11-floor] [--no-policies] [--all-pods] [--log-level INFO]

``--baseline DIR`` also serves the celmut package found in DIR (e.g. ``git archive main celmut | tar
-x -C DIR``) as a third server, so a change is measured before/after in the same run (A-B-C-C-B-A);
``--baseline . --workers 2 --baseline-workers 1`` compares two workers with one, side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import uvicorn
import yaml
from fastapi import FastAPI, Request
from fastapi.responses import Response

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import table
from workloads import admission_review, pod_with_env, realistic_pod

from celmut.kube import certs
from policies import all_pods_policies, benchmark_policies, non_matching_policies

# --- the floor server (run in its own process) --------------------------------------------------


# what ``--serve-floor … fast-patch`` answers: the label every benchmark policy set adds first, so the
# API server applies a patch as it does for celmut (benchmarks/apiserver_bench.py's floor)
FLOOR_PATCH = base64.b64encode(
    orjson.dumps([{"op": "add", "path": "/metadata/labels/policy-0", "value": "applied"}])
).decode()


def serve_floor(port: int, cert: str, key: str, stack: str) -> None:
    """The floor server: decode the review, allow it (``fast-patch``: with a fixed one-label patch)."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    patch = {"patchType": "JSONPatch", "patch": FLOOR_PATCH} if stack == "fast-patch" else {}

    @app.post("/mutate")
    async def mutate(request: Request) -> Response:
        review = orjson.loads(await request.body())
        answer = {
            "apiVersion": review["apiVersion"],
            "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": True, **patch},
        }
        return Response(orjson.dumps(answer), media_type="application/json")

    @app.get("/readyz")
    async def readyz() -> Response:
        return Response("ok", media_type="text/plain")

    loop, http = ("asyncio", "h11") if stack == "h11" else ("uvloop", "httptools")
    uvicorn.run(
        app, host="127.0.0.1", port=port, ssl_certfile=cert, ssl_keyfile=key, log_config=None, access_log=False,
        loop=loop, http=http,
    )  # fmt: skip


# --- the client -----------------------------------------------------------------------------------


@dataclass
class Run:
    name: str
    latencies_ms: list[float]
    cpu_seconds: float
    wall_seconds: float
    errors: int
    patched: int

    @property
    def requests(self) -> int:
        return len(self.latencies_ms)

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(int(len(ordered) * q), len(ordered) - 1)]


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its live children (``serve --workers N``), from /proc."""
    total = 0.0
    for member in [pid, *_children(pid)]:
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


class KeepAliveClient:
    """A minimal HTTP/1.1 client over pooled TLS connections.

    General-purpose clients (httpx, aiohttp) spend more CPU per request than the servers under test,
    and on a 2-core machine the client shares the CPU with them; this one only writes a prepared
    request and reads a Content-Length response.
    """

    def __init__(self, port: int, verify: ssl.SSLContext, path: str, max_connections: int = 32) -> None:
        self.port, self.verify, self.path = port, verify, path
        self.max_connections = max_connections
        self.opened = 0
        self.idle: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.idle.empty() and self.opened < self.max_connections:
            self.opened += 1
            return await asyncio.open_connection("127.0.0.1", self.port, ssl=self.verify)
        return await self.idle.get()

    async def post(self, body: bytes) -> tuple[int, bytes]:
        reader, writer = await self._connection()
        head = f"POST {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        headers = await reader.readuntil(b"\r\n\r\n")
        status = int(headers.split(b" ", 2)[1])
        length = int(
            next(h.split(b":", 1)[1] for h in headers.split(b"\r\n") if h.lower().startswith(b"content-length:"))
        )
        payload = await reader.readexactly(length)
        self.idle.put_nowait((reader, writer))
        return status, payload

    async def close(self) -> None:
        while not self.idle.empty():
            _, writer = self.idle.get_nowait()
            writer.close()


async def fixed_rate(
    port: int, verify: ssl.SSLContext, bodies: list[bytes], rate: float, seconds: float
) -> tuple[list[float], int, int]:
    latencies: list[float] = []
    errors = patched = 0
    client = KeepAliveClient(port, verify, "/mutate")
    try:

        async def one(body: bytes, due: float) -> None:
            nonlocal errors, patched
            try:
                status, payload = await client.post(body)
                answer = orjson.loads(payload)["response"]
                patched += "patch" in answer
                errors += status != 200 or not answer["allowed"]
            except (OSError, asyncio.IncompleteReadError, ValueError, KeyError):
                errors += 1
            latencies.append((time.perf_counter() - due) * 1000)

        start = time.perf_counter() + 0.05
        total = int(rate * seconds)
        tasks = []
        for index in range(total):
            due = start + index / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(bodies[index % len(bodies)], due)))
        await asyncio.gather(*tasks)
    finally:
        await client.close()
    return latencies, errors, patched


def measure(
    name: str, pid: int, port: int, verify: ssl.SSLContext, bodies: list[bytes], rate: float, seconds: float
) -> Run:
    asyncio.run(fixed_rate(port, verify, bodies, rate, min(seconds, 2.0)))  # warm up: connections, caches
    cpu = process_cpu_seconds(pid)
    started = time.perf_counter()
    latencies, errors, patched = asyncio.run(fixed_rate(port, verify, bodies, rate, seconds))
    return Run(name, latencies, process_cpu_seconds(pid) - cpu, time.perf_counter() - started, errors, patched)


async def max_throughput(port: int, verify: ssl.SSLContext, body: bytes, seconds: float, concurrency: int = 8) -> float:
    done = 0
    client = KeepAliveClient(port, verify, "/mutate", max_connections=concurrency)
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await client.post(body)
            done += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    await client.close()
    return done / seconds


# --- orchestration --------------------------------------------------------------------------------


def wait_ready(url: str, verify: ssl.SSLContext, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}:\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(url, verify=verify, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"server at {url} did not become ready")


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=200.0, help="requests per second (default 200)")
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each timed phase (default 8)")
    parser.add_argument("--baseline", type=Path, help="a directory holding another celmut package to serve beside")
    parser.add_argument("--no-match", action="store_true", help="20 policies, none matching the Pod")
    parser.add_argument("--no-policies", action="store_true", help="no policy at all: the serving stack alone")
    parser.add_argument(
        "--all-pods", action="store_true", help="the all-pods set: 20 Pod policies (autogen on), 5 matching a Pod"
    )
    parser.add_argument("--workers", type=int, default=1, help="celmut serve --workers N (default 1)")
    parser.add_argument(
        "--baseline-workers", type=int, help="the baseline's --workers (default: --workers); with --baseline ."
    )
    parser.add_argument("--h11-floor", action="store_true", help="also the floor on uvicorn's h11 + asyncio")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=("INFO", "WARNING"),
        help="celmut's --log-level (default WARNING; INFO, the chart's default, logs every admission)",
    )
    parser.add_argument("--serve-floor", nargs=4, metavar=("PORT", "CERT", "KEY", "STACK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_floor:
        port, cert, key, stack = args.serve_floor
        serve_floor(int(port), cert, key, stack)
        return

    work = Path(tempfile.mkdtemp(prefix="celmut-webhook-bench-"))
    policy_dir = work / "policies"
    policy_dir.mkdir()
    chosen = (
        []
        if args.no_policies
        else non_matching_policies()
        if args.no_match
        else all_pods_policies()
        if args.all_pods
        else benchmark_policies()
    )
    for policy in chosen:
        (policy_dir / f"{policy['metadata']['name']}.yaml").write_text(yaml.safe_dump(policy))
    material = certs.self_signed(work / "tls", ["127.0.0.1", "localhost"])
    verify = ssl.create_default_context(cafile=str(material.ca_file))
    pod = pod_with_env() if args.all_pods else realistic_pod()
    bodies = [admission_review(pod) for _ in range(64)]

    ports = {"floor": free_port(), "celmut": free_port()}
    tls = [str(material.cert_file), str(material.key_file)]
    commands = {
        "floor": [sys.executable, str(Path(__file__).resolve()), "--serve-floor", str(ports["floor"]), *tls, "fast"],
        "celmut": [
            sys.executable, "-m", "celmut", "serve", "--policies", str(policy_dir), "--port", str(ports["celmut"]),
            "--tls-cert", str(material.cert_file), "--tls-key", str(material.key_file), "--log-level", args.log_level,
            "--workers", str(args.workers),
        ],
    }  # fmt: skip
    here = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}  # this checkout's celmut
    environments: dict[str, dict[str, str] | None] = {"floor": here, "celmut": here}
    if args.h11_floor:
        ports["h11-floor"] = free_port()
        script = str(Path(__file__).resolve())
        commands["h11-floor"] = [sys.executable, script, "--serve-floor", str(ports["h11-floor"]), *tls, "h11"]
        environments["h11-floor"] = here
    if args.baseline is not None:
        ports["baseline"] = free_port()
        command = [*commands["celmut"]]
        command[command.index(str(ports["celmut"]))] = str(ports["baseline"])
        if args.baseline_workers is not None:
            command[-1] = str(args.baseline_workers)  # --workers N is the command's last pair
        commands["baseline"] = command
        environments["baseline"] = {**os.environ, "PYTHONPATH": str(args.baseline.resolve())}
    logs = {name: (work / f"{name}.log").open("wb") for name in commands}  # a full pipe would stall a server
    processes = {
        # run outside any checkout: ``python -m`` puts the working directory first on sys.path, so from the
        # repository's root the baseline would import the repository's celmut instead of DIR's
        name: subprocess.Popen(command, stdout=logs[name], stderr=subprocess.STDOUT, env=environments[name], cwd=work)
        for name, command in commands.items()
    }
    try:
        for name, process in processes.items():
            wait_ready(f"https://127.0.0.1:{ports[name]}/readyz", verify, process, work / f"{name}.log")
        names = list(commands)  # floor, celmut[, baseline]
        runs: dict[str, list[Run]] = {name: [] for name in names}
        for name in [*names, *reversed(names)]:
            runs[name].append(measure(name, processes[name].pid, ports[name], verify, bodies, args.rate, args.seconds))
        # saturated, in the same A-B-B-A order (2 × 3 s each): the machine drifts within a run as well
        served = dict.fromkeys(names, 0.0)
        cpu_used = dict.fromkeys(names, 0.0)
        for name in [*names, *reversed(names)]:
            cpu = process_cpu_seconds(processes[name].pid)
            served[name] += asyncio.run(max_throughput(ports[name], verify, bodies[0], 3.0)) * 3.0
            cpu_used[name] += process_cpu_seconds(processes[name].pid) - cpu
        throughput = {name: served[name] / 6.0 for name in names}
        saturated_cpu_ms = {name: cpu_used[name] / served[name] * 1000 for name in names}  # CPU per request
    finally:
        for process in processes.values():
            process.terminate()
            process.wait(timeout=10)

    merged = {
        name: Run(
            name,
            [x for r in rs for x in r.latencies_ms],
            sum(r.cpu_seconds for r in rs),
            sum(r.wall_seconds for r in rs),
            sum(r.errors for r in rs),
            sum(r.patched for r in rs),
        )
        for name, rs in runs.items()
    }
    floor = merged["floor"]
    cpu_ms = {name: run.cpu_seconds / run.requests * 1000 for name, run in merged.items()}
    print(
        f"AdmissionReview of a {len(orjson.dumps(pod)):,}-byte Pod over HTTPS (loopback, keep-alive); "
        f"celmut: {len(chosen)} policies, {0 if args.no_match or not chosen else 5} matching, "
        f"{args.workers} worker(s); "
        f"{args.rate:.0f} requests/s open loop, {floor.requests} requests per server"
    )
    rows = [
        [
            name,
            f"{run.percentile(0.5):.2f}",
            f"{run.percentile(0.99):.2f}",
            f"{run.requests / run.wall_seconds:.0f}",
            f"{cpu_ms[name]:.2f}",
            f"{throughput[name]:.0f}",
            f"{saturated_cpu_ms[name]:.3f}",
            str(run.errors),
            str(run.patched),
        ]
        for name, run in merged.items()
    ]
    for name in [n for n in merged if n != "floor"]:
        run = merged[name]
        rows.append(
            [
                f"{name} / floor",
                f"{run.percentile(0.5) / floor.percentile(0.5):.2f}×",
                f"{run.percentile(0.99) / floor.percentile(0.99):.2f}×",
                "",
                f"{cpu_ms[name] / cpu_ms['floor']:.2f}×",
                f"{throughput[name] / throughput['floor']:.2f}×",
                f"{saturated_cpu_ms[name] / saturated_cpu_ms['floor']:.2f}×",
                "",
                "",
            ]
        )
    headers = ["server", "p50 ms", "p99 ms", "achieved req/s", "CPU ms/req", "max req/s (8 conc.)"]
    headers += ["CPU ms/req there", "errors", "patched"]
    print(table("", headers, rows))
    target = 1.2 if args.no_match else 1.5 if not args.all_pods and chosen else 2.0
    print(f"aims: CPU per request ≤ {target}× the httptools+uvloop floor at this rate: "
          f"{cpu_ms['celmut'] / cpu_ms['floor']:.2f}×; at saturation: "
          f"{saturated_cpu_ms['celmut'] / saturated_cpu_ms['floor']:.2f}× the CPU per request, "
          f"{throughput['floor'] / throughput['celmut']:.2f}× fewer requests per second (the client shares "
          "the machine: when it is what limits the floor, the CPU ratio is the one to read)")  # fmt: skip
    means = {name: statistics.fmean(run.latencies_ms) for name, run in merged.items()}
    print(f"mean latency: floor {means['floor']:.2f} ms, celmut {means['celmut']:.2f} ms")


if __name__ == "__main__":
    main()
