"""The provenance of an admission as ``AdmissionResponse.auditAnnotations``.

kube-apiserver writes each audit annotation a webhook returns into the audit event of the request,
as ``<webhook name>/<key>`` (``staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/mutating/
dispatcher.go``, ``callAttrMutatingHook``), and drops — with only a log line — one whose full key is
not a qualified name with exactly one ``/`` (``staging/src/k8s.io/apiserver/pkg/admission/
attributes.go``, ``checkKeyFormat``: ``validation.IsQualifiedName``). So each key here is the name
part of a qualified name (at most 63 characters, alphanumerics, ``-``, ``_`` and ``.``) and never
contains ``/``; policy names, which may be longer, are in the values. Two keys:

* ``applied`` — per applied policy, the JSON pointers it changed, by operation:
  ``{"add-team": {"add": ["/metadata/labels/team"]}}``;
* ``skipped`` — per policy considered but not applied, why: ``{"prod-only": "matchCondition is-prod",
  "team-b": "PolicyException default/skip-web", "flaky": "error (failurePolicy Ignore): …"}``; the
  policies whose resource rules do not name the request's resource at all (a Deployment policy, the
  autogen variants of a Pod policy) are left out, as they were never candidates.

Values are JSON, and at most 10 KiB each, the length kube-apiserver truncates a
ValidatingAdmissionPolicy's audit annotation values to (``AuditAnnotation.valueExpression`` in
``staging/src/k8s.io/api/admissionregistration/v1/types.go``); entries past it are counted in
``"…"``. Values never carry field values, only pointers: the audit log may be read by people the
object's contents are not meant for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import orjson

from celmut.jsonutil import PointerTokens
from celmut.runtime import AdmissionResult
from celmut.runtime.provenance import from_outcomes, pointers_by_policy, selects_resource, summary
from celmut.runtime.results import PolicyOutcome

APPLIED_KEY = "applied"
SKIPPED_KEY = "skipped"
MAX_VALUE_BYTES = 10 * 1024
MORE = "…"
# The name part of a Kubernetes qualified name (k8s.io/apimachinery/pkg/util/validation IsQualifiedName).
AUDIT_KEY = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
MAX_KEY_LENGTH = 63


def is_valid_key(key: str) -> bool:
    """Whether kube-apiserver accepts ``key`` from a webhook (it prefixes the webhook name and a ``/``)."""
    return len(key) <= MAX_KEY_LENGTH and AUDIT_KEY.match(key) is not None


def provenance_annotations(result: AdmissionResult, tokens: PointerTokens | None = None) -> dict[str, str]:
    """``applied`` and ``skipped`` for ``result`` (each only when it has entries); ``tokens``: the
    engine's pointers, each split once."""
    final = result.object if result.allowed else None
    found = pointers_by_policy(result.outcomes, final, result.patch, tokens)  # per request: no records built
    if found is None:  # the outcomes hold each mutation's steps (explaining): the full model
        provenance = from_outcomes(result.outcomes, final, patch=result.patch)
        found = provenance.by_policy(), {m.policy for m in provenance.applied}
    by_policy, applied_policies = found
    out: dict[str, str] = {}
    applied = dict(by_policy) if result.allowed else {}
    if applied:
        out[APPLIED_KEY] = _bounded(applied)
    skipped = _skipped(result.outcomes, applied_policies)
    if skipped:
        out[SKIPPED_KEY] = _bounded(skipped)
    return out


def _label(policy: str, binding: str) -> str:
    return f"{policy} (binding {binding})" if binding else policy


def _skipped(outcomes: Sequence[PolicyOutcome], applied: set[str]) -> dict[str, Any]:
    """Why each policy that selects the resource was not applied (unchanged ones are left out)."""
    out: dict[str, Any] = {}
    for outcome in outcomes:
        status, cause = outcome.status, outcome.cause
        if status == "applied" or status == "unchanged" or outcome.policy in applied:
            continue
        if not selects_resource(cause, outcome.cause_name):
            continue
        why = summary(status, cause, outcome.cause_name, outcome.reason, outcome.failure_policy, outcome.path)
        label = _label(outcome.policy, outcome.binding)
        out[label] = f"{out[label]}; {why}" if label in out else why
    return out


def _bounded(entries: dict[str, Any], limit: int = MAX_VALUE_BYTES) -> str:
    """Compact JSON of ``entries``; when over ``limit`` bytes, the first entries that fit and
    ``"…": "+N more"``."""
    text = orjson.dumps(entries)
    if len(text) <= limit:
        return text.decode()
    kept: dict[str, Any] = {}
    size = 2 + len(orjson.dumps({MORE: f"+{len(entries)} more"}))  # braces, and the marker at its largest
    for key, value in entries.items():
        item = len(orjson.dumps({key: value}))  # '{' + "key":value + '}': the comma fits in a brace
        if size + item > limit:
            break
        kept[key] = value
        size += item
    kept[MORE] = f"+{len(entries) - len(kept)} more"
    return orjson.dumps(kept).decode()
