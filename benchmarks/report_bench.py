"""Policy report benchmark: N existing ConfigMaps × 5 MutatingPolicies → N reports, not 5 N.

The fake API server (tests/fakekube, serving the wgpolicyk8s.io CRDs) is seeded with the ConfigMaps;
the controller runs here through the real kubernetes client. 3 policies would change every ConfigMap
(``fail``), 2 find it already mutated (``pass``). Prints, for the first scan, a rescan that finds the
same, and 10 % of the ConfigMaps given the first mutation (fail → pass): wall time, evaluations,
reports stored and report writes (POST/PUT/DELETE on wgpolicyk8s.io): the writes follow the resources
whose results changed.

    python benchmarks/report_bench.py [--resources 1000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from celmut.controller.report_loop import ReportingConfig  # noqa: E402
from celmut.controller.run import Controller, ControllerConfig  # noqa: E402
from celmut.kube.client import Cluster  # noqa: E402
from celmut.service.settings import ServiceSettings  # noqa: E402
from tests.controller.support import add_label, configmap, policy, write_policies  # noqa: E402
from tests.fakekube import FakeApiServer  # noqa: E402
from tests.kube.crds import report_crds  # noqa: E402

WRITES = r"wgpolicyk8s\.io"


def report_writes(server: FakeApiServer) -> int:
    return sum(len(server.requests_matching(m, WRITES)) for m in ("POST", "PUT", "DELETE"))


def wait(check: Any, timeout: float = 600.0) -> float:
    started = time.perf_counter()
    while not check():
        if time.perf_counter() - started > timeout:
            raise SystemExit("timed out")
        time.sleep(0.05)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--resources", type=int, default=1000)
    args = parser.parse_args()
    n = args.resources
    server = FakeApiServer(history_size=10 * n + 1000).start()
    try:
        for crd in report_crds():
            server.store.create(crd)
        for i in range(n):
            server.store.create(configmap(f"cm-{i}", done0="true", done1="true"))
        policies = [policy(f"fail-{i}", add_label(f"l{i}"), admission=True, mutate_existing=False) for i in range(3)]
        policies += [
            policy(f"pass-{i}", add_label(f"done{i}"), admission=True, mutate_existing=False) for i in range(2)
        ]
        with tempfile.TemporaryDirectory() as tmp:
            folder = write_policies(Path(tmp) / "policies", *policies)
            cluster = Cluster.connect(str(server.kubeconfig(Path(tmp) / "kubeconfig")), timeout=30)
            config = ControllerConfig(
                ServiceSettings(policy_paths=(str(folder),)),
                workers=1,
                scan_interval=0.0,
                reports=ReportingConfig(interval=0.2),
            )
            controller = Controller(config, cluster).start()
            assert controller.reports is not None
            evaluations = controller.reports.metrics.results

            def stored() -> int:
                return len(server.store.list("policyreports", None))

            def settled() -> bool:
                return stored() == n and controller.reports is not None and controller.reports.writer.pending() == 0

            def results() -> float:
                return sum(s.value for m in evaluations.collect() for s in m.samples if s.name.endswith("_total"))

            seconds = wait(settled)
            first = (seconds, results(), stored(), report_writes(server))
            server.clear_requests()
            before = results()
            controller.reports.scan_due()
            seconds = wait(lambda: results() >= before + 5 * n)
            time.sleep(1.0)  # a few passes: any write would have happened
            rescan = (seconds, results() - before, stored(), report_writes(server))
            server.clear_requests()
            before = results()
            for i in range(0, n, 10):
                applied = {"metadata": {"labels": {"l0": "true"}}}
                server.store.patch("configmaps", f"cm-{i}", applied, namespace="default")
            seconds = wait(lambda: report_writes(server) >= n // 10)
            time.sleep(1.0)
            change = (seconds, results() - before, stored(), report_writes(server))
            controller.stop()
            cluster.close()
    finally:
        server.stop()
    print(f"{n} ConfigMaps x 5 MutatingPolicies (3 fail, 2 pass)")
    print(f"{'phase':<28}{'seconds':>9}{'results':>10}{'reports':>10}{'writes':>9}")
    for name, (seconds, count, reports, writes) in (
        ("first scan", first),
        ("rescan, nothing changed", rescan),
        (f"{n // 10} ConfigMaps changed", change),
    ):
        print(f"{name:<28}{seconds:>9.2f}{int(count):>10}{reports:>10}{writes:>9}")


if __name__ == "__main__":
    main()
