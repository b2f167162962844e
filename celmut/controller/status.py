"""The controller's metrics (``celmut_controller_*``) and its TLS status endpoint.

``/healthz`` (alive), ``/readyz`` (policies loaded and watches synced) and ``/metrics``
(Prometheus), served by uvicorn over TLS on a background thread like the webhook's endpoints.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import uvicorn
from fastapi import FastAPI
from fastapi.responses import Response
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from celmut.controller.reconcile import Outcome


class ControllerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.queue_depth = Gauge("celmut_controller_queue_depth", "Targets waiting in the work queue", registry=r)
        self.evaluations = Counter("celmut_controller_evaluations", "Policy evaluations on targets", registry=r)
        self.outcomes = Counter("celmut_controller_targets", "Targets processed by action", ["action"], registry=r)
        self.writes = Counter("celmut_controller_writes", "Patches written", registry=r)
        self.conflicts = Counter("celmut_controller_conflicts", "Writes refused with 409 Conflict", registry=r)
        self.evictions = Counter("celmut_controller_evictions", "Evictions by result", ["result"], registry=r)
        self.errors = Counter("celmut_controller_errors", "Targets whose policies failed", registry=r)
        self.triggers = Counter("celmut_controller_triggers", "Watch events treated as triggers", registry=r)
        self.scans = Counter("celmut_controller_scans", "Scans by reason", ["reason"], registry=r)
        self.leader = Gauge("celmut_controller_leader", "1 while this instance holds the lease", registry=r)
        self.generated = Counter(
            "celmut_controller_generated_admission_policies",
            "Writes of generated MutatingAdmissionPolicies and bindings by action: created, updated, deleted, failed",
            ["action"],
            registry=r,
        )
        self.webhook_configuration_writes = Counter(
            "celmut_controller_webhook_configuration_writes",
            "Writes of the managed MutatingWebhookConfiguration (webhook.managedRules)",
            registry=r,
        )
        self.events = Counter(
            "celmut_controller_events",
            "Events by reason and result: created, updated (a count), filtered (client-go's spam filter), "
            "dropped (more than --maxQueuedEvents waiting), error",
            ["reason", "result"],
            registry=r,
        )
        self.mutations = Counter(
            "celmut_mutations",
            "Policies that changed a target, by policy and outcome: applied (written), would-patch or "
            "would-evict (dry run), waiting, refused or idle (not written yet), error",
            ["policy", "outcome"],
            registry=r,
        )

    def observe(self, outcome: Outcome) -> None:
        self.outcomes.labels(outcome.action).inc()
        if outcome.action in ("patched", "evicted"):
            self.writes.inc()
        if outcome.action in ("evicted", "refused", "waiting"):
            self.evictions.labels(outcome.action).inc()
        if outcome.action == "failed":
            self.errors.inc()
        written = "applied" if outcome.action in ("patched", "evicted") else outcome.action
        for policy in dict.fromkeys(c.policy for c in outcome.changes):
            self.mutations.labels(policy, written).inc()
        for policy in outcome.failed:
            self.mutations.labels(policy, "error").inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


def status_app(
    metrics: ControllerMetrics, not_ready: Callable[[], str], dead: Callable[[], str] = lambda: ""
) -> FastAPI:
    """``dead``: why the process is no longer alive (a background thread died), else empty."""
    app = FastAPI(title="celmut controller", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/healthz")
    async def healthz() -> Response:
        problem = dead()
        if problem:
            return Response(f"not alive: {problem}", status_code=503, media_type="text/plain")
        return Response("ok", media_type="text/plain")

    @app.get("/readyz")
    async def readyz() -> Response:
        problem = not_ready()
        if problem:
            return Response(f"not ready: {problem}", status_code=503, media_type="text/plain")
        return Response("ok", media_type="text/plain")

    @app.get("/metrics")
    async def prometheus() -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    return app


class StatusServer:
    """The status endpoint, served on a daemon thread until :meth:`stop`."""

    def __init__(self, app: FastAPI, host: str, port: int, cert: str, key: str) -> None:
        config = uvicorn.Config(
            app, host=host, port=port, ssl_certfile=cert, ssl_keyfile=key, log_config=None, access_log=False
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="celmut-controller-status", daemon=True)
        self.thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and wait for the thread: its event loop must be closed before the interpreter
        finalises (a loop still running in C then crashed the process, exit -11, about one stop in ten)."""
        self.server.should_exit = True
        self.thread.join(timeout)


def serve_status(app: FastAPI, host: str, port: int, cert: str, key: str) -> StatusServer:
    """Start the status endpoint on a daemon thread."""
    return StatusServer(app, host, port, cert, key)
