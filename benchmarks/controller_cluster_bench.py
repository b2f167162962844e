"""The writing controller against a real kube-apiserver: memory, pass time, API load.

Against a real kube-apiserver (no controller-manager needed), as a new user runs it:
``celmut controller --from-cluster`` in its own process, the three policies of ``controller_workload.py``
stored in the cluster. Two steps:

    # CRDs, 20 namespaces (with a default ServiceAccount), N small pods created concurrently, the policies
    python benchmarks/controller_cluster_bench.py seed --kubeconfig K --pods 100000
    # one pass: the mutateExisting policy gets a new label value (so every pod is patched again), then the
    # controller runs until every pod carries it and every report is written
    python benchmarks/controller_cluster_bench.py run --kubeconfig K --rate 1000 [-- extra controller flags]
    # the same with a trigger wave: every namespace labelled as soon as the pass has patched its first pod
    python benchmarks/controller_cluster_bench.py run --kubeconfig K --wave

On a cluster shared with others, ``--prefix NAME`` keeps the benchmark to its own objects: namespaces
``NAME-00``…, labelled ``celmut-bench/owner=NAME``, and policies that select only those namespaces, given to
the controller as files (not stored: it then loads no one else's policies); ``cleanup`` deletes the
namespaces. The API server's request counts are cluster-wide: others' requests are counted too.

``run`` prints the controller's peak RSS (VmHWM), the pass time and rate, the API server's requests by verb
and resource (``apiserver_request_total`` before and after, from its ``/metrics``), the Events and
PolicyReports stored, and when the last report was written. Figures only.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import copy
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]
from controller_workload import LABEL, MUTATE_EXISTING_POLICY, namespace, namespace_name, policies, small_pod  # noqa: E402

from celmut.kube.client import MERGE_PATCH, Cluster, Conflict, resource_path  # noqa: E402

NAMESPACES = 20
MPOL = ("policies.kyverno.io/v1", "mutatingpolicies")
POLR = ("wgpolicyk8s.io/v1alpha2", "policyreports")
OWNER = "celmut-bench/owner"


def scoped(document: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A policy of the workload limited to the namespaces labelled ``OWNER=prefix`` (its triggers and
    targets), named after the prefix."""
    document = copy.deepcopy(document)
    document["metadata"]["name"] = f"{prefix}-{document['metadata']['name']}"
    selector = {"matchLabels": {OWNER: prefix}}
    spec = document["spec"]
    for constraints in ("matchConstraints", "targetMatchConstraints"):
        if constraints in spec:
            spec[constraints]["namespaceSelector"] = selector
    if "targetMatchConstraints" in spec:  # the trigger is a Namespace: selected by its own labels
        spec["matchConstraints"]["objectSelector"] = selector
        del spec["matchConstraints"]["namespaceSelector"]
    return document


def own_namespaces(cluster: Cluster, prefix: str) -> list[str]:
    listed = cluster.list_all("v1", "namespaces", label_selector=f"{OWNER}={prefix}")
    return [item["metadata"]["name"] for item in listed["items"]]


def create_quietly(cluster: Cluster, api_version: str, resource: str, namespace: str, body: dict[str, Any]) -> None:
    with contextlib.suppress(Conflict):  # exists already (a second seed)
        cluster.create(api_version, resource, namespace, body)


def namespace_of(index: int, prefix: str) -> dict[str, Any]:
    """Namespace ``index``: the workload's, or, with a prefix, one of the benchmark's own."""
    body = namespace(index)
    if prefix:
        body["metadata"]["name"] = f"{prefix}-{index:02d}"
        body["metadata"]["labels"][OWNER] = prefix
    return body


def seed(cluster: Cluster, pods: int, threads: int, prefix: str = "") -> None:
    for path in sorted((ROOT / "crds").glob("*.yaml")):
        create_quietly(
            cluster, "apiextensions.k8s.io/v1", "customresourcedefinitions", "", yaml.safe_load(path.read_text())
        )
    time.sleep(3)  # the CRDs are served
    for index in range(NAMESPACES):
        created = namespace_of(index, prefix)
        create_quietly(cluster, "v1", "namespaces", "", created)
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
        create_quietly(cluster, "v1", "serviceaccounts", created["metadata"]["name"], sa)
    started = time.perf_counter()
    done = 0
    lock = threading.Lock()

    def create(index: int) -> None:
        nonlocal done
        pod = small_pod(index, NAMESPACES)
        pod["metadata"]["namespace"] = namespace_of(index % NAMESPACES, prefix)["metadata"]["name"]
        create_quietly(cluster, "v1", "pods", pod["metadata"]["namespace"], pod)
        with lock:
            done += 1
            if done % 5000 == 0:
                print(f"  {done:,} pods ({done / (time.perf_counter() - started):,.0f}/s)", flush=True)

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(create, range(pods)))
    for document in [] if prefix else policies():  # with a prefix: given to the controller as files
        create_quietly(cluster, *MPOL, "", document)
    print(f"seeded {pods:,} pods in {time.perf_counter() - started:.0f} s")


def request_totals(cluster: Cluster) -> Counter[str]:
    """``apiserver_request_total`` by verb and resource (codes summed), and the non-2xx by code."""
    raw = cluster._send("GET", "/metrics", accept="text/plain").data.decode()
    totals: Counter[str] = Counter()
    for line in raw.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
        count = float(line.rsplit(" ", 1)[1])
        totals[f"{labels.get('verb')} {labels.get('resource')}"] += int(count)
        if not labels.get("code", "200").startswith("2"):
            totals[f"code {labels.get('code')}"] += int(count)
    return totals


def status_kib(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def control_plane_pids(kube_root: str) -> dict[str, int]:
    """The rig's etcd and kube-apiserver (their pid files under KUBE_ROOT/run)."""
    found = {}
    for name in ("etcd", "kube-apiserver"):
        path = Path(kube_root).expanduser() / "run" / f"{name}.pid"
        if path.exists():
            found[name] = int(path.read_text().strip())
    return found


def count(cluster: Cluster, api_version: str, resource: str, selector: str = "", prefix: str = "") -> int:
    total = 0
    for where in own_namespaces(cluster, prefix) if prefix else [""]:
        pages = cluster.pages(api_version, resource, where, limit=5000, label_selector=selector, metadata_only=True)
        total += sum(len(page.get("items") or []) for page in pages)
    return total


def forget(cluster: Cluster, prefix: str = "") -> None:
    """Delete every PolicyReport and Event (a first run: no report to adopt, no Event to count)."""
    namespaces = [item["metadata"]["name"] for item in cluster.list_all("v1", "namespaces")["items"]]
    for where in own_namespaces(cluster, prefix) if prefix else namespaces:
        for api_version, resource in (POLR, ("v1", "events")):
            cluster.request("DELETE", resource_path(api_version, resource, where))
    while count(cluster, *POLR, prefix=prefix):
        time.sleep(2)


def cleanup(cluster: Cluster, prefix: str) -> None:
    """Delete the benchmark's own namespaces (and so everything in them)."""
    for name in own_namespaces(cluster, prefix):
        cluster.delete("v1", "namespaces", "", name)
        print(f"deleted namespace {name}")


def wave(cluster: Cluster, prefix: str) -> None:
    """Label every namespace of the benchmark: each is an UPDATE that triggers the mutateExisting policy."""
    names = own_namespaces(cluster, prefix) if prefix else [namespace_name(i) for i in range(NAMESPACES)]
    for name in names:
        cluster.patch("v1", "namespaces", "", name, {"metadata": {"labels": {"wave": str(time.time_ns())}}},
                      content_type=MERGE_PATCH)  # fmt: skip


def run(
    cluster: Cluster,
    kubeconfig: str,
    rate: float,
    extra: list[str],
    settle: float,
    kube_root: str,
    fresh: bool,
    prefix: str = "",
    with_wave: bool = False,
) -> None:
    if fresh:
        forget(cluster, prefix)
    run_id = f"r{int(time.time())}"
    label = f'Object{{metadata: Object.metadata{{labels: {{"{LABEL}": "{run_id}"}}}}}}'
    sources = ["--from-cluster"]
    if prefix:  # the policies as files: the controller loads no one else's
        folder = Path(tempfile.mkdtemp(prefix="celmut-bench-policies-"))
        for document in policies():
            document = scoped(document, prefix)
            if "targetMatchConstraints" in document["spec"]:
                document["spec"]["mutations"][0]["applyConfiguration"]["expression"] = label
            (folder / f"{document['metadata']['name']}.yaml").write_text(yaml.safe_dump(document))
        sources = ["--policies", str(folder)]
    else:
        policy = cluster.get(*MPOL, "", MUTATE_EXISTING_POLICY["metadata"]["name"])
        policy["spec"]["mutations"][0]["applyConfiguration"]["expression"] = label
        cluster.replace(*MPOL, "", policy["metadata"]["name"], policy)
    pods = count(cluster, "v1", "pods", prefix=prefix)
    before = request_totals(cluster)
    log = tempfile.NamedTemporaryFile("w+", prefix="celmut-controller-", suffix=".log", delete=False)  # noqa: SIM115
    command = [sys.executable, "-m", "celmut", "controller", *sources, "--kubeconfig", kubeconfig]
    command += ["--rate", f"{rate:g}", "--metrics-port", "0", "--scan-interval", "0", *extra]
    print(f"{pods:,} pods; run {run_id}: {' '.join(command[2:])}; log {log.name}", flush=True)
    plane = control_plane_pids(kube_root) if kube_root else {}
    plane_cpu = {name: cpu_seconds(pid) for name, pid in plane.items()}
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    controller_cpu = patched_cpu = started_cpu = 0.0
    plane_at_patched: dict[str, float] = {}
    patched_at = last_write_at = 0.0
    last_writes = -1
    samples = []
    try:
        while True:
            time.sleep(2)
            if process.poll() is not None:
                raise SystemExit(f"the controller exited ({process.returncode}); see {log.name}")
            now = request_totals(cluster) - before
            elapsed = time.perf_counter() - started
            rss = status_kib(process.pid, "VmRSS") / 1024
            patches = now["patch pods"] if "patch pods" in now else now["PATCH pods"]
            report_writes = now["POST policyreports"] + now["PUT policyreports"]
            samples.append((elapsed, patches, report_writes, rss))
            if len(samples) % 5 == 0:
                print(
                    f"  {elapsed:6.0f} s  patches {patches:,}  report writes {report_writes:,}  RSS {rss:.0f} MiB",
                    flush=True,
                )
            if with_wave and patches > 0:  # the pass is under way: the wave meets it
                wave(cluster, prefix)
                with_wave = False
                print(f"  {elapsed:6.0f} s  trigger wave: every namespace labelled", flush=True)
            controller_cpu = cpu_seconds(process.pid)
            if not started_cpu and patches > 0:  # its start (imports, policies, first lists) is behind it
                started_cpu = controller_cpu
            if not patched_at and patches >= pods:
                patched_at, patched_cpu = elapsed, controller_cpu
                plane_at_patched = {name: cpu_seconds(pid) - plane_cpu[name] for name, pid in plane.items()}
            if report_writes != last_writes:
                last_writes, last_write_at = report_writes, elapsed
            if patched_at and elapsed - last_write_at > settle:
                break
    finally:
        peak = status_kib(process.pid, "VmHWM") / 1024
        process.terminate()
        process.wait(30)
    after = request_totals(cluster) - before
    labelled = count(cluster, "v1", "pods", f"{LABEL}={run_id}", prefix)
    events = count(cluster, "v1", "events", prefix=prefix)
    reports = count(cluster, *POLR, prefix=prefix)
    print(f"\npeak RSS (VmHWM) {peak:.0f} MiB; pods labelled {labelled:,}/{pods:,}")
    if patched_at:
        print(f"pass: {patched_at:.0f} s, {pods / patched_at:,.0f} pods/s; last report write at {last_write_at:.0f} s")
        after_start = (patched_cpu - started_cpu) * 1000 / pods
        cpu = [f"controller {patched_cpu * 1000 / pods:.2f} ({after_start:.2f} after its start)"]
        cpu += [f"{name} {seconds * 1000 / pods:.2f}" for name, seconds in plane_at_patched.items()]
        print(f"CPU ms per pod during the pass: {', '.join(cpu)}; controller in all {controller_cpu:.0f} s")
    print(f"Events stored {events:,}; PolicyReports stored {reports:,}")
    # this script's own requests: /metrics (no resource), the policy's update, its counting lists after
    own = {"GET ", "PUT mutatingpolicies", "GET mutatingpolicies", "PUT leases"}
    shown = {k: v for k, v in after.items() if v and not k.startswith(("WATCH", "code")) and k not in own}
    besides = sum(v for k, v in shown.items() if "policyreports" not in k)
    writes, reads = after["PATCH pods"], after["GET pods"]  # a GET of one pod (lists are LIST)
    print(f"pod writes per pod {writes / max(1, pods):.3f}; pod GETs per pod {reads / max(1, pods):.3f}")
    print(f"requests ({besides / max(1, labelled):.3f} per patched pod besides reports):")
    for key, value in sorted(shown.items(), key=lambda kv: -kv[1]):
        print(f"  {key:40} {value:>9,}")
    errors = {k: v for k, v in after.items() if k.startswith("code") and v}
    print(f"non-2xx: {errors or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=("seed", "run", "cleanup"))
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--settle", type=float, default=30.0, help="seconds without report writes that end a run")
    parser.add_argument("--fresh", action="store_true", help="delete every PolicyReport and Event first")
    parser.add_argument("--prefix", default="", help="the benchmark's own namespaces and policies (a shared cluster)")
    parser.add_argument("--wave", action="store_true", help="label every namespace once the pass patched a pod")
    parser.add_argument(
        "--kube-root", default=os.environ.get("KUBE_ROOT", ""), help="the rig's instance (CPU of etcd, apiserver)"
    )
    args, extra = parser.parse_known_args()  # the rest (after --): controller flags
    args.extra = [a for a in extra if a != "--"]
    cluster = Cluster.connect(args.kubeconfig, timeout=120)
    cluster.api_client.configuration.connection_pool_maxsize = max(64, args.threads)
    if args.step == "seed":
        seed(cluster, args.pods, args.threads, args.prefix)
    elif args.step == "cleanup":
        cleanup(cluster, args.prefix)
    else:
        run(
            cluster,
            args.kubeconfig,
            args.rate,
            args.extra,
            args.settle,
            args.kube_root,
            args.fresh,
            args.prefix,
            args.wave,
        )


if __name__ == "__main__":
    main()
