"""What an evaluation reports: per-policy outcomes and the admission result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from celmut.runtime.patch import diff

Status = Literal["applied", "unchanged", "skipped", "excepted", "error"]


@dataclass
class PolicyOutcome:
    """One policy (or autogen variant, or MAP binding) on one request."""

    policy: str  # display name
    kind: str
    status: Status
    reason: str = ""  # why skipped / excepted, or the error
    path: str = ""  # the field path of the failing expression, for errors
    failure_policy: str = "Fail"
    audit_annotations: dict[str, str] = field(default_factory=dict)
    binding: str = ""  # for MutatingAdmissionPolicy: the binding that matched
    reinvoked: bool = False
    seconds: float = 0.0  # time spent evaluating this policy
    before: Any = field(default=None, repr=False)  # the object this policy received …
    after: Any = field(default=None, repr=False)  # … and the one it produced (when it changed it)
    _patch: list[dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def patch(self) -> list[dict[str, Any]]:
        """This policy's own change as RFC 6902 operations (computed on first use)."""
        if self._patch is None:
            self._patch = diff(self.before, self.after) if self.after is not None else []
        return self._patch

    @property
    def matched(self) -> bool:
        return self.status in ("applied", "unchanged", "error")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"policy": self.policy, "kind": self.kind, "status": self.status}
        for key in ("reason", "path", "binding"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.patch:
            out["patch"] = self.patch
        if self.audit_annotations:
            out["auditAnnotations"] = self.audit_annotations
        if self.reinvoked:
            out["reinvoked"] = True
        return out


@dataclass
class AdmissionResult:
    """The outcome of admitting one request through every policy."""

    allowed: bool
    original: dict[str, Any] | None
    object: dict[str, Any] | None
    patch: list[dict[str, Any]]
    outcomes: list[PolicyOutcome]
    message: str = ""  # why the request was denied
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.patch)

    @property
    def errored(self) -> bool:
        return any(o.status == "error" for o in self.outcomes) or not self.allowed

    @property
    def applied_policies(self) -> list[str]:
        return [o.policy for o in self.outcomes if o.status == "applied"]
