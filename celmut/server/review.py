"""AdmissionReview in and out (admission.k8s.io v1 and v1beta1), as pure functions.

:func:`parse_review` validates the request and builds the runtime's :class:`AdmissionInput`;
:func:`build_response` answers with the same apiVersion, the request uid, ``allowed``, a base64
RFC 6902 ``patch`` with ``patchType: JSONPatch`` (omitted when nothing changed), ``warnings``,
``auditAnnotations`` (the policies' own, and who changed what: :mod:`celmut.server.audit`) and, for
a denial, a ``status`` naming the policy and expression.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import orjson

from celmut.errors import CelmutError
from celmut.jsonutil import PointerTokens
from celmut.runtime import AdmissionInput, AdmissionResult
from celmut.runtime.request import InvalidRequest
from celmut.server.audit import provenance_annotations

API_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
MAX_WARNINGS = 20  # the API server caps the warnings it forwards; keep responses small
MAX_WARNING_LENGTH = 256


class ReviewError(CelmutError, ValueError):
    """The body is not a usable AdmissionReview; the message says what is wrong (HTTP 400), ``field``
    names the field and ``uid`` is the request's uid when it could be read."""

    def __init__(self, message: str, field: str = "", uid: str = "") -> None:
        super().__init__(message)
        self.field = field
        self.uid = uid


@dataclass(frozen=True)
class Review:
    api_version: str
    uid: str
    request: AdmissionInput


def parse_review(body: bytes) -> Review:
    """Decode and validate an AdmissionReview body; a :class:`ReviewError` carries the uid when the
    body has a readable one. A review as kube-apiserver sends it pays the checks only: every message
    is built when it is raised."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as ex:
        raise ReviewError(f"request body is not valid JSON: {ex.args[0].split(':')[0]}") from None
    if type(document) is not dict:
        raise ReviewError("request body must be a JSON object (an AdmissionReview)")
    request = document.get("request")
    uid = request.get("uid") if type(request) is dict else None
    uid = uid if type(uid) is str else ""
    api_version = document.get("apiVersion")
    if document.get("kind") != "AdmissionReview":
        raise ReviewError("kind must be AdmissionReview", "kind", uid)
    if api_version not in API_VERSIONS:
        raise ReviewError(_API_VERSION_MESSAGE, "apiVersion", uid)
    if type(request) is not dict:
        raise ReviewError("request is missing", "request", uid)
    if not uid:
        raise ReviewError("request.uid is missing", "request.uid", uid)
    try:
        admission = AdmissionInput.from_admission_request(request, input_size=len(body))
    except InvalidRequest as ex:
        raise ReviewError(str(ex), ex.field, uid) from None
    return Review(str(api_version), uid, admission)


_API_VERSION_MESSAGE = f"apiVersion must be one of {', '.join(API_VERSIONS)}"


def _warnings(result: AdmissionResult) -> list[str]:
    warnings = [w if len(w) <= MAX_WARNING_LENGTH else w[: MAX_WARNING_LENGTH - 1] + "…" for w in result.warnings]
    return warnings[:MAX_WARNINGS]


def build_response(review: Review, result: AdmissionResult, tokens: PointerTokens | None = None) -> bytes:
    """The AdmissionReview response for ``result`` (``tokens``: the engine's pointers, split once)."""
    response: dict[str, Any] = {"uid": review.uid, "allowed": result.allowed}
    if not result.allowed:
        response["status"] = {"code": 403, "message": result.message, "reason": "Forbidden"}
    elif result.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(result.patch)).decode("ascii")
    warnings = _warnings(result)
    if warnings:
        response["warnings"] = warnings
    annotations = {**result.audit_annotations, **provenance_annotations(result, tokens)}
    if annotations:
        response["auditAnnotations"] = annotations
    return orjson.dumps({"apiVersion": review.api_version, "kind": "AdmissionReview", "response": response})


def error_response(review: Review, message: str, *, admit: bool) -> bytes:
    """celmut itself failed for this request: admit it unchanged (with a warning) when the
    failurePolicy of the policies it serves says Ignore, else deny with an internal error."""
    response: dict[str, Any] = {"uid": review.uid, "allowed": admit}
    if admit:
        response["warnings"] = [f"{message} (ignored: failurePolicy Ignore)"]
    else:
        response["status"] = {"code": 500, "message": message, "reason": "InternalError"}
    return orjson.dumps({"apiVersion": review.api_version, "kind": "AdmissionReview", "response": response})


def status_body(message: str, code: int, *, field: str = "", uid: str = "") -> bytes:
    """A ``metav1.Status`` failure; ``details.causes`` names the field, ``details.uid`` the request."""
    status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message}
    status["code"] = code
    details: dict[str, Any] = {}
    if uid:
        details["uid"] = uid
    if field:
        details["causes"] = [{"field": field, "message": message}]
    if details:
        status["details"] = details
    return orjson.dumps(status)
