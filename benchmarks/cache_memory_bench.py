"""Memory of a webhook replica's pod cache: 100,000 realistic Pods listed and watched, metadata-only
vs. whole, through the fake API server (tests/fakekube) and the real client.

Pods come in workloads of 20 (a ReplicaSet and a pod-template-hash each). Each cache runs in a
fresh process that first loads the shipped policies (``policies/`` and the partial spot preset,
whose split lists a workload's pods; what a replica holds before any pod is cached) and reports its RSS, then lists the
Pods (paged), then watches ``--added`` more being created, and reports RSS again. Figures only.

    python benchmarks/cache_memory_bench.py [--pods 100000] [--whole-pods 10000] [--added 1000]
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]
from timing import table  # noqa: E402
from workloads import realistic_pod  # noqa: E402

LIMIT_MIB = 512  # the chart's default memory limit
PODS_PER_WORKLOAD = 20


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def serve(pods: int, pipe: Connection) -> None:
    from tests.fakekube import FakeApiServer

    server = FakeApiServer(history_size=pods + 10_000).start()
    template = realistic_pod()
    index = 0

    def add(count: int) -> None:
        nonlocal index
        for _ in range(count):
            workload = f"checkout-{index // PODS_PER_WORKLOAD:05d}"  # its own ReplicaSet and template hash
            meta = {**template["metadata"], "name": f"{workload}-{index:06d}", "uid": f"uid-{index}"}
            meta["labels"] = {**meta["labels"], "pod-template-hash": f"h{index // PODS_PER_WORKLOAD:05d}"}
            meta["ownerReferences"] = [{**meta["ownerReferences"][0], "name": workload, "uid": f"rs-{workload}"}]
            server.store.create({**template, "metadata": meta})
            index += 1

    add(pods)
    pipe.send(str(server.kubeconfig(Path(tempfile.mkdtemp()) / "kubeconfig")))
    while (message := pipe.recv()) != "stop":
        add(int(message))
        pipe.send("added")
    server.stop()


def replica(kubeconfig: str, metadata_only: bool, expected: int, added: int, pipe: Connection) -> None:
    from celmut.compile.pipeline import compile_paths
    from celmut.kube.cache import WatchedCache
    from celmut.kube.client import Cluster
    from celmut.service.assembly import EngineSettings, assemble_engine

    shipped = (str(ROOT / "policies"), str(ROOT / "examples" / "spot-presets" / "spot-partial.yaml"))
    engine = assemble_engine(compile_paths(*shipped), EngineSettings())
    gc.collect()
    before = rss_mib()
    cache = WatchedCache(
        Cluster.connect(kubeconfig, timeout=120), "v1", "pods", metadata_only=metadata_only, max_objects=10**7
    ).start()
    started = time.perf_counter()
    assert cache.wait_synced(600), "the pod list did not complete"
    listed = time.perf_counter() - started
    pipe.send("listed")
    assert pipe.recv() == "added"
    while len(cache) < expected + added:
        time.sleep(0.05)
    gc.collect()
    after = rss_mib()
    cache.stop()
    pipe.send((len(engine.policies), before, after, listed, len(cache)))


def measure(kubeconfig: str, server: Connection, metadata_only: bool, pods: int, added: int) -> tuple[float, ...]:
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=replica, args=(kubeconfig, metadata_only, pods, added, child))
    process.start()
    assert parent.recv() == "listed"
    server.send(str(added))
    assert server.recv() == "added"
    parent.send("added")
    result: tuple[float, ...] = parent.recv()
    process.join(60)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=100_000, help="pods for the metadata-only cache")
    parser.add_argument("--whole-pods", type=int, default=10_000, help="pods for the whole-object cache")
    parser.add_argument("--added", type=int, default=1_000, help="pods created while the cache watches")
    args = parser.parse_args()
    rows = []
    for metadata_only, pods in ((True, args.pods), (False, args.whole_pods)):
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        server = context.Process(target=serve, args=(pods, child), daemon=True)
        server.start()
        kubeconfig = parent.recv()
        try:
            policies, before, after, listed, cached = measure(kubeconfig, parent, metadata_only, pods, args.added)
        finally:
            parent.send("stop")
            server.join(60)
        per_pod_kib = (after - before) * 1024 / cached
        at_100k = before + per_pod_kib * 100_000 / 1024
        rows.append(
            [
                "metadata-only" if metadata_only else "whole",
                f"{cached:,.0f}",
                f"{listed:.1f}",
                f"{before:.0f}",
                f"{after:.0f}",
                f"{per_pod_kib:.2f}",
                f"{at_100k:,.0f}",
                f"{int((LIMIT_MIB - before) * 1024 / per_pod_kib):,}",
            ]
        )
    print(f"pod cache of a replica with {policies:.0f} shipped policies loaded; realistic ~6 KB pods; RSS in MiB")
    headers = [
        "cache",
        "pods cached",
        "list s",
        "RSS before",
        "RSS after",
        "KiB/pod",
        "RSS at 100k pods",
        f"pods in {LIMIT_MIB} Mi",
    ]
    print(table("", headers, rows))


if __name__ == "__main__":
    main()
