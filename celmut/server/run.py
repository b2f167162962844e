"""Run the webhook: TLS on every port, hot reload of policies and certificates, worker processes.

Policies are re-read when their files change (polled); a broken change is reported and the last good
set stays. The serving certificate is re-read when its file changes, so a rotated certificate is
used for new connections without a restart. With ``workers > 1`` the listening socket is bound once
and shared by forked worker processes, each running the same single-process server.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import socket
import ssl
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

import uvicorn
from fastapi import FastAPI

from celmut import crashes, heap
from celmut.kube import certs
from celmut.kube.authorization import SubjectAccessReviewAuthorizer
from celmut.server import DEFAULT_BACKGROUND_USER
from celmut.server.app import create_app
from celmut.server.connections import LimitedHttpToolsProtocol, LimitedServer, protocol_class
from celmut.server.limits import ConnectionLimits
from celmut.server.metrics import Metrics, share_between_workers, worker_stopped
from celmut.server.settings import DEFAULT_EVALUATION_THREADS, DEFAULT_MAX_BODY_BYTES, ServerSettings
from celmut.service import flags, tracing
from celmut.service.assembly import EngineSettings
from celmut.service.settings import SURFACE_TIMEOUT_SECONDS, ServiceSettings, surface_engine
from celmut.service.store import PolicySource, PolicyStore, ReloadOutcome
from celmut.sources.files import FileSource

if TYPE_CHECKING:  # the cluster connection loads the Kubernetes client: only with --from-cluster
    from celmut.server.cluster import ClusterConnection

log = logging.getLogger("celmut.server")
MAINTENANCE_SECONDS = 10.0
METRICS_FLUSH_SECONDS = 1.0  # how old another worker's per-policy counts may be in a scrape
# How often Python hands the GIL to another thread (default 5 ms). Admissions run on threads next to
# the event loop: at 1 ms, while one admission burns CPU until its deadline, /healthz p99 fell from
# 72 to 7 ms and a benign admission's from 116 to 19 ms, idle latency unchanged
# (benchmarks/isolation_bench.py).
SWITCH_INTERVAL_SECONDS = 0.001
BACKGROUND_USERS = frozenset({DEFAULT_BACKGROUND_USER})  # --background-user's default


@dataclass(frozen=True)
class ServeConfig:
    """``celmut serve``'s settings: the ones every surface shares (``service``, with the engine's),
    and the webhook's own: where and how it listens, TLS, worker processes, bounds."""

    # the controller's identity among the background users: skipBackgroundRequests ignores its requests
    service: ServiceSettings = field(
        default_factory=lambda: ServiceSettings(engine=surface_engine(background_usernames=BACKGROUND_USERS))
    )
    host: str = "127.0.0.1"
    port: int = 8443
    tls_cert: str | None = None
    tls_key: str | None = None
    self_signed: bool = False
    cert_dir: str | None = None
    workers: int = 1
    reload_interval: float = 2.0
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    evaluation_threads: int = DEFAULT_EVALUATION_THREADS
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)

    @property
    def timeout_seconds(self) -> float:
        """``--timeout``: the webhook's answer deadline, also the CEL deadline of its admissions."""
        deadline = self.service.engine.timeout_seconds
        return deadline if deadline is not None else SURFACE_TIMEOUT_SECONDS


def connect_cluster(config: ServeConfig) -> ClusterConnection | None:
    """Open the cluster connection of this process when ``--from-cluster`` asks for one."""
    service = config.service
    if not service.from_cluster:
        return None
    from celmut.kube.client import ClusterError  # the kubernetes client loads slowly: only when needed
    from celmut.server.cluster import ClusterConnection

    try:
        return ClusterConnection.open(
            service.kubeconfig,
            opt_out_label=service.opt_out_label,
            admission_policies=service.serve_admission_policies,
            policy_selection=service.policy_selection,
            http_policy=service.http_policy,
            registry_policy=service.registry,
        )
    except ClusterError as ex:
        raise ValueError(f"cannot connect to the cluster: {ex}") from None


class CertificateWatcher:
    """Re-reads the serving certificate into the live SSL context when its files change."""

    def __init__(self, context: ssl.SSLContext, cert_file: str, key_file: str) -> None:
        self.context = context
        self.cert_file = cert_file
        self.key_file = key_file
        self._stamp = self._current()

    def _current(self) -> tuple[int, int]:
        return (os.stat(self.cert_file).st_mtime_ns, os.stat(self.key_file).st_mtime_ns)

    def check(self) -> bool:
        """Reload when the files changed; True when a new certificate is in use."""
        try:
            stamp = self._current()
            if stamp == self._stamp:
                return False
            self.context.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as ex:  # half-written files: keep the old certificate, retry
            log.warning("serving certificate not reloaded", extra={"error": type(ex).__name__})
            return False
        self._stamp = stamp
        log.info("serving certificate reloaded", extra={"cert": self.cert_file})
        return True


def engine_settings(config: ServeConfig, cluster: ClusterConnection | None) -> EngineSettings:
    """The engine's settings, with the cluster's lookups when connected (else image data read from
    the registries anonymously)."""
    if cluster is not None:
        return config.service.in_cluster(
            resources=cluster.resources,
            global_context=cluster.global_context,
            images=cluster.images,
            authorizer=SubjectAccessReviewAuthorizer(cluster.cluster),
            opt_out=cluster.opt_out,
        )
    from celmut.kube.registry import RegistryImages  # image data without a cluster: anonymous pulls

    return config.service.in_cluster(images=RegistryImages(config.service.registry))


def build_store(config: ServeConfig, metrics: Metrics, cluster: ClusterConnection | None = None) -> PolicyStore:
    sources: list[PolicySource] = [FileSource(list(config.service.policy_paths))] if config.service.policy_paths else []
    if cluster is not None:
        sources.append(cluster.policy_source)
        metrics.registry.register(cluster.global_context)  # entry sizes and refresh failures

    def reloaded(outcome: ReloadOutcome) -> None:
        metrics.reloads.labels("accepted" if outcome.accepted else "rejected").inc()
        metrics.policies_loaded.set(outcome.policies)
        metrics.policies_invalid.set(len(outcome.errors))
        engine = store.engine
        if cluster is not None and engine is not None:
            cluster.plan_caches(engine.policies)

    store = PolicyStore(
        sources,
        engine_settings(config, cluster),
        all_or_nothing=True,
        on_reload=reloaded,
        skip_unsupported=config.service.skip_unsupported,
    )
    return store


def tls_material(config: ServeConfig) -> tuple[str, str, str]:
    """The certificate and key to serve with, and what to print about them: ``--self-signed`` creates
    them, and the CA bundle is printed once the server starts (not before a refusal to start)."""
    if config.self_signed:
        directory = Path(config.cert_dir or tempfile.mkdtemp(prefix="celmut-tls-"))
        hosts = sorted({config.host, "localhost", "127.0.0.1"} - {"0.0.0.0", "::"})
        material = certs.self_signed(directory, hosts)
        shown = f"# CA bundle for the webhook's clientConfig.caBundle ({material.ca_file}):\n{material.ca_pem}"
        return str(material.cert_file), str(material.key_file), shown
    if not config.tls_cert or not config.tls_key:
        raise ValueError("TLS is required: give --tls-cert and --tls-key, or --self-signed")
    certs.check_tls_files(config.tls_cert, config.tls_key)
    return config.tls_cert, config.tls_key, ""


def server_settings(
    config: ServeConfig, cluster: ClusterConnection | None, deaths: crashes.ThreadDeaths | None = None
) -> ServerSettings:
    """What the FastAPI app answers with: the webhook's timeout and bounds, the cluster's checks and
    whether a background thread died (``/healthz``, ``/readyz``)."""
    return ServerSettings(
        dead=deaths.failure if deaths is not None else ServerSettings.dead,
        timeout_seconds=config.timeout_seconds,
        max_body_bytes=config.max_body_bytes,
        body_timeout=config.limits.body_timeout,
        evaluation_threads=config.evaluation_threads,
        extra_ready_checks=[cluster.not_ready] if cluster is not None else [],
        on_admitted=cluster.admitted if cluster is not None else None,
        on_decided=cluster.decided if cluster is not None else None,
        declines=cluster.declines if cluster is not None else None,
        cache_sizes=cluster.caches.sizes if cluster is not None else None,
        tracing=tracing.from_environment("celmut-webhook"),
    )


class Upkeep:
    """What the server keeps up while it runs: the policies (a thread polling their sources), the
    serving certificate, the memory of connection bursts and, with worker processes, this worker's share
    of the metrics; started and stopped by the app's lifespan."""

    def __init__(
        self, reload_interval: float, store: PolicyStore, protocol: type[LimitedHttpToolsProtocol], metrics: Metrics
    ) -> None:
        self.reload_interval = reload_interval
        self.store = store
        self.protocol = protocol
        self.metrics = metrics
        self.certificate: CertificateWatcher | None = None  # set once uvicorn built the SSL context
        self.stop = threading.Event()

    def poll_policies(self) -> None:
        while not self.stop.wait(self.reload_interval):
            try:
                self.store.reload()
            except Exception:  # keep serving the last good set whatever happens
                log.exception("policy reload failed")

    async def poll_certificates(self) -> None:
        while not self.stop.is_set():
            await asyncio.sleep(min(self.reload_interval, 1.0))
            if self.certificate is not None:
                self.certificate.check()

    async def return_memory(self) -> None:
        """After a burst of connections, collect their garbage once they are gone (a TLS transport
        and its protocol form a cycle) and give the memory back: idle connections must not keep the
        RSS after they closed."""
        seen = waiting = 0
        while not self.stop.is_set():
            await asyncio.sleep(MAINTENANCE_SECONDS)
            if self.protocol.accepted - seen >= 100:
                seen, waiting = self.protocol.accepted, 2  # the connections of the burst may still be open
            if waiting:
                waiting -= 1
                heap.reclaim()

    async def share_metrics(self) -> None:
        """With worker processes: this worker's per-policy counts, for the scrapes other workers answer."""
        while not self.stop.is_set():
            await asyncio.sleep(METRICS_FLUSH_SECONDS)
            self.metrics.flush()

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: FastAPI) -> AsyncIterator[None]:
        threading.Thread(target=self.poll_policies, name="celmut-policy-reload", daemon=True).start()
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(self.poll_certificates()), loop.create_task(self.return_memory())]
        if self.metrics.shared_directory is not None:
            tasks.append(loop.create_task(self.share_metrics()))
        try:
            yield
        finally:
            self.stop.set()
            for task in tasks:
                task.cancel()


def make_server(
    config: ServeConfig,
    store: PolicyStore,
    metrics: Metrics,
    cert: str,
    key: str,
    cluster: ClusterConnection | None = None,
    deaths: crashes.ThreadDeaths | None = None,
) -> uvicorn.Server:
    """The server; a background thread's death (``deaths``) makes it answer 503 and stop."""
    limits = config.limits
    protocol = protocol_class(limits)
    upkeep = Upkeep(config.reload_interval, store, protocol, metrics)
    if cluster is not None and cluster.admission_errors is not None:
        cluster.admission_errors.on_write = lambda action: metrics.error_events.labels(action).inc()
    app: FastAPI = create_app(store, server_settings(config, cluster, deaths), metrics, lifespan=upkeep.lifespan)
    uv_config = uvicorn.Config(
        app,
        host=config.host,
        port=config.port,
        ssl_certfile=cert,
        ssl_keyfile=key,
        log_config=None,
        access_log=False,
        lifespan="on",
        loop="uvloop",  # with httptools: a third of the CPU per request of asyncio + h11 (issue 30)
        http=protocol,  # httptools with the connection cap, header deadline and size (server.connections)
        timeout_keep_alive=max(1, round(limits.keep_alive_timeout)),
        timeout_graceful_shutdown=5,
    )
    uv_config.load()
    assert uv_config.ssl is not None
    upkeep.certificate = CertificateWatcher(uv_config.ssl, cert, key)
    server = LimitedServer(uv_config, limits)
    if deaths is not None:
        deaths.on_death = functools.partial(setattr, server, "should_exit", True)
        if deaths.failure():  # a thread died while the server was being built (a watch, say)
            server.should_exit = True
    return server


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, shared by worker processes.

    Created with ``IPPROTO_TCP`` explicitly: asyncio only disables Nagle's algorithm (TCP_NODELAY) on
    sockets whose ``proto`` says TCP, and with Nagle on, a response written as headers then body
    waits for the client's delayed ACK — 40 ms per request.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _worker(config: ServeConfig, sock: socket.socket, cert: str, key: str, metrics_directory: str) -> None:
    deaths = crashes.install()
    share_between_workers(metrics_directory)
    cluster = connect_cluster(config)
    metrics = Metrics(metrics_directory)
    store = build_store(config, metrics, cluster)
    store.reload(force=True)
    heap.settle()
    try:
        make_server(config, store, metrics, cert, key, cluster, deaths).run(sockets=[sock])
    finally:
        if cluster is not None:
            cluster.stop()
    if deaths.failure():
        sys.exit(crashes.EXIT_CODE)  # the parent stops the other workers and exits with it


def serve(config: ServeConfig) -> int:
    """Serve until interrupted; 2 when the policies or TLS files are unusable at start."""
    try:
        cert, key, shown = tls_material(config)
    except (ValueError, OSError) as ex:
        log.error("cannot start: %s", ex)
        return 2
    heap.tune()
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    deaths = crashes.install()  # from before the cluster's watch threads start
    metrics = Metrics()
    try:  # with worker processes the parent only checks the files; each worker connects itself
        cluster = connect_cluster(config) if config.workers <= 1 else None
    except ValueError as ex:
        log.error("cannot start: %s", ex)
        return 2
    store = build_store(config, metrics, cluster)
    outcome = store.reload(force=True)
    if outcome is not None and not outcome.accepted:
        log.error("cannot start: %s", flags.policies_problem(store.last_problems))
        return 2
    print(shown, end="", flush=True)
    sock = bind(config.host, config.port)
    log.info("serving", extra={"address": f"https://{config.host}:{sock.getsockname()[1]}", "workers": config.workers})
    if config.workers <= 1:
        heap.settle()
        try:
            make_server(config, store, metrics, cert, key, cluster, deaths).run(sockets=[sock])
        finally:
            if cluster is not None:
                cluster.stop()
        return crashes.EXIT_CODE if deaths.failure() else 0
    context = multiprocessing.get_context("fork")
    metrics_directory = tempfile.mkdtemp(prefix="celmut-metrics-")  # every worker's counts, one /metrics view
    workers = [
        context.Process(target=_worker, args=(config, sock, cert, key, metrics_directory), daemon=True)
        for _ in range(config.workers)
    ]
    for worker in workers:
        worker.start()

    def forward(signum: int, _frame: object) -> None:
        for worker in workers:
            if worker.pid:
                os.kill(worker.pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    try:
        return _supervise(workers, metrics_directory)
    finally:
        shutil.rmtree(metrics_directory, ignore_errors=True)


def _supervise(workers: Sequence[multiprocessing.process.BaseProcess], metrics_directory: str) -> int:
    """Wait for every worker. One that stops on its own (a dead background thread: exit 70; killed,
    e.g. out of memory) stops the others and the server exits 70, so kubelet restarts the pod whole
    rather than leaving it serving on fewer workers with nothing said."""
    running = {worker.sentinel: worker for worker in workers}
    code = 0
    while running:
        for sentinel in multiprocessing.connection.wait(list(running)):
            worker = running.pop(cast(int, sentinel))
            worker.join()
            if worker.pid:
                worker_stopped(worker.pid, metrics_directory)
            if worker.exitcode != 0 and code == 0:
                code = crashes.EXIT_CODE
                log.error(
                    "a worker stopped; stopping the others", extra={"pid": worker.pid, "exitCode": worker.exitcode}
                )
                for other in running.values():
                    if other.pid:
                        os.kill(other.pid, signal.SIGTERM)
    return code
