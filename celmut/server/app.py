"""The admission webhook application (FastAPI).

``POST /mutate`` runs every policy; ``POST /mutate/fail`` and ``/mutate/ignore`` run only the
policies with that failurePolicy (``celmut webhook-config`` registers one webhook per
failurePolicy). ``POST /validate/policies`` refuses an invalid policy object before it is stored
(:mod:`celmut.server.validate`). ``GET /healthz`` (alive), ``/readyz`` (policies loaded and cluster caches synced),
``/metrics`` (Prometheus).

The event loop reads request bodies (bounded in size and in time) and writes responses; an
admission is evaluated on the event loop for a short time slice and, when it needs longer or would
wait for I/O, again on a bounded pool of worker threads (:mod:`celmut.server.mutate`), so one slow
evaluation delays neither the probes nor other requests. ``/mutate`` is a plain ASGI endpoint
(every admission passes there); the probes and ``/metrics`` are FastAPI routes. The server never answers a 5xx for its
input: an oversized body is HTTP 413, a body not sent in time 408, a malformed review 400 naming the
field; a defect of celmut follows the failurePolicy. Each request has a deadline below the webhook
timeout, counted from its arrival; CEL evaluation that reaches it fails, and each policy's
failurePolicy decides.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager

from fastapi import FastAPI
from fastapi.responses import Response

from celmut.server.admission import Admission
from celmut.server.metrics import Metrics
from celmut.server.mutate import MutateEndpoint, Receive, Scope, Send
from celmut.server.settings import ServerSettings
from celmut.server.validate import PolicyValidationEndpoint
from celmut.service.store import PolicyStore

log = logging.getLogger("celmut.server")


class WebhookApp(FastAPI):
    """The FastAPI app with ``/mutate`` (and ``/validate/policies``) answered before routing: the admission
    path skips Starlette's routing, request and response objects (:mod:`celmut.server.mutate`)."""

    mutate_endpoint: MutateEndpoint | None = None
    validate_endpoint: PolicyValidationEndpoint | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self.mutate_endpoint
        if endpoint is not None and endpoint.handles(scope):
            await endpoint(scope, receive, send)
            return
        validation = self.validate_endpoint
        if validation is not None and validation.handles(scope):
            await validation(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def create_app(
    store: PolicyStore,
    settings: ServerSettings | None = None,
    metrics: Metrics | None = None,
    lifespan: Callable[[FastAPI], AbstractAsyncContextManager[None]] | None = None,
) -> FastAPI:
    settings = settings or ServerSettings()
    metrics = metrics or Metrics()
    pool = ThreadPoolExecutor(max(settings.evaluation_threads, 1), thread_name_prefix="celmut-admission")
    admission = Admission(
        metrics, settings.on_admitted, reclaim=pool.submit, tracing=settings.tracing, on_decided=settings.on_decided
    )

    @contextlib.asynccontextmanager
    async def lifecycle(app: FastAPI) -> AsyncIterator[None]:
        try:
            if lifespan is None:
                yield
            else:
                async with lifespan(app):
                    yield
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            if settings.tracing is not None:
                settings.tracing.shutdown()  # export the spans still buffered

    app = WebhookApp(
        title="celmut admission webhook", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifecycle
    )
    app.mutate_endpoint = MutateEndpoint(store, settings, metrics, admission, pool)
    app.validate_endpoint = PolicyValidationEndpoint(store, settings, metrics, admission, pool)
    app.state.store = store
    app.state.metrics = metrics

    @app.get("/healthz")
    async def healthz() -> Response:
        problem = settings.dead()
        if problem:
            return Response(f"not alive: {problem}", status_code=503, media_type="text/plain")
        return Response("ok", media_type="text/plain")

    @app.get("/readyz")
    async def readyz() -> Response:
        problems = [p for p in (settings.dead(),) if p] + ([] if store.ready else ["policies not loaded"])
        problems += [p for p in (check() for check in settings.extra_ready_checks) if p]
        if problems:
            return Response("not ready: " + "; ".join(problems), status_code=503, media_type="text/plain")
        return Response("ok", media_type="text/plain")

    @app.get("/metrics")
    async def prometheus() -> Response:
        engine = store.engine
        metrics.policies_loaded.set(len(engine.policies) if engine else 0)
        if settings.cache_sizes is not None:
            metrics.caches(settings.cache_sizes())
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    return app
