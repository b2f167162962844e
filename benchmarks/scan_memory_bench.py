"""Controller ``--dry-run`` scan at scale: 10,000 and 100,000 realistic Pods through the fake API
server (tests/fakekube) and the real client, against the shipped spot preset (a drift policy with
restart-policy immediate, whose sibling counting lists pods) — wall time and peak RSS of the
controller process. Pods are read a page at a time (limit/continue) and the report is streamed to a
file as targets finish, as ``--report FILE`` writes it; figures only.

    python benchmarks/scan_memory_bench.py [--pods 10000 100000] [--page-size 500]
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]
from cache_memory_bench import rss_mib, serve  # noqa: E402
from timing import table  # noqa: E402

# A CAST AI-style PodMutation (a shipped preset kind): 60% of each workload's pods on spot, counted
# with a pods lookup (metadata-only), and restartPolicy immediate: the scan re-admits every pod.
POLICY = {
    "apiVersion": "pod-mutations.cast.ai/v1",
    "kind": "PodMutation",
    "metadata": {"name": "spot-60"},
    "spec": {
        "filterV2": {"workload": {"namespaces": [{"type": "exact", "value": "shop"}]}},
        "spotConfig": {"mode": "preferred-spot", "distributionPercentage": 60},
        "restartPolicy": "immediate",
    },
}


def scan(kubeconfig: str, policies: str, page_size: int, pipe: Connection) -> None:
    from celmut.controller.run import Controller, ControllerConfig
    from celmut.kube.client import Cluster

    before = rss_mib()
    paging = {"page_size": page_size} if "page_size" in ControllerConfig.__dataclass_fields__ else {}  # older code
    if "service" in ControllerConfig.__dataclass_fields__:  # one ServiceSettings (issue 26)
        from celmut.service.settings import ServiceSettings

        paging["service"] = ServiceSettings(policy_paths=(policies,))
    else:  # older code
        paging["policy_paths"] = [policies]
    config = ControllerConfig(dry_run=True, scan_interval=0, **paging)
    controller = Controller(config, Cluster.connect(kubeconfig, timeout=120))
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        try:
            from celmut.controller.report import ReportWriter  # streamed, as `--report FILE` writes it
        except ImportError:  # older code: the report is kept whole
            report = controller.run_once()
            outcomes = len(report.outcomes())
        else:
            writer = ReportWriter(out)
            report = controller.run_once(writer=writer)
            writer.close()
            outcomes = sum(report.summary().values())
        seconds = time.perf_counter() - started
    controller.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    pipe.send((before, peak, seconds, outcomes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--policy", help="a policy file instead of the built-in spot-like drift policy")
    args = parser.parse_args()
    policies = args.policy
    if policies is None:
        policies = str(Path(tempfile.mkdtemp(prefix="celmut-scan-")) / "policy.yaml")
        Path(policies).write_text(yaml.safe_dump(POLICY))
    rows = []
    for pods in args.pods:
        context = multiprocessing.get_context("spawn")
        server_end, child = context.Pipe()
        server = context.Process(target=serve, args=(pods, child), daemon=True)
        server.start()
        kubeconfig = server_end.recv()
        try:
            parent, worker_end = context.Pipe()
            worker = context.Process(target=scan, args=(kubeconfig, policies, args.page_size, worker_end))
            worker.start()
            before, peak, seconds, outcomes = parent.recv()
            worker.join(60)
        finally:
            server_end.send("stop")
            server.join(60)
        rows.append(
            [f"{pods:,}", f"{outcomes:,}", f"{seconds:.1f}", f"{pods / seconds:,.0f}", f"{before:.0f}", f"{peak:.0f}"]
        )
    print(f"controller --dry-run scan; drift policy with a pods lookup; page size {args.page_size}")
    print(table("", ["pods", "reported", "wall s", "pods/s", "RSS at start MiB", "peak RSS MiB"], rows))


if __name__ == "__main__":
    main()
