"""Kyverno ``PolicyException`` (policies.kyverno.io): exempts requests from named policies.

An exception applies to a policy when its ``policyRefs`` name it (name and kind). When all of its
``matchConditions`` are true and it lists no ``images``/``allowedValues``, the policy is skipped for
that request; a partial exception (images or allowedValues) does not skip but fills the CEL
variable ``exceptions``. Among several, the highest ``polex.kyverno.io/priority`` label wins.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from celmut.policy.errors import FieldError
from celmut.policy.fields import Reader
from celmut.policy.mutating_policy import NamedExpression, parse_named_expressions

KINDS = ("PolicyException",)
PRIORITY_LABEL = "polex.kyverno.io/priority"


@dataclass(frozen=True)
class PolicyRef:
    name: str
    kind: str


@dataclass(frozen=True)
class PolicyException:
    name: str
    namespace: str
    source: str
    policy_refs: tuple[PolicyRef, ...]
    match_conditions: tuple[NamedExpression, ...]
    images: tuple[str, ...] = ()
    allowed_values: tuple[str, ...] = ()
    report_result: str = "skip"
    priority: int = 0
    expires_at: datetime.datetime | None = None  # spec.expiresAt: it stops applying then

    def expired(self, now: datetime.datetime) -> bool:
        """Whether ``spec.expiresAt`` has passed (kyverno/api ``PolicyException.IsExpired``)."""
        return self.expires_at is not None and now >= self.expires_at

    @property
    def is_partial(self) -> bool:
        return bool(self.images or self.allowed_values)

    def refers_to(self, name: str, kind: str) -> bool:
        return any(ref.name == name and (not ref.kind or ref.kind == kind) for ref in self.policy_refs)


def parse_policy_exception(doc: dict[str, Any], source: str, errors: list[FieldError]) -> PolicyException:
    meta = Reader(doc.get("metadata"), "metadata", errors)
    spec = Reader(doc.get("spec"), "spec", errors)
    refs = []
    for item in spec.items("policyRefs", required=True):
        refs.append(PolicyRef(item.string("name", required=True), item.string("kind")))
    priority_text = (meta.string_map("labels") or {}).get(PRIORITY_LABEL, "0")
    try:
        priority = int(priority_text)
    except ValueError:
        meta.fail(f"Invalid value: {priority_text!r}: must be an integer", f"labels.{PRIORITY_LABEL}")
        priority = 0
    expires_text = spec.string("expiresAt")
    expires_at = None
    if expires_text:
        try:
            expires_at = datetime.datetime.fromisoformat(expires_text.replace("Z", "+00:00"))
        except ValueError:
            spec.fail(f"Invalid value: {expires_text!r}: must be an RFC 3339 date-time", "expiresAt")
        if expires_at is not None and expires_at.tzinfo is None:
            expires_at = expires_at.replace(tzinfo=datetime.UTC)
    return PolicyException(
        name=meta.string("name", required=True),
        namespace=meta.string("namespace"),
        source=source,
        policy_refs=tuple(refs),
        match_conditions=parse_named_expressions(spec, "matchConditions", identifiers=False, max_items=64),
        images=tuple(spec.string_list("images") or ()),
        allowed_values=tuple(spec.string_list("allowedValues") or ()),
        report_result=spec.string("reportResult", default="skip", enum=("skip", "pass")),
        priority=priority,
        expires_at=expires_at,
    )
