"""The playground's web application (FastAPI): the page, its assets, and its JSON endpoints.

``GET /`` the page, ``GET /static/…`` its script, style and editor (package data, the editor built once
from ``playground-src/``: no CDN, nothing fetched elsewhere), ``GET /api/catalog`` the examples,
policies and presets (``/api/examples``: the examples alone), ``GET /api/cel`` what the editor
completes in CEL, ``POST /api/fields`` a kind's fields at a path of its schema, ``POST /api/run`` a
run (:mod:`celmut.playground.session`), ``POST /api/workload`` a workload run as its pods
(:mod:`celmut.playground.workload_run`), ``POST /api/native`` the native MutatingAdmissionPolicies,
``POST /api/eval`` the CEL scratch pad, ``POST /api/compile`` the preset compiler, ``POST
/api/export`` the Kyverno CLI test (a zip), ``GET /api/cluster…`` the connected cluster, read-only
(:mod:`celmut.playground.live`), ``GET /healthz``.

Bad input is an answer, never a failure: a pane that cannot be read comes back as located
``errors`` (HTTP 200: the page shows them beside the last good result), a body that is not JSON or
not an object is a 400, a body over 3 MiB a 413 (:mod:`celmut.playground.guard`). Evaluations run on
a small pool of threads, so the event loop keeps answering while one runs until its deadline; when
more are waiting than :data:`MAX_PENDING`, a request is told to try again (503) instead of queueing
without bound.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.middleware.gzip import GZipMiddleware
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import Scope

from celmut import __version__
from celmut.playground import completions, examples, export, scratch, session, workload_run
from celmut.playground.guard import Guard, Origins, page_csp
from celmut.playground.inputs import PaneError, read_pane
from celmut.playground.live import ClusterUnavailable, LiveCluster
from celmut.service import schema_fields

log = logging.getLogger("celmut.playground")
EVALUATION_THREADS = 2
MAX_PENDING = 8  # evaluations running or waiting; one more is answered 503
T = TypeVar("T")


def static_directory() -> Path:
    return Path(str(resources.files("celmut.playground") / "static"))


@dataclass
class PlaygroundSettings:
    """Where examples come from, and the pool evaluations run on."""

    examples_root: Path = field(default_factory=examples.default_root)
    threads: int = EVALUATION_THREADS
    max_pending: int = MAX_PENDING
    live: LiveCluster | None = None  # connected to a cluster (read-only): lookups read it


class Assets(StaticFiles):
    """The page's files, revalidated on each load (``no-cache`` with their ETag: a 304 when unchanged)
    rather than the guard's ``no-store``, so the 450 kB editor is not fetched again on every visit."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers["cache-control"] = "no-cache"
        return response


class Busy(Exception):
    """More evaluations are waiting than the playground takes."""


class Evaluations:
    """A bounded pool: at most ``max_pending`` evaluations running or waiting."""

    def __init__(self, threads: int, max_pending: int) -> None:
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="celmut-playground")
        self.slots = threading.BoundedSemaphore(max_pending)

    async def run(self, work: Callable[[], T]) -> T:
        if not self.slots.acquire(blocking=False):
            raise Busy
        try:
            return await asyncio.get_running_loop().run_in_executor(self.pool, work)
        finally:
            self.slots.release()


def create_app(settings: PlaygroundSettings | None = None) -> FastAPI:
    """The app, without the guard (:func:`guarded` puts it in front)."""
    settings = settings or PlaygroundSettings()
    evaluations = Evaluations(settings.threads, settings.max_pending)
    app = FastAPI(title="celmut playground", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(GZipMiddleware, minimum_size=2048)  # the editor: 450 kB, 145 kB compressed
    static = static_directory()
    app.mount("/static", Assets(directory=static), name="static")
    live = settings.live

    def lookups() -> Any:
        return live.lookups() if live is not None else None

    page_text = (static / "index.html").read_text(encoding="utf-8")

    @app.get("/")
    async def page() -> Response:
        nonce = secrets.token_urlsafe(18)  # the editor's <style> elements, for this load only
        html = page_text.replace("{{style-nonce}}", nonce)
        headers = {"content-security-policy": page_csp(nonce)}
        return Response(html, media_type="text/html; charset=utf-8", headers=headers)

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response("ok", media_type="text/plain")

    @app.get("/api/examples")
    async def list_examples() -> JSONResponse:
        found = examples.available(settings.examples_root)
        return JSONResponse({"examples": found, "version": __version__})

    @app.get("/api/catalog")
    async def list_catalog() -> JSONResponse:
        found = await asyncio.get_running_loop().run_in_executor(None, examples.catalog, settings.examples_root)
        return JSONResponse({"entries": found, "version": __version__})

    @app.get("/api/cel")
    async def cel_environment() -> JSONResponse:
        return JSONResponse(completions.environment())

    @app.post("/api/fields")
    async def schema_at(request: Request) -> Response:
        return await answered(request, lambda body: _fields(body, live))

    async def answered(request: Request, work: Callable[[dict[str, Any]], dict[str, Any]]) -> Response:
        """``work`` on the request's JSON object, on the evaluation pool."""
        body = await _json(request)
        if isinstance(body, Response):
            return body
        return await _evaluated(evaluations, lambda: work(body))

    @app.post("/api/run")
    async def run(request: Request) -> Response:
        return await answered(request, lambda body: session.run(session.State.from_json(body), lookups()))

    @app.post("/api/workload")
    async def run_workload(request: Request) -> Response:
        def work(body: dict[str, Any]) -> dict[str, Any]:
            index = body.get("resource", 0)
            if not isinstance(index, int) or isinstance(index, bool):
                raise BadRequest("resource: a number expected")
            return workload_run.run(session.State.from_json(body.get("state")), index, lookups())

        return await answered(request, work)

    @app.post("/api/native")
    async def native_policies(request: Request) -> Response:
        return await answered(request, lambda body: session.natives(session.State.from_json(body), lookups()))

    @app.get("/api/cluster")
    async def cluster() -> JSONResponse:
        return JSONResponse(live.describe() if live is not None else {"connected": False})

    @app.get("/api/cluster/namespaces")
    async def cluster_namespaces() -> Response:
        return await _from_cluster(evaluations, live, lambda c: {"namespaces": c.namespaces()})

    @app.get("/api/cluster/objects")
    async def cluster_objects(namespace: str = "", resource: str = "pods") -> Response:
        return await _from_cluster(evaluations, live, lambda c: c.objects(namespace, resource))

    @app.get("/api/cluster/load")
    async def cluster_load(namespace: str = "", resource: str = "pods", name: str = "") -> Response:
        return await _from_cluster(evaluations, live, lambda c: c.load(namespace, resource, name))

    @app.post("/api/eval")
    async def evaluate(request: Request) -> Response:
        return await answered(request, _scratch_pad)

    @app.post("/api/compile")
    async def compile_presets(request: Request) -> Response:
        return await answered(request, lambda body: scratch.compile_presets(_string(body, "policies")))

    @app.post("/api/export")
    async def export_test(request: Request) -> Response:
        body = await _json(request)
        if isinstance(body, Response):
            return body
        name = body.get("name", "playground")
        if not isinstance(name, str):
            return _error(400, "name: a string expected")
        try:
            archive, files = await evaluations.run(
                lambda: export.export(session.State.from_json(body.get("state")), name)
            )
        except PaneError as ex:
            return JSONResponse({"errors": [p.to_dict() for p in ex.problems]}, status_code=422)
        except Busy:
            return _busy()
        return Response(
            archive,
            media_type="application/zip",
            headers={"content-disposition": 'attachment; filename="kyverno-test.zip"', "x-files": ",".join(files)},
        )

    return app


class BadRequest(Exception):
    """A field of the request body has the wrong type (HTTP 400)."""


def _string(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise BadRequest(f"{key}: a string expected")
    return value


def _scratch_pad(body: dict[str, Any]) -> dict[str, Any]:
    index, profile = body.get("resource", 0), body.get("profile", "kyverno")
    if not isinstance(index, int) or not isinstance(profile, str):
        raise BadRequest("resource (a number) and profile (a string) expected")
    state = session.State.from_json(body.get("state") or {})
    return scratch.evaluate(state, _string(body, "expression"), index, profile)


def _fields(body: dict[str, Any], live: LiveCluster | None) -> dict[str, Any]:
    """The fields at ``path`` of the kind ``target`` names, with the CRDs of the cluster pane (and of
    the connected cluster) for custom resources."""
    target, path, cluster = body.get("target"), body.get("path", []), body.get("cluster", "")
    if not isinstance(target, dict) or not isinstance(path, list) or not all(isinstance(p, str) for p in path):
        raise BadRequest("target (an object) and path (a list of strings) expected")
    if not isinstance(cluster, str):
        raise BadRequest("cluster: a string expected")
    try:
        documents = read_pane("cluster", cluster).documents
    except PaneError:
        documents = []  # completion goes on with the built-in kinds while the pane is being typed
    crds = [
        d.content
        for d in documents
        if isinstance(d.content, dict) and d.content.get("kind") == "CustomResourceDefinition"
    ]
    if live is not None:
        crds += live.crds()
    return schema_fields.fields(target, path, crds)


async def _from_cluster(
    evaluations: Evaluations, live: LiveCluster | None, work: Callable[[LiveCluster], dict[str, Any]]
) -> Response:
    """A read of the connected cluster, on the pool; 409 when not connected, 502 when it fails."""
    if live is None:
        return _error(409, "not connected to a cluster: start the playground with --kubeconfig (and --context)")
    try:
        return JSONResponse(await evaluations.run(lambda: work(live)))
    except ClusterUnavailable as ex:
        return _error(502, str(ex))
    except Busy:
        return _busy()


def guarded(app: FastAPI, origins: Origins) -> Guard:
    return Guard(app, origins)


async def _json(request: Request) -> dict[str, Any] | Response:
    try:
        body = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError) as ex:
        return _error(400, f"the body is not JSON: {ex}")
    if not isinstance(body, dict):
        return _error(400, "the body must be a JSON object")
    return body


async def _evaluated(evaluations: Evaluations, work: Callable[[], dict[str, Any]]) -> Response:
    try:
        result = await evaluations.run(work)
    except PaneError as ex:
        result = {"errors": [p.to_dict() for p in ex.problems]}
    except BadRequest as ex:
        return _error(400, str(ex))
    except Busy:
        return _busy()
    except Exception as ex:  # a defect of celmut: said, logged, and the server goes on
        log.exception("playground evaluation failed")
        return _error(500, f"internal error: {type(ex).__name__}: {ex} (a bug in celmut; the log has the traceback)")
    return JSONResponse(result)


def _busy() -> Response:
    return _error(503, "the playground is busy with other evaluations: try again in a moment")


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)
