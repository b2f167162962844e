"""What an evaluation reports: per-policy outcomes and the admission result."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from celmut.runtime.no_annotations import NO_AUDIT_ANNOTATIONS
from celmut.runtime.patch import diff

Status = Literal["applied", "unchanged", "skipped", "excepted", "error"]

# Why a policy did not apply, as a code every surface can render (the ``reason`` is the prose).
Cause = Literal[
    "",  # it applied, or matched and changed nothing
    "matchConstraints",  # namespaceSelector, objectSelector, resource rules or exclusions (of a MAP binding too)
    "matchCondition",  # ``cause_name``: the first condition that is false
    "targetMatchCondition",  # mutateExisting: the first targetMatchCondition that is false
    "exception",  # a PolicyException (``cause_name``: namespace/name)
    "error",  # evaluation failed; the failurePolicy decided what happened to the request
    "namespace",  # a NamespacedMutatingPolicy only sees its own namespace (Kyverno)
    "controlledReplicaSet",  # Kyverno's resource filter: a ReplicaSet its Deployment manages
    "backgroundRequest",  # skipBackgroundRequests: a request from celmut's own controller (Kyverno)
    "noBinding",  # a MutatingAdmissionPolicy no binding refers to
    "paramNotFound",  # a binding's params are missing and parameterNotFoundAction is Allow
    "noObject",  # DELETE and CONNECT carry no object to mutate
]


@dataclass
class MutationStep:
    """What one mutation changed: the object before and after it, and their diff (computed on first use)."""

    index: int  # position in the policy's mutations
    path: str  # e.g. spec.mutations[1]
    before: Any = field(repr=False)
    after: Any = field(repr=False)
    claims: tuple[str, ...] = ()  # the pointers it writes, changed or not (recorded when explaining)
    _patch: list[dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def patch(self) -> list[dict[str, Any]]:
        if self._patch is None:
            self._patch = diff(self.before, self.after)
        return self._patch


@dataclass(slots=True)
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
    cost: int = 0  # CEL cost units its expressions spent (out of the request's shared budget)
    before: Any = field(default=None, repr=False)  # the object this policy received …
    after: Any = field(default=None, repr=False)  # … and the one it produced (when it changed it)
    _patch: list[dict[str, Any]] | None = field(default=None, repr=False)
    cause: Cause = ""  # why it did not apply, as a code (``reason`` says it in prose)
    cause_name: str = ""  # the matchCondition or PolicyException named by ``cause``
    steps: list[MutationStep] | None = field(default=None, repr=False)  # per mutation, when explaining
    # when explaining: the policy's variables as its evaluation computed them (those it used), by name
    variables: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def patch(self) -> list[dict[str, Any]]:
        """This policy's own change as RFC 6902 operations (computed on first use)."""
        if self._patch is None:
            self._patch = diff(self.before, self.after) if self.after is not None else []
        return self._patch

    @property
    def matched(self) -> bool:
        return self.status in ("applied", "unchanged", "error")

    @property
    def message(self) -> str:
        """The one-line account of this outcome every surface prints for an error:
        ``policy NAME: FIELD: WHAT`` (the field path when one is known), else ``policy NAME: REASON``."""
        where = f"{self.path}: " if self.path else ""
        return f"policy {self.policy}: {where}{self.reason}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"policy": self.policy, "kind": self.kind, "status": self.status}
        for key in ("reason", "path", "binding", "cause"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.patch:
            out["patch"] = self.patch
        if self.audit_annotations:
            out["auditAnnotations"] = self.audit_annotations
        if self.reinvoked:
            out["reinvoked"] = True
        return out




def outcome_maker(**fields: Any) -> Callable[[], PolicyOutcome]:
    """What makes equal new outcomes with ``fields`` (the others at their defaults; ``audit_annotations``
    :data:`NO_AUDIT_ANNOTATIONS`). Every field up to the last one given is passed by position, in the
    dataclass's own order: a partial with keywords merges them on every call, twice the cost (the engine
    makes 40 per Pod request with autogen on, one per policy the request's kind leaves out)."""
    values = {"audit_annotations": NO_AUDIT_ANNOTATIONS, **fields}
    order = [f for f in dataclasses.fields(PolicyOutcome) if f.init]
    unknown = set(values) - {f.name for f in order}
    if unknown:
        raise TypeError(f"PolicyOutcome has no field {', '.join(sorted(unknown))}")
    last = max(i for i, f in enumerate(order) if f.name in values)
    arguments = []
    for spec in order[: last + 1]:
        if spec.name in values:
            arguments.append(values[spec.name])
        elif spec.default is not dataclasses.MISSING:
            arguments.append(spec.default)
        else:
            raise TypeError(f"PolicyOutcome field {spec.name} has no default: give it")
    return functools.partial(PolicyOutcome, *arguments)


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

    @classmethod
    def unchanged(
        cls,
        original: dict[str, Any] | None,
        outcomes: list[PolicyOutcome] | None = None,
        *,
        warnings: list[str] | None = None,
        audit_annotations: dict[str, str] | None = None,
    ) -> AdmissionResult:
        """The request allowed as it came."""
        return cls(
            allowed=True,
            original=original,
            object=original,
            patch=[],
            outcomes=outcomes or [],
            warnings=[] if warnings is None else warnings,
            audit_annotations={} if audit_annotations is None else audit_annotations,
        )

    @classmethod
    def denied(
        cls,
        original: dict[str, Any] | None,
        outcomes: list[PolicyOutcome],
        message: str,
        *,
        warnings: list[str] | None = None,
        audit_annotations: dict[str, str] | None = None,
    ) -> AdmissionResult:
        """The request denied with ``message``; nothing any policy did is kept."""
        return cls(
            allowed=False,
            original=original,
            object=original,
            patch=[],
            outcomes=outcomes,
            message=message,
            warnings=[] if warnings is None else warnings,
            audit_annotations={} if audit_annotations is None else audit_annotations,
        )

    @property
    def changed(self) -> bool:
        return bool(self.patch)

    @property
    def errored(self) -> bool:
        return any(o.status == "error" for o in self.outcomes) or not self.allowed

    @property
    def applied_policies(self) -> list[str]:
        return [o.policy for o in self.outcomes if o.status == "applied"]


def with_annotations(result: AdmissionResult, annotations: Mapping[str, str]) -> AdmissionResult:
    """``result`` with ``annotations`` set on the object it admits, its patch extended to match (after
    the policies' operations: a valid RFC 6902 sequence). What the webhook itself stamps on a pod (the
    id of the split decision that placed it, :mod:`celmut.kube.decision_ledger`)."""
    obj = result.object
    if not annotations or not result.allowed or obj is None:
        return result
    metadata = obj.get("metadata") or {}
    current = metadata.get("annotations") or {}
    if all(current.get(key) == value for key, value in annotations.items()):
        return result
    stamped = {**obj, "metadata": {**metadata, "annotations": {**current, **annotations}}}
    return dataclasses.replace(result, object=stamped, patch=[*result.patch, *diff(obj, stamped)])
