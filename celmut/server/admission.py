"""One admission, from the request body to the response bytes: what a worker thread runs.

The event loop only reads bodies and writes responses; everything that depends on the policies —
decoding the review, CEL, building the patch, logging — runs here, on a bounded thread pool, so a
slow evaluation never delays ``/healthz``, ``/readyz`` or other requests (Python switches threads
every few milliseconds, and every CEL operation checks the request's deadline as it is charged,
:mod:`celmut.cel.costs`).

Nothing here answers with a 5xx: a malformed review is a 400 naming the field; a defect in celmut
is answered as the failurePolicy of the policies served says (``Ignore``: admitted unchanged, with
a warning; ``Fail``: denied). After a request a limit stopped, the cyclic garbage it left (the
frames of the exceptions that stopped it) is collected at once: :func:`celmut.heap.settle` raised
the collector's thresholds, so it would otherwise stay for a long time.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celmut import cel, heap
from celmut.cel import lookups
from celmut.cel.errors import Reschedule
from celmut.runtime import AdmissionEngine, AdmissionResult
from celmut.runtime.ownership import controller_owner
from celmut.runtime.results import with_annotations
from celmut.server import review as reviews
from celmut.server.metrics import Metrics
from celmut.service import trace_records
from celmut.service import tracing as traces

log = logging.getLogger("celmut.server")
#: Evaluations of one admission when another process keeps deciding about its workload meanwhile
#: (celmut.kube.decision_ledger); the last one is admitted as decided.
DECISION_ATTEMPTS = 10
CONFLICT_BACKOFF_SECONDS = 0.003


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes


@dataclass(frozen=True)
class Admission:
    """What every admission of one server shares."""

    metrics: Metrics
    on_admitted: Callable[[dict[str, Any] | None, dict[str, Any]], None] | None = None  # (received, admitted)
    reclaim: Callable[[Callable[[], object]], object] | None = None  # runs heap.reclaim off the event loop
    tracing: traces.Tracing | None = None  # OpenTelemetry spans (celmut.service.tracing); None: off
    on_decided: Callable[[Any, AdmissionResult], None] | None = None  # (request, result): errors to the reports

    def answer(
        self,
        body: bytes,
        engine: AdmissionEngine,
        budget: cel.Budget,
        failure_policy: str | None,
        started: float,
        trace_headers: dict[str, str] | None = None,
    ) -> Answer:
        """The response to one request body (run on a worker thread)."""
        try:
            return self._answer(body, engine, budget, failure_policy, started, trace_headers)
        finally:
            if budget.exhausted:
                heap.reclaim()

    def inline(
        self,
        body: bytes,
        engine: AdmissionEngine,
        budget: cel.Budget,
        failure_policy: str | None,
        started: float,
        seconds: float,
        trace_headers: dict[str, str] | None = None,
    ) -> Answer | None:
        """The response, when it can be computed here (the event loop) within ``seconds`` of CPU time and
        without waiting for I/O; None when the request must run on a worker thread instead
        (:mod:`celmut.server.mutate`). ``budget`` is left unspent for that run."""
        # CPU time: a process the OS preempted is not slow (the wall clock first: cheaper, never ahead)
        attempt = budget.sliced(time.monotonic() + seconds, time.thread_time() + seconds)
        try:
            with lookups.without_blocking():
                return self._answer(body, engine, attempt, failure_policy, started, trace_headers)
        except Reschedule:
            self.metrics.rescheduled.inc()
            return None
        finally:
            if attempt.exhausted and self.reclaim is not None:
                self.reclaim(heap.reclaim)  # not on the event loop: a collection may take a while

    def _answer(
        self,
        body: bytes,
        engine: AdmissionEngine,
        budget: cel.Budget,
        failure_policy: str | None,
        started: float,
        trace_headers: dict[str, str] | None = None,
    ) -> Answer:
        try:
            review = reviews.parse_review(body)
        except reviews.ReviewError as ex:
            return self.bad_request(ex, len(body))
        try:
            return Answer(200, self._admit(review, engine, budget, failure_policy, started, trace_headers))
        except Exception:  # a defect in celmut: answer this request as its failurePolicy says, keep serving
            log.exception("internal error while admitting", extra={"uid": review.uid})
            self.metrics.rejected("internal_error")
            admit = not fails_closed(engine, failure_policy)
            return Answer(200, reviews.error_response(review, "celmut internal error", admit=admit))

    def bad_request(self, ex: reviews.ReviewError, size: int) -> Answer:
        """HTTP 400 for a body that is no usable AdmissionReview: counted, and logged as one line saying what
        was wrong (the messages name fields, never their values: nothing of the body is logged)."""
        self.metrics.rejected("bad_request")
        message = f"invalid AdmissionReview: {ex}"
        log.warning(
            "invalid AdmissionReview refused (400)",
            extra={"status": 400, "error": str(ex), "field": ex.field, "uid": ex.uid, "bodyBytes": size},
        )
        return Answer(400, reviews.status_body(message, 400, field=ex.field, uid=ex.uid))

    def _admit(
        self,
        review: reviews.Review,
        engine: AdmissionEngine,
        budget: cel.Budget,
        failure_policy: str | None,
        started: float,
        trace_headers: dict[str, str] | None = None,
    ) -> bytes:
        request = review.request
        services = engine.options.services
        if request.dry_run:
            services = dataclasses.replace(services, dry_run=True)
        evaluated = time.perf_counter() if self.tracing is not None else 0.0
        # What the admission's lookups hold (a workload's decision lock) is held until what it admitted
        # is recorded: the next decision about the workload counts it (celmut.kube.stored_pods).
        # a workload pod's creation may count its siblings: its decision is recorded under the request's uid
        decision_id = (
            review.uid
            if request.operation == "CREATE" and not request.dry_run and _workload_pod(request.object)
            else ""
        )
        with lookups.AdmissionScope(budget.deadline, arrived=started, decision_id=decision_id) as scope:
            for attempt in range(1, DECISION_ATTEMPTS + 1):
                near_deadline = budget.deadline is not None and time.monotonic() > budget.deadline - 1.0
                scope.final = attempt == DECISION_ATTEMPTS or near_deadline
                result = engine.admit(request, budget, services=services, failure_policy=failure_policy)
                created = request.operation == "CREATE" and not request.dry_run and result.allowed
                if created and scope.stamps:  # its split counted its siblings: the id of its ledger entry
                    result = with_annotations(result, scope.stamps)
                if self.on_admitted is not None and created and result.object is not None:
                    self.on_admitted(result.original, result.object)
                if not scope.evaluate_again():
                    break
                self.metrics.split_reevaluations.inc()
                # contended: let the processes that decided meanwhile finish (client-go's RetryOnConflict
                # backs off too); the workload's lock in this process is still held
                time.sleep(random.uniform(0.0, CONFLICT_BACKOFF_SECONDS * attempt))
            if scope.final and attempt > 1:  # the ledger changed under every earlier evaluation: the last stood
                log.warning(
                    "split decision contended; admitted as last evaluated",
                    extra={"uid": review.uid, "attempts": attempt},
                )
        if self.on_decided is not None and not request.dry_run:
            try:
                self.on_decided(request, result)
            except Exception:  # reporting never changes an answer
                log.exception("could not record the admission for the reports", extra={"uid": review.uid})
        answer = reviews.build_response(review, result, engine.pointer_tokens)
        seconds = time.perf_counter() - started
        self.metrics.observe(request.operation, result, seconds)
        _log(review, result, seconds)
        if self.tracing is not None:
            _trace(self.tracing, review, result, failure_policy, trace_headers, started, evaluated)
        return answer


def _workload_pod(obj: dict[str, Any] | None) -> bool:
    return obj is not None and obj.get("kind") == "Pod" and controller_owner(obj) is not None


def fails_closed(engine: AdmissionEngine, failure_policy: str | None) -> bool:
    """Whether a request celmut could not evaluate must be denied: the webhook serves
    ``failurePolicy: Fail`` policies (``/mutate/fail``, or ``/mutate`` with any such policy)."""
    if failure_policy is not None:
        return failure_policy.partition("@")[0] == "Fail"
    return any(p.failure_policy == "Fail" for p in engine.policies if p.admission)


def _trace(
    tracing: traces.Tracing,
    review: reviews.Review,
    result: AdmissionResult,
    failure_policy: str | None,
    headers: dict[str, str] | None,
    started: float,
    evaluated: float,
) -> None:
    """Record the admission's span (perf_counter times placed on the wall clock)."""
    now_ns, now = time.time_ns(), time.perf_counter()
    request = review.request
    attributes: dict[str, str | int | bool] = {
        "k8s.admission.uid": review.uid,
        "k8s.admission.operation": request.operation,
        "k8s.admission.kind": request.kind.kind,
        "k8s.namespace.name": request.namespace,
        "k8s.object.name": request.name or (request.subject.get("metadata") or {}).get("generateName", ""),
        "celmut.admission.allowed": result.allowed,
        "celmut.admission.dry_run": request.dry_run,
        "celmut.admission.patch_operations": len(result.patch),
        "celmut.admission.failure_policy": failure_policy or "all",
    }
    try:
        tracing.admission(
            trace_records.AdmissionRecord(
                headers=headers or {},
                started_ns=now_ns - int((now - started) * 1e9),
                evaluated_ns=now_ns - int((now - evaluated) * 1e9),
                ended_ns=now_ns,
                attributes={k: traces.attribute_value(v) for k, v in attributes.items()},
                policies=trace_records.evaluated_policies(result),
                allowed=result.allowed,
            )
        )
    except Exception:  # a tracing failure never changes an answer
        log.exception("could not record the admission's trace", extra={"uid": review.uid})


def _log(review: reviews.Review, result: AdmissionResult, seconds: float) -> None:
    if not log.isEnabledFor(logging.INFO):  # building the record's fields costs more than the check
        return
    request = review.request
    metadata = request.subject.get("metadata") or {}
    log.info(
        "admission",
        extra={
            "uid": review.uid,
            "operation": request.operation,
            "kind": request.kind.kind,
            "namespace": request.namespace,
            "objectName": request.name or metadata.get("generateName", ""),
            "dryRun": request.dry_run,
            "allowed": result.allowed,
            "applied": result.applied_policies,
            "errors": [o.policy for o in result.outcomes if o.status == "error"],
            "patchOps": len(result.patch),
            "durationMs": round(seconds * 1000, 3),
        },
    )
