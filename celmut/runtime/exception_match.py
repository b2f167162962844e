"""What PolicyExceptions say about one policy on one request (Kyverno ``PolicyException``)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from celmut import cel
from celmut.compile.compiled import CompiledPolicy
from celmut.runtime.candidates import ExceptionIndex
from celmut.runtime.context import RequestContext


@dataclass
class ExceptionMatch:
    """What PolicyExceptions say about one policy on one request."""

    skipped_by: str | None = None
    allowed_images: tuple[str, ...] = ()
    allowed_values: tuple[str, ...] = ()

    def variable(self) -> dict[str, list[str]]:
        """The CEL ``exceptions`` variable."""
        return {"allowedImages": list(self.allowed_images), "allowedValues": list(self.allowed_values)}


def match_exceptions(
    index: ExceptionIndex, policy: CompiledPolicy, context: RequestContext, current: dict[str, Any] | None
) -> ExceptionMatch:
    """PolicyExceptions naming this policy whose match conditions all hold for the request.

    A full exception skips the policy (the highest ``polex.kyverno.io/priority`` is reported);
    partial ones (``images``/``allowedValues``) only fill the CEL variable ``exceptions``. An
    exception whose conditions fail to evaluate does not apply.
    """
    candidates = index.naming(policy.name, policy.kind)
    if candidates:  # the clock only when an exception names the policy (the hot path has none)
        now = datetime.datetime.now(datetime.UTC)  # an expired exception skips nothing (kyverno/api IsExpired)
        candidates = [e for e in candidates if not e.expired(now)]
    found = ExceptionMatch()
    if not candidates:
        return found
    activation = context.exception_activation(current)
    for exception in sorted(candidates, key=lambda e: -e.priority):
        try:
            applies = all(c.program.evaluate(activation) is True for c in exception.match_conditions)
        except cel.CelError:
            applies = False
        if not applies:
            continue
        if exception.is_partial:
            found.allowed_images += exception.images
            found.allowed_values += exception.allowed_values
        elif found.skipped_by is None:
            found.skipped_by = f"{exception.namespace}/{exception.name}" if exception.namespace else exception.name
    return found
