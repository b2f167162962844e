"""``serve --workers N``: one server across worker processes (issue 30, item 2).

The workers share the listening socket; the kernel hands each new connection to one of them, and a
Prometheus scrape reaches any one. Each worker counts in its own memory-mapped file of a shared
directory (prometheus_client's multiprocess mode), so every scrape must show the admissions of all
workers, and the policies loaded once (not once per worker). Before: each worker answered with its
own registry, so two scrapes of one server disagreed.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

from tests.server.support import admission_request, pod, read_all
from tests.server.test_webhook import POLICY, write

REQUESTS_PER_ROUND = 40


def _post(port: int, context: ssl.SSLContext, body: bytes) -> bytes:
    with context.wrap_socket(
        socket.create_connection(("127.0.0.1", port), timeout=30), server_hostname="127.0.0.1"
    ) as c:
        head = (
            f"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
        )
        c.sendall(f"{head}\r\nConnection: close\r\n\r\n".encode() + body)
        return read_all(c)


def _get(port: int, context: ssl.SSLContext, path: str) -> bytes:
    with context.wrap_socket(
        socket.create_connection(("127.0.0.1", port), timeout=30), server_hostname="127.0.0.1"
    ) as c:
        c.sendall(f"GET {path} HTTP/1.1\r\nHost: webhook\r\nConnection: close\r\n\r\n".encode())
        return read_all(c)


def _sample(exposition: bytes, name: str) -> float:
    text = exposition.decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def _scrape(port: int, context: ssl.SSLContext) -> bytes:
    return _get(port, context, "/metrics").split(b"\r\n\r\n", 1)[1]


def _per_policy(exposition: bytes) -> list[float]:
    """celmut_mutations_total of policy noop-0, outcome unchanged."""
    return [
        float(line.rsplit(b" ", 1)[1])
        for line in exposition.splitlines()
        if line.startswith(b"celmut_mutations_total{") and b'"noop-0"' in line and b'"unchanged"' in line
    ]


def _requests_per_worker(directory: Path) -> list[float]:
    """Each worker's own count of admission requests, from the file it flushes every second."""
    counts = []
    for path in sorted(glob.glob(str(directory / "policies_*.json"))):
        try:
            state = json.loads(Path(path).read_text())
        except (OSError, ValueError):  # replaced while read: counted at the next look
            continue
        counts.append(sum(row[-1] for row in state.get("requests", ())))
    return counts


def _flushed_requests_per_worker(directory: Path, sent: int) -> list[float]:
    """:func:`_requests_per_worker` once every request sent so far is in the files (they lag by up to a
    flush interval)."""
    flushed = time.monotonic() + 60
    while sum(counts := _requests_per_worker(directory)) != sent:
        assert time.monotonic() < flushed, f"the workers never flushed their {sent} requests: {counts}"
        time.sleep(0.2)
    return counts


def test_every_scrape_shows_the_admissions_of_all_workers_and_the_policies_once(tmp_path: Path) -> None:
    for index in range(3):
        write(tmp_path, f"noop-{index}", POLICY.format(name=f"noop-{index}", failure="Ignore", expression="'[]'"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    command = [sys.executable, "-m", "celmut.main", "serve", "--policies", str(tmp_path / "policies"), "--workers", "2"]
    command += ["--self-signed", "--cert-dir", str(tmp_path / "tls"), "--port", str(port), "--log-level", "ERROR"]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "TMPDIR": str(scratch)}
    )
    try:
        deadline = time.monotonic() + 90
        context = ssl.create_default_context()
        while True:
            assert process.poll() is None, "celmut serve --workers 2 exited"
            try:
                context = ssl.create_default_context(cafile=str(tmp_path / "tls" / "ca.crt"))
                if _get(port, context, "/readyz").startswith(b"HTTP/1.1 200"):
                    break
            except (OSError, ssl.SSLError):
                pass
            assert time.monotonic() < deadline, "celmut serve --workers 2 did not start"
            time.sleep(0.2)
        directories = [Path(p) for p in glob.glob(str(scratch / "celmut-metrics-*"))]
        assert len(directories) == 1, "the workers share one metrics directory"
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": admission_request(pod())}
        body = json.dumps(review).encode()
        sent = 0
        for _ in range(10):  # new connections until both workers have served some (the kernel decides)
            for _ in range(REQUESTS_PER_ROUND):
                assert _post(port, context, body).startswith(b"HTTP/1.1 200")
                sent += 1
            per_worker = _flushed_requests_per_worker(directories[0], sent)
            if len([c for c in per_worker if c > 0]) == 2:
                break
        assert len([c for c in per_worker if c > 0]) == 2, f"one worker served everything: {per_worker}"
        flushed = time.monotonic() + 60  # each worker writes its per-policy counts every second
        while _per_policy(_scrape(port, context)) != [sent]:
            assert time.monotonic() < flushed, "the workers' per-policy counts never added up"
            time.sleep(0.2)
        for _ in range(20):  # each scrape lands on either worker
            exposition = _scrape(port, context)
            assert _sample(exposition, "celmut_admission_requests_total") == sent
            assert _sample(exposition, "celmut_policies_loaded") == 3
            assert _sample(exposition, "celmut_admission_duration_seconds_count") == sent
            assert _per_policy(exposition) == [sent], "the per-policy series are summed over the workers too"
    finally:
        process.terminate()
        process.wait(30)
    assert not list(scratch.glob("celmut-metrics-*")), "the shared metrics directory is removed on exit"


def test_a_worker_that_stops_on_its_own_stops_the_server_with_code_70(tmp_path: Path) -> None:
    """Before, the parent only joined its workers: one killed (out of memory, say) or stopped by a dead
    background thread left a pod serving on fewer workers, ready, with nothing said. Now the others are
    stopped and the server exits 70, so kubelet restarts the pod whole (issue 38, item 0)."""
    write(tmp_path, "noop-0", POLICY.format(name="noop-0", failure="Ignore", expression="'[]'"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "celmut.main", "serve", "--policies", str(tmp_path / "policies"), "--workers", "2"]
    command += ["--self-signed", "--cert-dir", str(tmp_path / "tls"), "--port", str(port), "--log-level", "ERROR"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        deadline = time.monotonic() + 90
        while len(workers := children.read_text().split()) < 2:
            assert process.poll() is None and time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.1)
        os.kill(int(workers[0]), signal.SIGKILL)
        assert process.wait(timeout=60) == 70
        assert not Path(f"/proc/{workers[1]}").exists() or "zombie" in Path(f"/proc/{workers[1]}/status").read_text()
    finally:
        if process.poll() is None:
            process.kill()
        stderr = process.communicate()[1].decode()
    assert "a worker stopped; stopping the others" in stderr
