"""API errors of the fake API server, rendered as the real server's ``metav1.Status`` bodies.

Every failure inside the store or the HTTP layer raises :class:`ApiError`; the HTTP layer turns it into
a JSON ``Status`` with the same ``reason``/``code``/``message`` shapes the real kube-apiserver uses, so
the ``kubernetes`` client raises ``ApiException`` with the expected ``status`` and ``reason``.
"""

from __future__ import annotations

from typing import Any

#: The reason the real server reports for each HTTP code when nothing more specific applies.
DEFAULT_REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """An error answer of the API server: an HTTP code plus a ``metav1.Status`` body."""

    def __init__(
        self,
        code: int,
        message: str,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason if reason is not None else DEFAULT_REASONS.get(code, "Unknown")
        self.details = details
        self.headers = headers or {}
        self.metadata = metadata or {}  # the Status's ListMeta (an inconsistent continue token)

    def status(self) -> dict[str, Any]:
        """The ``Status`` object the real server would send for this error."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.metadata),
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body

    def __repr__(self) -> str:
        return f"ApiError({self.code}, {self.reason!r}, {self.message!r})"


def _details(name: str, group: str, kind: str, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details.update(extra)
    return details


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> ApiError:
    """``pods "x" not found`` (404 NotFound)."""
    return ApiError(404, f'{_qualified(plural, group)} "{name}" not found', "NotFound", _details(name, group, plural))


def unknown_resource() -> ApiError:
    """The 404 the server gives for a path that names no resource it serves."""
    return ApiError(404, "the server could not find the requested resource", "NotFound", {})


def already_exists(plural: str, group: str, name: str) -> ApiError:
    """``pods "x" already exists`` (409 AlreadyExists)."""
    return ApiError(
        409, f'{_qualified(plural, group)} "{name}" already exists', "AlreadyExists", _details(name, group, plural)
    )


def conflict(plural: str, group: str, name: str, why: str | None = None) -> ApiError:
    """The optimistic-concurrency 409 Conflict of an update with a stale resourceVersion."""
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": {why}',
        "Conflict",
        _details(name, group, plural),
    )


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """A 422 Invalid; ``causes`` holds ``(reason, field, message)`` triples such as
    ``("FieldValueRequired", "metadata.name", "Required value: name or generateName is required")``."""
    summary = ", ".join(f"{field}: {message}" for _, field, message in causes)
    if len(causes) > 1:
        summary = f"[{summary}]"
    return ApiError(
        422,
        f'{kind}{"." + group if group else ""} "{name}" is invalid: {summary}',
        "Invalid",
        _details(
            name,
            group,
            kind,
            causes=[{"reason": reason, "message": message, "field": field} for reason, field, message in causes],
        ),
    )


def bad_request(message: str) -> ApiError:
    """A 400 BadRequest."""
    return ApiError(400, message, "BadRequest")


def method_not_allowed() -> ApiError:
    """The 405 for a verb a resource does not support."""
    return ApiError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed", {})


def gone(message: str, continue_token: str = "") -> ApiError:
    """A 410 Expired, as for a watch or list from a compacted resourceVersion; a list page's with the
    token that continues the list at the latest resourceVersion (k8s.io/apiserver storage/etcd3/errors.go
    ``handleCompactedErrorForPaging``)."""
    return ApiError(410, message, "Expired", metadata={"continue": continue_token} if continue_token else None)


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    """A 415 for a body format the endpoint does not take."""
    return ApiError(
        415,
        f"the body of the request was in an unknown format - accepted media types include: {', '.join(accepted)}",
        "UnsupportedMediaType",
        {"causes": [{"reason": "UnexpectedHeader", "message": content_type, "field": "Content-Type"}]}
        if content_type
        else None,
    )


def success_status(code: int = 200, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``Status`` with ``status: Success`` (delete of most kinds, eviction)."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details is not None:
        body["details"] = details
    if code != 200:
        body["code"] = code
    return body
