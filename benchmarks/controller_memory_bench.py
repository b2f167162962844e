"""The writing controller at scale, against the fake API server: memory per pod, pass time, requests.

The controller-at-scale workload (``controller_workload.py``): small Pods in 20 namespaces, a mutateExisting policy
(Namespace triggers, Pod targets, adds a label, background reports on) and the two example admission
policies, reported. The fake API server (tests/fakekube) runs in its own process; the controller runs in
another, through the real kubernetes client, from its start until every pod is patched and every report
written. Each size runs in a fresh process; figures only (never a timed assertion).

    python benchmarks/controller_memory_bench.py [--pods 2000 10000] [--rate 1000] [--workers 2]
        [--tracemalloc]   # where the memory that stays is allocated (slow: run it on a small size)
        [--events per-object aggregated]   # each Events mode in turn, side by side (policies stored in
                                           # the cluster, so that Events about them are posted)
        [--max-queued-events N]            # --maxQueuedEvents (1000): past it Events are dropped
        [--wave]          # the 20 namespaces labelled as soon as the controller is started: a trigger wave
                          # (a second pass over every pod) meeting the start-up pass

Prints, per size (and Events mode): the controller's RSS before it starts and its peak (VmHWM), the growth
per pod, the pass time, pod writes and reads per pod, the API requests by verb and resource, Events and
PolicyReports stored, and the Events the controller dropped (more than --maxQueuedEvents waiting) or held
back (client-go's spam filter).
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import sys
import tempfile
import time
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]
from controller_workload import namespace, small_pod, write_policies  # noqa: E402
from timing import table  # noqa: E402

NAMESPACES = 20


def status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def serve(pods: int, in_cluster: bool, pipe: Connection) -> None:
    from controller_workload import policies

    from tests.fakekube import FakeApiServer
    from tests.kube.crds import policy_crds, report_crds

    server = FakeApiServer(history_size=4 * pods + 10_000).start()
    for crd in report_crds() + (policy_crds() if in_cluster else []):
        server.store.create(crd)
    for policy in policies() if in_cluster else []:
        server.store.create(policy)
    for index in range(NAMESPACES):
        server.store.create(namespace(index))
    for index in range(pods):
        server.store.create(small_pod(index, NAMESPACES))
    pipe.send(str(server.kubeconfig(Path(tempfile.mkdtemp()) / "kubeconfig")))
    while (message := pipe.recv()) != "stop":
        if message == "counts":
            pipe.send((len(server.store.list("policyreports")), len(server.store.list("events"))))
        elif message == "requests":
            verbs: Counter[str] = Counter()
            for record in server.requests:
                if "watch=true" in str(record.query) or record.query.get("watch") in (["true"], "true"):
                    continue
                parts = record.path.rstrip("/").split("/")
                resource = next((p for p in reversed(parts) if p in RESOURCES), parts[-1])
                one = parts[-2] == resource  # a request on one object (…/pods/<name>), not a list
                verbs[f"{record.method} {resource}{'/<name>' if one else ''}"] += 1
            pipe.send(dict(verbs))
    server.stop()


RESOURCES = {"pods", "events", "policyreports", "clusterpolicyreports", "namespaces", "leases", "eviction"}


def control(
    kubeconfig: str,
    pods: int,
    rate: float,
    workers: int,
    trace: bool,
    reports: bool,
    events: str | None,
    max_queued: int,
    wave: bool,
    pipe: Connection,
) -> None:
    import tracemalloc

    from celmut.controller.report_loop import ReportingConfig
    from celmut.controller.run import Controller, ControllerConfig
    from celmut.kube.client import MERGE_PATCH, Cluster
    from celmut.service.settings import ServiceSettings

    # with an Events mode the policies are the cluster's (Events about a policy need its object)
    policy_dir = Path(tempfile.mkdtemp(prefix="celmut-controller-memory-"))
    if events is None:
        write_policies(policy_dir)
    gc.collect()
    before = status_kib("VmRSS")
    if trace:
        tracemalloc.start(int(os.environ.get("TRACEMALLOC_FRAMES", "1")))
    cluster = Cluster.connect(kubeconfig, timeout=60)
    service = ServiceSettings(policy_paths=(str(policy_dir),), from_cluster=events is not None)
    reporting = ReportingConfig() if reports else ReportingConfig(background=False, admission=False)
    config = ControllerConfig(
        service,
        rate=rate,
        workers=workers,
        scan_interval=0,
        sync_timeout=600,
        reports=reporting,
        events=events or "per-object",
        max_queued_events=max_queued,
    )
    controller = Controller(config, cluster)
    started, cpu = time.perf_counter(), time.process_time()
    controller.start()
    if wave:  # a trigger wave: every namespace changed while the start-up pass runs
        for index in range(NAMESPACES):
            body = {"metadata": {"labels": {"wave": "1"}}}
            cluster.patch("v1", "namespaces", "", namespace(index)["metadata"]["name"], body, content_type=MERGE_PATCH)
    patched_at = reported_at = patched_cpu = 0.0
    while not reported_at:
        time.sleep(0.2)
        patched = controller.metrics.writes._value.get()
        if not patched_at and patched >= pods and controller.idle():
            patched_at, patched_cpu = time.perf_counter() - started, time.process_time() - cpu
        loop = controller.reports
        recorder = controller.events
        reports_done = loop is None or (not loop.scan_pending() and loop.writer.pending() == 0)
        if patched_at and reports_done and (recorder is None or recorder.pending() == 0):
            reported_at = time.perf_counter() - started
    time.sleep(2 * config.reports.interval)
    total_cpu_ms = (time.process_time() - cpu) * 1000 / pods
    outcomes = {
        result: sum(v for (_, r), v in _samples(controller.metrics.events) if r == result)
        for result in ("created", "updated", "filtered", "dropped", "error")
    }
    gc.collect()
    settled = status_kib("VmRSS")
    top: list[str] = []
    if trace:
        snapshot = tracemalloc.take_snapshot()
        stats = snapshot.statistics("traceback" if int(os.environ.get("TRACEMALLOC_FRAMES", "1")) > 1 else "lineno")
        total = sum(s.size for s in stats)
        top = [
            f"{s.size / pods:8.0f} B/pod  {s.traceback[0].filename.split('/celmut/')[-1]}:{s.traceback[0].lineno}"
            for s in stats[:25]
        ]
        top.insert(0, f"traced {total / 2**20:.1f} MiB ({total / pods:.0f} B/pod)")
    controller.stop()
    cpu_ms = patched_cpu * 1000 / pods
    pipe.send(
        (
            before / 1024,
            status_kib("VmHWM") / 1024,
            settled / 1024,
            patched_at,
            reported_at,
            cpu_ms,
            top,
            total_cpu_ms,
            outcomes,
        )
    )


def _samples(counter: object) -> list[tuple[tuple[str, str], float]]:
    """(reason, result) -> value of the controller's ``celmut_controller_events`` counter."""
    found = []
    for metric in counter.collect():  # type: ignore[attr-defined]
        for sample in metric.samples:
            if sample.name.endswith("_total"):
                found.append(((sample.labels["reason"], sample.labels["result"]), sample.value))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, nargs="+", default=[2_000, 10_000])
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--workers", type=int, default=0, help="0: sized from --rate")
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--reports", action=argparse.BooleanOptionalAction, default=True, help="background reports")
    parser.add_argument(
        "--events",
        nargs="+",
        choices=("per-object", "aggregated"),
        help="run each Events mode in turn, with the policies stored in the cluster",
    )
    parser.add_argument(
        "--max-queued-events", type=int, default=1000, help="the controller's --maxQueuedEvents (Kyverno's 1000)"
    )
    parser.add_argument("--wave", action="store_true", help="label every namespace once the controller started")
    args = parser.parse_args()
    rows, requests, tops, event_rows = [], [], [], []
    runs = [(pods, mode) for pods in args.pods for mode in (args.events or [None])]
    for pods, mode in runs:
        context = multiprocessing.get_context("spawn")
        server_end, child = context.Pipe()
        server = context.Process(target=serve, args=(pods, mode is not None, child), daemon=True)
        server.start()
        kubeconfig = server_end.recv()
        try:
            parent, worker_end = context.Pipe()
            worker = context.Process(
                target=control,
                args=(
                    kubeconfig,
                    pods,
                    args.rate,
                    args.workers,
                    args.tracemalloc,
                    args.reports,
                    mode,
                    args.max_queued_events,
                    args.wave,
                    worker_end,
                ),
            )
            worker.start()
            before, peak, settled, patched_at, reported_at, cpu_ms, top, total_cpu_ms, outcomes = parent.recv()
            worker.join(60)
            server_end.send("counts")
            reports, events = server_end.recv()
            server_end.send("requests")
            verbs = server_end.recv()
        finally:
            server_end.send("stop")
            server.join(60)
        per_pod = (peak - before) * 1024 / pods
        rows.append(
            [
                f"{pods:,}",
                f"{before:.0f}",
                f"{peak:.0f}",
                f"{settled:.0f}",
                f"{per_pod:.1f}",
                f"{patched_at:.1f}",
                f"{pods / patched_at:,.0f}",
                f"{cpu_ms:.2f}",
                f"{verbs.get('PATCH pods/<name>', 0) / pods:.3f}",
                f"{verbs.get('GET pods/<name>', 0) / pods:.3f}",
                f"{reported_at:.1f}",
                f"{events:,}",
                f"{reports:,}",
            ]
        )
        requests.append((pods, verbs))
        tops.append((pods, top))
        event_writes = sum(v for k, v in verbs.items() if k.endswith(" events") and not k.startswith("GET"))
        event_rows.append(
            [
                f"{pods:,}",
                mode or "per-object (file policies)",
                f"{event_writes:,}",
                f"{event_writes * 100_000 / pods:,.0f}",
                f"{events:,}",
                f"{outcomes['dropped']:,.0f}",
                f"{outcomes['filtered']:,.0f}",
                f"{total_cpu_ms:.2f}",
            ]
        )
    print(
        "controller workload (20 namespaces, one mutateExisting policy), fake API server; "
        f"--rate {args.rate:g}, {args.workers or 'auto'} workers, "
        f"reports {'on' if args.reports else 'off'}{'; a trigger wave meets the pass' if args.wave else ''}; MiB; "
        "CPU: the controller's during the pass; writes and GETs: PATCHes and GETs of one pod, per pod"
    )
    headers = ["pods", "RSS start", "peak", "settled", "KiB/pod", "pass s", "pods/s", "CPU ms/pod", "writes", "GETs"]
    headers += ["reported s"]
    headers += ["Events", "reports"]
    print(table("", headers, rows))
    headers = ["pods", "Events mode", "Event writes", "per 100,000 pods", "Events stored", "dropped", "filtered"]
    print(
        table(
            "Events (the controller's CPU per pod: the whole run, reports and Events included)",
            [*headers, "CPU ms/pod"],
            event_rows,
        )
    )
    for pods, verbs in requests:
        shown = ", ".join(f"{k} {v:,}" for k, v in sorted(verbs.items(), key=lambda kv: -kv[1]) if v >= 5)
        print(f"requests at {pods:,} pods ({sum(verbs.values()) / pods:.2f} per pod): {shown}")
    for pods, top in tops:
        if top:
            print(f"\ntracemalloc at {pods:,} pods, after the pass:")
            print("\n".join(top))


if __name__ == "__main__":
    main()
