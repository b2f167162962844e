"""``POST /validate/policies``: the policy validating webhook, as Kyverno's policy webhook answers.

The API server sends it the creations and updates of celmut's policy kinds (the ValidatingWebhookConfiguration
the controller keeps, :mod:`celmut.install.policy_validation`). Each object is compiled on the admission
thread pool with the pipeline the store uses (:func:`celmut.service.policy_validation.validate`); an
object celmut leaves to another engine (a MutatingPolicy the policy selector does not select, a
PolicyException made for Kyverno only) is admitted unchecked — it is not celmut's to refuse. The answer
is Kyverno's: ``allowed``, and for a refusal a ``Failure`` status whose message is the field errors, the
same errors as warnings (``kubectl apply`` shows both). The request body is bounded as ``/mutate``'s
(size, time to arrive); a malformed review is a 400, logged and counted; the answer never waits past
the webhook's deadline (then the API server applies the webhook's failurePolicy, Fail).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from celmut.install.policy_validation import PATH
from celmut.server import review as reviews
from celmut.server.admission import Answer
from celmut.server.mutate import Message, Receive, ReviewEndpoint, Scope, not_allowed, read_body, response
from celmut.service.policy_validation import Verdict, validate

log = logging.getLogger("celmut.server")

#: (kind, object) -> why celmut leaves the object to another engine ('' when it is celmut's).
Declines = Callable[[str, Mapping[str, Any]], str]


class PolicyValidationEndpoint(ReviewEndpoint):
    """The validating endpoint; ``handles(scope)`` says whether a request is for it."""

    @staticmethod
    def handles(scope: Scope) -> bool:
        return scope["type"] == "http" and str(scope["path"]) == PATH

    async def _answer(self, scope: Scope, receive: Receive) -> tuple[Message, Message]:
        if scope["method"] != "POST":
            return not_allowed()
        body = await read_body(scope, receive, self.settings, self.metrics)
        if not isinstance(body, bytes):
            return body
        loop = asyncio.get_running_loop()
        try:
            answer = await asyncio.wait_for(
                loop.run_in_executor(self.pool, self.answer, body), self.settings.deadline_seconds
            )
        except TimeoutError:  # the API server would give up anyway; its failurePolicy (Fail) decides
            log.warning("policy validation not done within the webhook's deadline", extra={"bodyBytes": len(body)})
            message = f"policy validation not done within {self.settings.deadline_seconds:g} seconds"
            return response(503, reviews.status_body(message, 503))
        return response(answer.status, answer.body)

    def answer(self, body: bytes) -> Answer:
        """The response to one request body (on a worker thread)."""
        try:
            review = reviews.parse_review(body)
        except reviews.ReviewError as ex:
            return self.admission.bad_request(ex, len(body))
        request = review.request
        obj = request.object
        kind = request.kind.kind
        declined = self.settings.declines(kind, obj) if obj is not None and self.settings.declines else ""
        if obj is None or declined:
            verdict = Verdict(True)
        else:
            verdict = validate(obj, preset_failure_policy=self.store.settings.preset_failure_policy)
        self.metrics.policy_validated(kind, verdict.allowed)
        if not verdict.allowed:
            log.info(
                "policy refused",
                extra={
                    "uid": review.uid,
                    "operation": request.operation,
                    "kind": kind,
                    "namespace": request.namespace,
                    "objectName": request.name,
                    "error": verdict.message,
                },
            )
        return Answer(200, _response(review, verdict))


def _response(review: reviews.Review, verdict: Verdict) -> bytes:
    """Kyverno's ``admissionutils.Response(uid, err, warnings...)``: a refusal is a ``Failure`` status with
    the message (no code: the API server makes it 400), and the warnings either way."""
    answer: dict[str, Any] = {"uid": review.uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        answer["status"] = {"status": "Failure", "message": verdict.message}
    if verdict.warnings:
        answer["warnings"] = list(verdict.warnings[: reviews.MAX_WARNINGS])
    return orjson.dumps({"apiVersion": review.api_version, "kind": "AdmissionReview", "response": answer})
