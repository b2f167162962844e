"""Spot splits across webhook replicas: how far a burst drifts, and what exactness would cost.

Runs celmut's real webhook (2 replicas behind one Service, the chart's two webhooks) inside the fake
cluster (tests/fakekube: admission chain + Deployment/ReplicaSet controllers) and rolls out a
10-replica Deployment under the partialSpot preset (40 %) ``--rollouts`` times, the ReplicaSet
controller creating pods in slow-start batches of 1, 2, 4, 3. Prints the distribution of spot pods
(target 4). Then measures, in the same run, the two costs an exact cross-replica split would add to
each pod CREATE: the admission round trip as it is, and one resourceVersion-guarded write of a shared
record (GET + PUT of a ConfigMap, what a per-workload ledger needs at least), alone and with 4
writers contending for one record (conflicts and retries counted). All against the in-process fake
API server: a real etcd write is slower, so these ratios are a lower bound on the cost.

    python benchmarks/split_bench.py [--rollouts 20] [--writes 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import kubernetes.client  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402

from tests.fakekube import FakeApiServer  # noqa: E402
from tests.server.in_cluster import celmut_in_cluster, seen_by  # noqa: E402

PRESET = str(ROOT / "presets" / "spot-partial.yaml")


def deployment(name: str) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {
            "replicas": 10,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


def guarded_write(core: kubernetes.client.CoreV1Api, name: str) -> int:
    """One read-modify-write of a shared record; the number of conflicts it retried."""
    conflicts = 0
    while True:
        record = core.read_namespaced_config_map(name, "shop")
        data = dict(record.data or {})
        data["n"] = str(int(data.get("n", "0")) + 1)
        record.data = data
        try:
            core.replace_namespaced_config_map(name, "shop", record)
            return conflicts
        except ApiException as ex:
            if ex.status != 409:
                raise
            conflicts += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=20)
    parser.add_argument("--writes", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeApiServer(webhooks=True) as fake:
        fake.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
        with celmut_in_cluster(fake, Path(tmp), replicas=2, policy_paths=(PRESET,)) as servers:
            apps = kubernetes.client.AppsV1Api(fake.api_client())
            core = kubernetes.client.CoreV1Api(fake.api_client())
            fake.controllers.slow_start = True
            fake.controllers.after_batch = seen_by(servers)
            spots: Counter[int] = Counter()
            for index in range(args.rollouts):
                apps.create_namespaced_deployment("shop", deployment(f"web-{index}"))
                fake.controllers.settle()
                pods = [p for p in fake.store.list("pods", "shop") if p["metadata"]["labels"]["app"] == f"web-{index}"]
                spots[
                    sum((p["metadata"].get("annotations") or {}).get("celmut.io/placement") == "spot" for p in pods)
                ] += 1
            counts = dict(sorted(spots.items()))
            print(f"spot pods of 10 (target 4) over {args.rollouts} bursty rollouts, 2 replicas: {counts}")

            fake.controllers.after_batch = None
            fake.controllers.slow_start = False
            admission: list[float] = []
            for index in range(args.writes):
                pod = {
                    "metadata": {"name": f"timed-{index}", "labels": {"app": "t"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                }
                started = time.perf_counter()
                core.create_namespaced_pod("shop", pod)
                admission.append(time.perf_counter() - started)
            core.create_namespaced_config_map("shop", {"metadata": {"name": "ledger"}, "data": {"n": "0"}})
            single: list[float] = []
            for _ in range(args.writes):
                started = time.perf_counter()
                guarded_write(core, "ledger")
                single.append(time.perf_counter() - started)
            conflicts: list[int] = []
            contended: list[float] = []
            lock = threading.Lock()

            def writer() -> None:
                client = kubernetes.client.CoreV1Api(fake.api_client())
                for _ in range(args.writes // 4):
                    started = time.perf_counter()
                    retried = guarded_write(client, "ledger")
                    with lock:
                        contended.append(time.perf_counter() - started)
                        conflicts.append(retried)

            threads = [threading.Thread(target=writer) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    p50 = statistics.median
    print(f"pod CREATE through both webhooks: p50 {p50(admission) * 1000:.2f} ms")
    print(
        f"+ one guarded shared-record write: p50 {p50(single) * 1000:.2f} ms "
        f"({p50(single) / p50(admission):.2f}x of the admission)"
    )
    print(
        f"  with 4 writers on one record: p50 {p50(contended) * 1000:.2f} ms, "
        f"{sum(conflicts)} conflicts for {len(conflicts)} writes ({sum(conflicts) / len(conflicts):.2f} retries each)"
    )


if __name__ == "__main__":
    main()
