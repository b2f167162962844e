"""The admission webhook application (FastAPI).

``POST /mutate`` runs every policy; ``POST /mutate/fail`` and ``/mutate/ignore`` run only the
policies with that failurePolicy (``celmut webhook-config`` registers one webhook per
failurePolicy). ``GET /healthz`` (alive), ``/readyz`` (policies loaded and cluster caches synced),
``/metrics`` (Prometheus).

The event loop reads request bodies (bounded in size and in time) and writes responses; each
admission runs on a bounded pool of worker threads (:mod:`celmut.server.admission`), so one slow
evaluation delays neither the probes nor other requests. The server never answers a 5xx for its
input: an oversized body is HTTP 413, a body not sent in time 408, a malformed review 400 naming the
field; a defect of celmut follows the failurePolicy. Each request has a deadline below the webhook
timeout, counted from its arrival; CEL evaluation that reaches it fails, and each policy's
failurePolicy decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.requests import ClientDisconnect

from celmut import cel
from celmut.server import review as reviews
from celmut.server.admission import Admission
from celmut.server.metrics import Metrics
from celmut.service.store import PolicyStore

log = logging.getLogger("celmut.server")

DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024  # the API server's own request limit (apiserver MaxRequestBodyBytes)
DEFAULT_EVALUATION_THREADS = 4
_FAILURE_POLICY_PATHS = {"fail": "Fail", "ignore": "Ignore"}


@dataclass
class ServerSettings:
    timeout_seconds: float = 10.0  # the webhook timeout the API server uses
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    body_timeout: float = 10.0  # seconds to receive a request body once its headers arrived
    evaluation_threads: int = DEFAULT_EVALUATION_THREADS  # admissions evaluated at once
    extra_ready_checks: list[Callable[[], str]] = field(default_factory=list)  # '' when ready, else why not
    # told (object received, object admitted) for each CREATE admitted
    on_admitted: Callable[[dict[str, Any] | None, dict[str, Any]], None] | None = None

    @property
    def deadline_seconds(self) -> float:
        """Leave time to answer before the API server gives up on the webhook."""
        return max(self.timeout_seconds * 0.8, self.timeout_seconds - 1.0, 0.1)


def _bad_request(message: str, code: int = 400, *, close: bool = False) -> Response:
    """A ``metav1.Status`` answer; ``close`` when the body was not read to its end (the connection
    cannot carry another request)."""
    headers = {"Connection": "close"} if close else None
    body = reviews.status_body(message, code)
    return Response(body, status_code=code, media_type="application/json", headers=headers)


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The body, or None when it exceeds ``limit`` (checked while reading, not after)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(
    store: PolicyStore,
    settings: ServerSettings | None = None,
    metrics: Metrics | None = None,
    lifespan: Callable[[FastAPI], AbstractAsyncContextManager[None]] | None = None,
) -> FastAPI:
    settings = settings or ServerSettings()
    metrics = metrics or Metrics()
    pool = ThreadPoolExecutor(max(settings.evaluation_threads, 1), thread_name_prefix="celmut-admission")
    admission = Admission(metrics, settings.on_admitted)

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

    app = FastAPI(title="celmut admission webhook", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifecycle)
    app.state.store = store
    app.state.metrics = metrics

    async def admit(request: Request, failure_policy: str | None) -> Response:
        started = time.perf_counter()
        budget = cel.Budget.with_timeout(settings.deadline_seconds)  # from the request's arrival
        try:
            async with asyncio.timeout(settings.body_timeout):
                body = await _read_body(request, settings.max_body_bytes)
        except TimeoutError:
            metrics.rejected("body_timeout")
            return _bad_request(f"request body not received within {settings.body_timeout:g} seconds", 408, close=True)
        except ClientDisconnect:  # the client went away mid-body: nobody to answer
            log.debug("client disconnected while sending its request")
            metrics.rejected("client_disconnect")
            return Response(status_code=400)
        if body is None:
            metrics.rejected("too_large")
            return _bad_request(f"request body exceeds the limit of {settings.max_body_bytes} bytes", 413, close=True)
        engine = store.engine
        if engine is None:
            metrics.rejected("not_ready")
            return _bad_request("no policies loaded yet", 503)
        loop = asyncio.get_running_loop()
        answer = await loop.run_in_executor(pool, admission.answer, body, engine, budget, failure_policy, started)
        return Response(answer.body, status_code=answer.status, media_type="application/json")

    @app.post("/mutate")
    async def mutate(request: Request) -> Response:
        return await admit(request, None)

    @app.post("/mutate/{bucket}")
    async def mutate_bucket(bucket: str, request: Request) -> Response:
        if bucket not in _FAILURE_POLICY_PATHS:
            return _bad_request(f"unknown path /mutate/{bucket}; use /mutate, /mutate/fail or /mutate/ignore", 404)
        return await admit(request, _FAILURE_POLICY_PATHS[bucket])

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response("ok", media_type="text/plain")

    @app.get("/readyz")
    async def readyz() -> Response:
        problems = [] if store.ready else ["policies not loaded"]
        problems += [p for p in (check() for check in settings.extra_ready_checks) if p]
        if problems:
            return Response("not ready: " + "; ".join(problems), status_code=503, media_type="text/plain")
        return Response("ok", media_type="text/plain")

    @app.get("/metrics")
    async def prometheus() -> Response:
        engine = store.engine
        metrics.policies_loaded.set(len(engine.policies) if engine else 0)
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    return app
