"""The admission webhook application (FastAPI).

``POST /mutate`` runs every policy; ``POST /mutate/fail`` and ``/mutate/ignore`` run only the
policies with that failurePolicy (``celmut webhook-config`` registers one webhook per
failurePolicy). ``GET /healthz`` (alive), ``/readyz`` (policies loaded and cluster caches synced),
``/metrics`` (Prometheus).

The server never crashes on input: an oversized body is HTTP 413, malformed JSON or a non-review
body HTTP 400 with a message, and an unexpected failure of celmut itself denies that one request
with an internal error. Each request has a deadline below the webhook timeout; CEL evaluation that
reaches it fails, and each policy's failurePolicy decides.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from celmut import cel
from celmut.runtime import AdmissionResult
from celmut.server import review as reviews
from celmut.server.metrics import Metrics
from celmut.service.store import PolicyStore

log = logging.getLogger("celmut.server")

DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024  # the API server's own request limit
_FAILURE_POLICY_PATHS = {"fail": "Fail", "ignore": "Ignore"}


@dataclass
class ServerSettings:
    timeout_seconds: float = 10.0  # the webhook timeout the API server uses
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    extra_ready_checks: list[Callable[[], str]] = field(default_factory=list)  # '' when ready, else why not
    # told (object received, object admitted) for each CREATE admitted
    on_admitted: Callable[[dict[str, Any] | None, dict[str, Any]], None] | None = None

    @property
    def deadline_seconds(self) -> float:
        """Leave time to answer before the API server gives up on the webhook."""
        return max(self.timeout_seconds * 0.8, self.timeout_seconds - 1.0, 0.1)


def _bad_request(message: str, code: int = 400) -> JSONResponse:
    return JSONResponse({"kind": "Status", "status": "Failure", "message": message, "code": code}, status_code=code)


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
    app = FastAPI(title="celmut admission webhook", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.store = store
    app.state.metrics = metrics

    async def admit(request: Request, failure_policy: str | None) -> Response:
        started = time.perf_counter()
        body = await _read_body(request, settings.max_body_bytes)
        if body is None:
            metrics.rejected("too_large")
            return _bad_request(f"request body exceeds the limit of {settings.max_body_bytes} bytes", 413)
        try:
            review = reviews.parse_review(body)
        except reviews.ReviewError as ex:
            metrics.rejected("bad_request")
            return _bad_request(f"invalid AdmissionReview: {ex}")
        engine = store.engine
        if engine is None:
            metrics.rejected("not_ready")
            return _bad_request("no policies loaded yet", 503)
        services = engine.options.services
        if review.request.dry_run:
            services = dataclasses.replace(services, dry_run=True)
        budget = cel.Budget.with_timeout(settings.deadline_seconds)
        try:
            result = engine.admit(review.request, budget, services=services, failure_policy=failure_policy)
        except Exception:  # a defect in celmut: deny this request, keep serving
            log.exception("internal error while admitting", extra={"uid": review.uid})
            metrics.rejected("internal_error")
            return Response(reviews.error_response(review, "celmut internal error"), media_type="application/json")
        created = review.request.operation == "CREATE" and not review.request.dry_run and result.allowed
        if settings.on_admitted is not None and created and result.object is not None:
            settings.on_admitted(result.original, result.object)
        seconds = time.perf_counter() - started
        metrics.observe(review.request.operation, result, seconds)
        _log(review, result, seconds)
        return Response(reviews.build_response(review, result), media_type="application/json")

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


def _log(review: reviews.Review, result: AdmissionResult, seconds: float) -> None:
    request = review.request
    log.info(
        "admission",
        extra={
            "uid": review.uid,
            "operation": request.operation,
            "kind": request.kind.kind,
            "namespace": request.namespace,
            "objectName": request.name or (request.subject.get("metadata") or {}).get("generateName", ""),
            "dryRun": request.dry_run,
            "allowed": result.allowed,
            "applied": result.applied_policies,
            "errors": [o.policy for o in result.outcomes if o.status == "error"],
            "patchOps": len(result.patch),
            "durationMs": round(seconds * 1000, 3),
        },
    )
