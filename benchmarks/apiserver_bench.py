"""Pod-CREATE latency through a real kube-apiserver: no mutation, celmut's webhook, a native MAP.

Given the kubeconfig of a cluster (a real kube-apiserver, such as the development control plane
CONTRIBUTING.md describes, on the machine that runs the benchmark), creates Pods one after the
other in a namespace of its own and times each ``POST`` from the client, under each configuration in turn:

* ``none`` — no webhook, no MutatingAdmissionPolicy: the API server's own cost;
* ``celmut-1`` / ``celmut-20`` — ``celmut serve`` (this checkout) with one policy / the twenty
  Pod policies (``benchmarks/policies.py`` ``all_pods_policies``: 5 matching the Pod), registered by
  the MutatingWebhookConfiguration ``celmut webhook-config`` prints for them;
* ``map-1`` / ``map-20`` — the same policies as native MutatingAdmissionPolicies and bindings, as
  ``celmut compile --to-map`` prints them (the API server evaluates them itself);
* with ``--baseline DIR``, ``base-1`` / ``base-20``: the celmut package in DIR served the same way;
* ``floor`` — a webhook that decodes the review and answers a fixed patch adding one label
  (``webhook_bench.py``'s floor, FastAPI on uvicorn with httptools and uvloop, ``fast-patch``),
  registered as celmut's one-policy webhook is: what a mutating webhook adds whoever answers it — the
  hop, and the API server applying the patch.

Each configuration is installed, checked to take effect (a dry-run Pod comes back mutated, or
not for ``none``), measured, and removed; the configurations run in A-B-…-B-A order for
``--rounds`` rounds so drift evens out. Printed: p50/p90/p99 of each, and the latency each adds to
``none`` at p50 and p99 (read celmut's added latency beside the MAP's and the floor's). Prints
figures, asserts nothing.

    python benchmarks/apiserver_bench.py --kubeconfig KUBECONFIG \\
        [--pods 400] [--rounds 2] [--baseline DIR] [--only none,celmut-1,...] [--prefix NAME]

Every webhook configuration and MutatingAdmissionPolicyBinding it installs is scoped to its own
namespace (a namespaceSelector on ``kubernetes.io/metadata.name``), and its namespace and
cluster-scoped objects are named after ``--prefix``: on a cluster others use, it changes only its own
Pods.

Needs the kubeconfig's user to be allowed everything (the rig's admin), and the API server to reach
``127.0.0.1`` (where the webhooks listen): a kube-apiserver on this machine.
"""

from __future__ import annotations

import argparse
import base64
import copy
import http.client
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import table
from workloads import pod_with_env

from celmut.kube import certs
from policies import all_pods_policies

HERE = Path(__file__).resolve().parent
NAMESPACE = "celmut-apiserver-bench"
PROBE_LABEL = "policy-0"  # every policy set below adds it to the benchmark Pod
WARMUP = 30


@dataclass
class Client:
    """A keep-alive HTTPS client of the API server, authenticated as the kubeconfig's user."""

    host: str
    port: int
    context: ssl.SSLContext
    headers: dict[str, str]
    connection: http.client.HTTPSConnection | None = None

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any, float]:
        """(status, decoded body, seconds from sending to the whole answer)."""
        payload = orjson.dumps(body) if body is not None else None
        headers = {**self.headers, "Accept": "application/json"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(2):
            if self.connection is None:
                self.connection = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=30)
            try:
                started = time.perf_counter()
                self.connection.request(method, path, payload, headers)
                response = self.connection.getresponse()
                data = response.read()
                seconds = time.perf_counter() - started
                return response.status, orjson.loads(data) if data else None, seconds
            except (OSError, http.client.HTTPException):
                self.connection.close()
                self.connection = None
                if attempt:
                    raise
        raise AssertionError("unreachable")


def client_from_kubeconfig(path: Path, scratch: Path) -> Client:
    """The current context's server and credentials: certificate, key and CA as files or inline
    data, or a bearer token."""
    config = yaml.safe_load(path.read_text())
    context_name = config.get("current-context") or config["contexts"][0]["name"]
    context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
    user = next(u["user"] for u in config.get("users", []) if u["name"] == context["user"])

    def material(entry: dict[str, Any], key: str, name: str) -> str | None:
        if entry.get(f"{key}-data"):
            target = scratch / name
            target.write_bytes(base64.b64decode(entry[f"{key}-data"]))
            return str(target)
        value = entry.get(key)
        return str((path.parent / value).resolve()) if value else None

    ssl_context = ssl.create_default_context(cafile=material(cluster, "certificate-authority", "ca.crt"))
    cert = material(user, "client-certificate", "client.crt")
    if cert:
        ssl_context.load_cert_chain(cert, material(user, "client-key", "client.key"))
    headers = {"Authorization": f"Bearer {user['token']}"} if user.get("token") else {}
    server = cluster["server"].removeprefix("https://").rstrip("/")
    host, _, port = server.rpartition(":")
    return Client(host, int(port), ssl_context, headers)


def bench_pod() -> dict[str, Any]:
    """The benchmark Pod (3 containers, 12 env vars each), as a client would create it."""
    pod = copy.deepcopy(pod_with_env())
    metadata = pod["metadata"]
    for key in ("name", "ownerReferences"):  # generated names; no owner that does not exist
        metadata.pop(key, None)
    metadata["generateName"] = "bench-"
    metadata["namespace"] = NAMESPACE
    pod["spec"].pop("serviceAccountName", None)  # the namespace's default ServiceAccount
    return pod


# --- configurations -------------------------------------------------------------------------------


@dataclass
class Configuration:
    name: str
    objects: list[dict[str, Any]] = field(default_factory=list)  # installed for the phase, removed after
    mutates: bool = True
    server: tuple[int, Path] | None = None  # celmut's port and CA file: its /metrics after the run


def rescheduled(port: int, ca_file: Path) -> int:
    """``celmut_admissions_rescheduled_total`` of a server: admissions whose inline slice ran out."""
    connection = http.client.HTTPSConnection(
        "127.0.0.1", port, context=ssl.create_default_context(cafile=str(ca_file)), timeout=10
    )
    connection.request("GET", "/metrics")
    for line in connection.getresponse().read().decode().splitlines():
        if line.startswith("celmut_admissions_rescheduled_total"):
            return int(float(line.split()[-1]))
    return 0


PLURALS = {
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
    "MutatingAdmissionPolicy": "mutatingadmissionpolicies",
    "MutatingAdmissionPolicyBinding": "mutatingadmissionpolicybindings",
}


def object_path(obj: dict[str, Any], *, named: bool) -> str:
    group_version = obj["apiVersion"]
    path = f"/apis/{group_version}/{PLURALS[obj['kind']]}"
    return f"{path}/{obj['metadata']['name']}" if named else path


def celmut_command(*arguments: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "celmut", *arguments],
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def scoped(objects: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """``objects`` named after ``prefix`` and applied to Pods of the benchmark's namespace only."""
    selector = {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}}
    for obj in objects:
        metadata = obj.setdefault("metadata", {})
        if not metadata["name"].startswith(prefix):
            metadata["name"] = f"{prefix}-{metadata['name']}"
        if obj["kind"] == "MutatingWebhookConfiguration":
            for webhook in obj.get("webhooks", []):
                webhook["namespaceSelector"] = selector
        elif obj["kind"] == "MutatingAdmissionPolicyBinding":
            obj["spec"]["policyName"] = f"{prefix}-{obj['spec']['policyName']}"
            obj["spec"].setdefault("matchResources", {})["namespaceSelector"] = selector
    return objects


def webhook_configuration(name: str, policies: Path, port: int, ca_file: Path) -> list[dict[str, Any]]:
    """What ``celmut webhook-config`` registers for ``policies``, at this server's URL."""
    documents = celmut_command(
        "webhook-config", "--policies", str(policies), "--url", f"https://127.0.0.1:{port}", "--failure-policy", "Fail",
        "--ca-bundle", str(ca_file), "--name", name,
    )  # fmt: skip
    for document in documents:
        document.setdefault("metadata", {})["name"] = name
    return documents


def floor_configuration(celmut_objects: list[dict[str, Any]], port: int) -> list[dict[str, Any]]:
    """celmut's webhook configuration pointed at the floor server (named ``bench-floor``)."""
    objects = copy.deepcopy(celmut_objects)
    for document in objects:
        document["metadata"]["name"] = f"{NAMESPACE}-floor"
        for webhook in document.get("webhooks", []):
            webhook["clientConfig"]["url"] = f"https://127.0.0.1:{port}/mutate"
    return objects


def serve_floor(port: int, tls: certs.ServingCertificate, log: Path) -> subprocess.Popen[bytes]:
    script = str(HERE / "webhook_bench.py")
    command = [sys.executable, script, "--serve-floor", str(port), str(tls.cert_file), str(tls.key_file), "fast-patch"]
    environment = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    with log.open("wb") as output:
        return subprocess.Popen(command, env=environment, stdout=output, stderr=subprocess.STDOUT, cwd=log.parent)


def native_policies(policies: Path) -> list[dict[str, Any]]:
    """``celmut compile --to-map --unscoped``: the MutatingAdmissionPolicies and bindings."""
    return celmut_command("compile", "--to-map", "--unscoped", str(policies))


def serve(tree: Path, policies: Path, port: int, tls: certs.ServingCertificate, log: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "celmut", "serve", "--policies", str(policies), "--port", str(port),
        "--tls-cert", str(tls.cert_file), "--tls-key", str(tls.key_file), "--log-level", "WARNING",
    ]  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    with log.open("wb") as output:  # outside any checkout: python -m would import the working directory's celmut
        return subprocess.Popen(command, env=environment, stdout=output, stderr=subprocess.STDOUT, cwd=log.parent)


def wait_serving(process: subprocess.Popen[bytes], port: int, tls: certs.ServingCertificate, log: Path) -> None:
    context = ssl.create_default_context(cafile=str(tls.ca_file))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"celmut serve exited with {process.returncode}:\n{log.read_text()[-2000:]}")
        try:
            connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=1)
            connection.request("GET", "/readyz")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"celmut serve on port {port} did not become ready")


# --- phases ---------------------------------------------------------------------------------------


def ensure_namespace(client: Client) -> None:
    status, _, _ = client.request("GET", f"/api/v1/namespaces/{NAMESPACE}")
    if status == 404:
        client.request(
            "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    client.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", account)  # 409 when it exists


def install(client: Client, configuration: Configuration) -> None:
    for obj in configuration.objects:
        status, body, _ = client.request("POST", object_path(obj, named=False), obj)
        if status == 409:
            client.request("DELETE", object_path(obj, named=True))
            time.sleep(0.5)
            status, body, _ = client.request("POST", object_path(obj, named=False), obj)
        if status >= 300:
            raise SystemExit(f"could not create {obj['kind']} {obj['metadata']['name']}: {status} {body}")
    wait_effective(client, configuration)


def uninstall(client: Client, configuration: Configuration) -> None:
    for obj in reversed(configuration.objects):
        client.request("DELETE", object_path(obj, named=True))
    client.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods")  # never scheduled: gone at once


def wait_effective(client: Client, configuration: Configuration) -> None:
    """Until a dry-run Pod comes back as the configuration mutates it (the API server's informers
    see new webhook configurations and policies after a moment)."""
    pod = bench_pod()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, body, _ = client.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods?dryRun=All", pod)
        labels = (body or {}).get("metadata", {}).get("labels", {}) if status == 201 else {}
        if status == 201 and (PROBE_LABEL in labels) == configuration.mutates:
            time.sleep(1.0)  # every API server watch caught up, not only the one that answered
            return
        time.sleep(0.3)
    raise SystemExit(f"{configuration.name}: not in effect after 60 s (last answer {status})")


def measure(client: Client, configuration: Configuration, pods: int) -> list[float]:
    """Milliseconds per Pod CREATE (the first WARMUP not counted)."""
    pod = bench_pod()
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"
    latencies = []
    for index in range(pods + WARMUP):
        status, body, seconds = client.request("POST", path, pod)
        if status != 201:
            raise SystemExit(f"{configuration.name}: creating a Pod answered {status}: {body}")
        mutated = PROBE_LABEL in body["metadata"].get("labels", {})
        if mutated != configuration.mutates:
            raise SystemExit(f"{configuration.name}: a Pod came back {'mutated' if mutated else 'unmutated'}")
        if index >= WARMUP:
            latencies.append(seconds * 1000)
    return latencies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * q), len(ordered) - 1)]


def main() -> None:
    global NAMESPACE
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--kubeconfig", type=Path, default=os.environ.get("KUBECONFIG"), required="KUBECONFIG" not in os.environ
    )
    parser.add_argument("--pods", type=int, default=400, help="Pods created per configuration and round (default 400)")
    parser.add_argument("--rounds", type=int, default=2, help="A-B-…-B-A passes over the configurations (default 2)")
    parser.add_argument("--baseline", type=Path, help="a directory holding another celmut package to serve beside")
    parser.add_argument("--only", help="comma-separated configurations to run (none is always run)")
    parser.add_argument("--prefix", default=NAMESPACE, help=f"namespace and object names (default {NAMESPACE})")
    args = parser.parse_args()
    NAMESPACE = args.prefix

    work = Path(tempfile.mkdtemp(prefix="celmut-apiserver-bench-"))
    client = client_from_kubeconfig(args.kubeconfig.expanduser(), work)
    tls = certs.self_signed(work / "tls", ["127.0.0.1", "localhost"])
    sets = {"1": all_pods_policies(matching=1, total=1), "20": all_pods_policies()}
    directories = {}
    for size, documents in sets.items():
        directories[size] = work / f"policies-{size}"
        directories[size].mkdir()
        for document in documents:
            (directories[size] / f"{document['metadata']['name']}.yaml").write_text(yaml.safe_dump(document))

    trees = {"celmut": HERE.parent}
    if args.baseline is not None:
        trees["base"] = args.baseline.resolve()
    servers: list[subprocess.Popen[bytes]] = []
    configurations = [Configuration("none", mutates=False)]
    try:
        for size, directory in directories.items():
            for tree_name, tree in trees.items():
                port = free_port()
                log = work / f"{tree_name}-{size}.log"
                process = serve(tree, directory, port, tls, log)
                servers.append(process)
                wait_serving(process, port, tls, log)
                name = f"{tree_name}-{size}"
                objects = scoped(webhook_configuration(name, directory, port, tls.ca_file), args.prefix)
                configurations.append(Configuration(name, objects, server=(port, tls.ca_file)))
            configurations.append(Configuration(f"map-{size}", scoped(native_policies(directory), args.prefix)))
        port = free_port()
        log = work / "floor.log"
        floor = serve_floor(port, tls, log)
        servers.append(floor)
        wait_serving(floor, port, tls, log)
        celmut_one = next(c for c in configurations if c.name == "celmut-1")
        configurations.append(Configuration("floor", floor_configuration(celmut_one.objects, port)))
        if args.only:
            wanted = set(args.only.split(",")) | {"none"}
            configurations = [c for c in configurations if c.name in wanted]
        ensure_namespace(client)
        latencies: dict[str, list[float]] = {c.name: [] for c in configurations}
        moved: dict[str, int] = {}
        for round_index in range(args.rounds):
            order = configurations if round_index % 2 == 0 else list(reversed(configurations))
            for configuration in order:
                install(client, configuration)
                try:
                    latencies[configuration.name] += measure(client, configuration, args.pods)
                finally:
                    uninstall(client, configuration)
                print(f"round {round_index + 1}: {configuration.name} done", file=sys.stderr)
        for configuration in configurations:
            if configuration.server is not None:
                moved[configuration.name] = rescheduled(*configuration.server)
    finally:
        for process in servers:
            process.terminate()
            process.wait(timeout=10)
        client.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}")  # nothing of the run is left behind
    report(latencies, args)
    if moved:
        print(
            "admissions moved from the event loop to a thread (slice over): "
            + ", ".join(f"{name} {count}" for name, count in moved.items())
        )


def report(latencies: dict[str, list[float]], args: argparse.Namespace) -> None:
    none = latencies["none"]
    base50, base99 = percentile(none, 0.5), percentile(none, 0.99)
    rows = []
    for name, values in latencies.items():
        p50, p90, p99 = (percentile(values, q) for q in (0.5, 0.9, 0.99))
        added = ["", ""] if name == "none" else [f"{p50 - base50:+.2f}", f"{p99 - base99:+.2f}"]
        rows.append(
            [
                name,
                str(len(values)),
                f"{p50:.2f}",
                f"{p90:.2f}",
                f"{p99:.2f}",
                f"{statistics.fmean(values):.2f}",
                *added,
            ]
        )
    title = f"Pod CREATE through the API server, ms ({args.rounds} rounds of {args.pods} Pods, one at a time)"
    print(table(title, ["configuration", "pods", "p50", "p90", "p99", "mean", "added p50", "added p99"], rows))
    floor = latencies.get("floor")
    if floor:
        print(
            "a mutating webhook that does nothing else (the floor): adds "
            f"{percentile(floor, 0.5) - base50:.2f} ms at p50, "
            f"{percentile(floor, 0.99) - base99:+.2f} ms at p99"
        )
    for size in ("1", "20"):
        celmut, native = latencies.get(f"celmut-{size}"), latencies.get(f"map-{size}")
        if not celmut or not native:
            continue
        added = {
            q: (percentile(celmut, q) - percentile(none, q), percentile(native, q) - percentile(none, q))
            for q in (0.5, 0.99)
        }
        ratio = added[0.5][0] / added[0.5][1] if added[0.5][1] > 0 else float("inf")
        print(
            f"{size} polic{'y' if size == '1' else 'ies'}: celmut adds {added[0.5][0]:.2f} ms at p50, the MAP "
            f"{added[0.5][1]:.2f} ms ({ratio:.2f}×); at p99 celmut {added[0.99][0]:+.2f} ms, "
            f"the MAP {added[0.99][1]:+.2f} ms"
        )


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


if __name__ == "__main__":
    main()
