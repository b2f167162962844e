"""Why a policy failed on a request: the runtime's errors (see :mod:`celmut.errors` for the tree).

Each becomes a :class:`~celmut.runtime.results.PolicyOutcome` with status ``error`` and then follows
the policy's failurePolicy; none of them escapes :meth:`AdmissionEngine.admit`.
"""

from __future__ import annotations

from celmut.errors import CelmutError


class EvaluationFailure(CelmutError):
    """Base of the runtime's failures; the message is safe to show and log (no object contents)."""


class PolicyFailure(EvaluationFailure):
    """An expression or mutation failed; carries the field path and a safe message."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


class DecodeFailure(PolicyFailure):
    """The API server cannot decode a MAP's patched object: the request is rejected whatever the
    failurePolicy."""


class MutationError(EvaluationFailure):
    """A mutation result cannot be applied."""


class MergeError(MutationError):
    """The ApplyConfiguration cannot be merged; the message names the field path."""


class ParamError(EvaluationFailure):
    """A MutatingAdmissionPolicy binding's params cannot be resolved; ``allow`` when its
    parameterNotFoundAction says to skip the binding instead of failing."""

    def __init__(self, message: str, *, allow: bool) -> None:
        super().__init__(message)
        self.allow = allow
