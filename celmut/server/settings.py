"""What one webhook server is configured with (:func:`celmut.server.app.create_app`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from celmut.service.tracing import Tracing

from celmut.limits import MAX_REQUEST_BYTES

DEFAULT_MAX_BODY_BYTES = MAX_REQUEST_BYTES  # the API server's own request limit (apiserver MaxRequestBodyBytes)
DEFAULT_EVALUATION_THREADS = 4
DEFAULT_INLINE_SECONDS = 0.005  # most admissions take well under 1 ms; one slice holds the loop at most this long


@dataclass
class ServerSettings:
    timeout_seconds: float = 10.0  # the webhook timeout the API server uses
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    body_timeout: float = 10.0  # seconds to receive a request body once its headers arrived
    evaluation_threads: int = DEFAULT_EVALUATION_THREADS  # admissions evaluated at once
    # seconds of CPU time an admission may run on the event loop before it is run again on a worker thread
    # (0: always on a worker thread)
    inline_seconds: float = DEFAULT_INLINE_SECONDS
    extra_ready_checks: list[Callable[[], str]] = field(default_factory=list)  # '' when ready, else why not
    # '' while the process is alive, else why not (a background thread died: celmut.crashes)
    dead: Callable[[], str] = field(default=lambda: "")
    # told (object received, object admitted) for each CREATE admitted
    on_admitted: Callable[[dict[str, Any] | None, dict[str, Any]], None] | None = None
    # told (request, result) of each admission decided: its errors go to the policy reports
    on_decided: Callable[[Any, Any], None] | None = None
    # (resource, metadata-only, objects, overflowed) of each cluster cache, shown in /metrics
    cache_sizes: Callable[[], list[tuple[str, bool, int, bool]]] | None = None
    tracing: Tracing | None = None  # OpenTelemetry spans of admissions (celmut.service.tracing); None: off
    # (kind, policy object) -> why celmut leaves it to another engine ('' when it is celmut's): the policy
    # validating webhook admits those unchecked. None: every policy is celmut's (no cluster).
    declines: Callable[[str, Mapping[str, Any]], str] | None = None

    @property
    def deadline_seconds(self) -> float:
        """Leave time to answer before the API server gives up on the webhook."""
        return max(self.timeout_seconds * 0.8, self.timeout_seconds - 1.0, 0.1)
