"""``POST /mutate``, ``/mutate/fail`` and ``/mutate/ignore`` as a plain ASGI endpoint.

Every admission passes here, so this path has no routing, validation, middleware or response
classes of its own: it reads the body (bounded in size and time), evaluates it and sends the bytes
:mod:`celmut.server.admission` built. The rest of the app (probes, metrics) stays FastAPI.

Where the evaluation runs: a worker thread costs every admission a hand-off and, under load, a
fight for the GIL with the event loop (the thread pool cost 0.75 ms of CPU per admission at
saturation, more than the evaluation: ``benchmarks/webhook_bench.py``). So an admission is first
evaluated on the event loop for at most ``inline_seconds`` of CPU time (a time slice checked as CEL
charges its cost, :class:`celmut.cel.Budget.preempt_at`: CPU time, not wall time, because a process
the OS took the CPU from mid-admission — a loaded node, a CPU limit's throttling — is not slow, and
starting its admission again on a thread only adds to its latency); one that needs longer, or would
wait for I/O
(an HTTP call, a lookup the caches cannot answer: :func:`celmut.cel.lookups.before_blocking`), stops
with :class:`celmut.cel.errors.Reschedule` before it changed anything and runs again from the start
on the bounded thread pool, within the deadline counted from its arrival. A slow evaluation
therefore holds the loop for one slice at most, as issue 17 requires. Bodies over
``INLINE_MAX_BODY_BYTES`` go to the pool at once (decoding and diffing them is not charged as CEL),
and after an admission is rescheduled the next ones go straight to the pool for a while
(:class:`InlineGate`), so a policy set that always needs the pool does not pay the slice each time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celmut import cel
from celmut.server import review as reviews
from celmut.server.admission import Admission, Answer
from celmut.server.metrics import Metrics
from celmut.server.settings import ServerSettings
from celmut.service.store import PolicyStore
from celmut.service.tracing import header_carrier

log = logging.getLogger("celmut.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

PREFIX = "/mutate"
FAILURE_POLICY_PATHS = {"": None, "/fail": "Fail", "/ignore": "Ignore"}
INLINE_MAX_BODY_BYTES = 256 * 1024
_JSON = [(b"content-type", b"application/json")]


def webhook_group(path: str) -> str | None:
    """The policies a path under /mutate serves (:func:`celmut.runtime.candidates.in_group`): None for all,
    ``"Fail"``, ``"Fail@default"``, ``"Fail@5"`` …; ``""`` for an unknown path."""
    head, _, timeout = path[1:].partition("/") if path.startswith("/") else (path, "", "")
    if ("/" + head if head else "") not in FAILURE_POLICY_PATHS:
        return ""
    failure_policy = FAILURE_POLICY_PATHS["/" + head if head else ""]
    if not timeout:
        return failure_policy
    if failure_policy is None:
        return ""
    if timeout == "default":
        return f"{failure_policy}@default"
    seconds = timeout.removeprefix("timeout-")
    if seconds == timeout or not seconds.isdigit() or not 1 <= int(seconds) <= 30 or seconds != str(int(seconds)):
        return ""
    return f"{failure_policy}@{seconds}"


class ClientGone(Exception):
    """The client disconnected before its request body arrived."""


class InlineGate:
    """Whether to try the next admission on the event loop: after one was rescheduled, the next
    1, 2, 4, … 64 go to the pool directly; each admission completed inline halves the penalty."""

    def __init__(self, max_skip: int = 64) -> None:
        self.max_skip = max_skip
        self.penalty = 0
        self.skip = 0

    def try_inline(self) -> bool:
        if self.skip:
            self.skip -= 1
            return False
        return True

    def rescheduled(self) -> None:
        self.penalty = min(max(1, self.penalty * 2), self.max_skip)
        self.skip = self.penalty

    def completed(self) -> None:
        self.penalty //= 2


def _response(
    status: int, body: bytes, *, close: bool = False, extra: list[tuple[bytes, bytes]] | None = None
) -> tuple[Message, Message]:
    headers = [*_JSON, (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    headers += extra or []
    return {"type": "http.response.start", "status": status, "headers": headers}, {
        "type": "http.response.body",
        "body": body,
    }


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The body, or None when it exceeds ``limit`` (checked while reading, not after)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def _read_body_within(receive: Receive, limit: int, seconds: float) -> bytes | None:
    """:func:`_read_body`, or :class:`TimeoutError` when the body is not complete within ``seconds``.

    What ``asyncio.timeout`` does, by one timer that cancels this task: that context manager costs
    ~5 µs per request on uvloop (a Timeout object, two coroutines, a reschedule), this ~1.5 µs, on
    every admission. A cancellation from elsewhere (shutdown) still propagates: only one this timer
    requested, and no other, becomes the TimeoutError (``Task.uncancel``, as ``asyncio.timeout``)."""
    task = asyncio.current_task()
    if task is None:  # not in a task (never under an ASGI server): nothing to cancel, no deadline
        return await _read_body(receive, limit)
    cancelling = task.cancelling()
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    timer = asyncio.get_running_loop().call_later(seconds, expire)
    try:
        return await _read_body(receive, limit)
    except asyncio.CancelledError:
        if expired and task.uncancel() <= cancelling:
            raise TimeoutError from None
        raise
    finally:
        timer.cancel()


def not_allowed() -> tuple[Message, Message]:
    return _response(405, b'{"detail":"Method Not Allowed"}', extra=[(b"allow", b"POST")])


def response(status: int, body: bytes) -> tuple[Message, Message]:
    """An answer of ``status`` with the JSON ``body``."""
    return _response(status, body)


def _too_large(limit: int, metrics: Metrics) -> tuple[Message, Message]:
    metrics.rejected("too_large")
    message = f"request body exceeds the limit of {limit} bytes"
    log.warning("request refused (413)", extra={"status": 413, "error": message})
    return _response(413, reviews.status_body(message, 413), close=True)


async def read_body(
    scope: Scope, receive: Receive, settings: ServerSettings, metrics: Metrics
) -> bytes | tuple[Message, Message]:
    """A request body within the server's bounds (size, declared and read; time to arrive), or the answer
    refusing it (413, 408; an empty 400 to a client that went away): counted and logged."""
    limit = settings.max_body_bytes
    declared = _declared_length(scope)
    if declared is not None and declared > limit:
        return _too_large(limit, metrics)
    try:
        body = await _read_body_within(receive, limit, settings.body_timeout)
    except TimeoutError:
        metrics.rejected("body_timeout")
        message = f"request body not received within {settings.body_timeout:g} seconds"
        log.warning("request refused (408)", extra={"status": 408, "error": message})
        return _response(408, reviews.status_body(message, 408), close=True)
    except ClientGone:  # the client went away mid-body: nobody to answer
        log.debug("client disconnected while sending its request")
        metrics.rejected("client_disconnect")
        return _response(400, b"")
    if body is None:
        return _too_large(limit, metrics)
    return body


class ReviewEndpoint:
    """A plain ASGI endpoint answering AdmissionReviews (``/mutate``, ``/validate/policies``): what the
    server shares with it, and the answer sent in two messages. ``handles(scope)`` says whether a request
    is for it; ``_answer`` computes the two messages."""

    def __init__(
        self,
        store: PolicyStore,
        settings: ServerSettings,
        metrics: Metrics,
        admission: Admission,
        pool: ThreadPoolExecutor,
    ) -> None:
        self.store = store
        self.settings = settings
        self.metrics = metrics
        self.admission = admission
        self.pool = pool

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        start, body = await self._answer(scope, receive)
        await send(start)
        await send(body)

    async def _answer(self, scope: Scope, receive: Receive) -> tuple[Message, Message]:
        raise NotImplementedError


class MutateEndpoint(ReviewEndpoint):
    """The admission endpoint; ``handles(scope)`` says whether a request is for it."""

    def __init__(self, *shared: Any) -> None:
        """``shared``: what :class:`ReviewEndpoint` takes."""
        super().__init__(*shared)
        self.gate = InlineGate()

    @staticmethod
    def handles(scope: Scope) -> bool:
        if scope["type"] != "http":  # lifespan and websocket scopes have no path
            return False
        path: str = scope["path"]
        return path.startswith(PREFIX) and (len(path) == len(PREFIX) or path[len(PREFIX)] == "/")

    async def _answer(self, scope: Scope, receive: Receive) -> tuple[Message, Message]:
        started = time.perf_counter()
        settings = self.settings
        budget = cel.Budget.with_timeout(settings.deadline_seconds)  # from the request's arrival
        path: str = scope["path"][len(PREFIX) :]
        if scope["method"] != "POST":
            return not_allowed()
        failure_policy = webhook_group(path)
        if failure_policy == "":
            message = (
                f"unknown path /mutate{path}; use /mutate, /mutate/fail or /mutate/ignore "
                "(then optionally /default or /timeout-<seconds>)"
            )
            return _response(404, reviews.status_body(message, 404))
        body = await read_body(scope, receive, settings, self.metrics)
        if not isinstance(body, bytes):
            return body
        engine = self.store.engine
        if engine is None:
            self.metrics.rejected("not_ready")
            return _response(503, reviews.status_body("no policies loaded yet", 503))
        answer: Answer | None = None
        headers = header_carrier(scope["headers"]) if self.admission.tracing is not None else None
        if settings.inline_seconds > 0 and len(body) <= INLINE_MAX_BODY_BYTES and self.gate.try_inline():
            answer = self.admission.inline(
                body, engine, budget, failure_policy, started, settings.inline_seconds, headers
            )
            if answer is None:
                self.gate.rescheduled()
            else:
                self.gate.completed()
        if answer is None:
            loop = asyncio.get_running_loop()
            answer = await loop.run_in_executor(
                self.pool, self.admission.answer, body, engine, budget, failure_policy, started, headers
            )
        return _response(answer.status, answer.body)
