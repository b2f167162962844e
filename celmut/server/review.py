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
from celmut.runtime import AdmissionInput, AdmissionResult
from celmut.server.audit import provenance_annotations

API_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
MAX_WARNINGS = 20  # the API server caps the warnings it forwards; keep responses small
MAX_WARNING_LENGTH = 256


class ReviewError(CelmutError, ValueError):
    """The body is not a usable AdmissionReview; the message says what is wrong (HTTP 400)."""


@dataclass(frozen=True)
class Review:
    api_version: str
    uid: str
    request: AdmissionInput


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ReviewError(message)


def parse_review(body: bytes) -> Review:
    """Decode and validate an AdmissionReview body."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as ex:
        raise ReviewError(f"request body is not valid JSON: {ex.args[0].split(':')[0]}") from None
    _require(isinstance(document, dict), "request body must be a JSON object (an AdmissionReview)")
    api_version = document.get("apiVersion")
    _require(document.get("kind") == "AdmissionReview", "kind must be AdmissionReview")
    _require(api_version in API_VERSIONS, f"apiVersion must be one of {', '.join(API_VERSIONS)}")
    request = document.get("request")
    _require(isinstance(request, dict), "request is missing")
    uid = request.get("uid")
    _require(isinstance(uid, str) and bool(uid), "request.uid is missing")
    _require(request.get("operation") in OPERATIONS, f"request.operation must be one of {', '.join(OPERATIONS)}")
    for field in ("kind", "resource"):
        _require(isinstance(request.get(field), dict), f"request.{field} is missing")
    for field in ("object", "oldObject"):
        value = request.get(field)
        _require(value is None or isinstance(value, dict), f"request.{field} must be an object")
    _require(
        request.get("object") is not None or request.get("oldObject") is not None,
        "request carries neither object nor oldObject",
    )
    return Review(str(api_version), uid, AdmissionInput.from_admission_request(request, input_size=len(body)))


def _warnings(result: AdmissionResult) -> list[str]:
    warnings = [w if len(w) <= MAX_WARNING_LENGTH else w[: MAX_WARNING_LENGTH - 1] + "…" for w in result.warnings]
    return warnings[:MAX_WARNINGS]


def build_response(review: Review, result: AdmissionResult) -> bytes:
    """The AdmissionReview response for ``result``."""
    response: dict[str, Any] = {"uid": review.uid, "allowed": result.allowed}
    if not result.allowed:
        response["status"] = {"code": 403, "message": result.message, "reason": "Forbidden"}
    elif result.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(result.patch)).decode("ascii")
    warnings = _warnings(result)
    if warnings:
        response["warnings"] = warnings
    annotations = {**result.audit_annotations, **provenance_annotations(result)}
    if annotations:
        response["auditAnnotations"] = annotations
    return orjson.dumps({"apiVersion": review.api_version, "kind": "AdmissionReview", "response": response})


def error_response(review: Review, message: str) -> bytes:
    """Deny with an internal error (used when celmut itself fails for a request)."""
    response = {
        "uid": review.uid,
        "allowed": False,
        "status": {"code": 500, "message": message, "reason": "InternalError"},
    }
    return orjson.dumps({"apiVersion": review.api_version, "kind": "AdmissionReview", "response": response})
