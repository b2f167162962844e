"""Documents given as policies that celmut does not serve: each is named, never skipped silently.

``kyverno apply`` refuses a known Kubernetes kind that is not a policy ("policy type not supported",
``cmd/cli/kubectl-kyverno/policy/load.go`` ``kubectlValidateLoader``); celmut does the same for every
document among the policies that is neither a policy, a preset nor a CustomResourceDefinition (CRDs
are welcome: they give custom resources their schema). The message says which document, what it is
and why celmut does not serve it — with a hint for a typo'd kind or group and for a classic Kyverno
``ClusterPolicy``, whose ``mutate`` rules become a ``MutatingPolicy``; :func:`served_summary` says
what celmut serves instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from celmut.errors import CelmutError
from celmut.policy import admission_policy, exception, mutating_policy
from celmut.sources.documents import Document, describe_type


@dataclass(frozen=True)
class ServedKind:
    """A kind celmut accepts among its policies: its API group and what it is."""

    group: str
    kind: str


POLICY_KINDS: tuple[ServedKind, ...] = (
    *(ServedKind(mutating_policy.GROUP, kind) for kind in (*mutating_policy.KINDS, *exception.KINDS)),
    *(ServedKind(admission_policy.GROUP, kind) for kind in admission_policy.KINDS),
)
CRD_GROUP, CRD_KIND = "apiextensions.k8s.io", "CustomResourceDefinition"
KYVERNO_CLASSIC_GROUP = "kyverno.io"
KYVERNO_CLI_GROUP = "cli.kyverno.io"
# Policy kinds of Kyverno and Kubernetes that do something other than mutate: another engine's job.
OTHER_ENGINES = {
    "policies.kyverno.io": ("ValidatingPolicy", "NamespacedValidatingPolicy", "ImageValidatingPolicy",
                            "NamespacedImageValidatingPolicy", "GeneratingPolicy", "NamespacedGeneratingPolicy",
                            "DeletingPolicy", "NamespacedDeletingPolicy"),
    "admissionregistration.k8s.io": ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                                     "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"),
}  # fmt: skip
CLASSIC_HINT = (
    "classic Kyverno policies (kyverno.io ClusterPolicy/Policy) are not supported: their mutate rules "
    "(patchStrategicMerge, patchesJson6902, foreach) have no CEL equivalent here. Write the rule as a "
    "MutatingPolicy (apiVersion: policies.kyverno.io/v1) with matchConstraints for the rule's match and a "
    "JSONPatch or ApplyConfiguration mutation for its patch"
)


class UnsupportedDocument(CelmutError):
    """A document among the policies that celmut does not serve; names the file and document."""

    def __init__(self, document: Document, what: str, reason: str) -> None:
        self.path = document.path
        self.source = document.source
        self.index = document.index
        self.what = what
        self.reason = reason
        super().__init__(f"{self.source}: {what}: {reason}")


def _group(api_version: str) -> str:
    group, _, _ = api_version.rpartition("/")
    return group


def _identify(doc: dict[str, Any]) -> str:
    name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
    kind = f"{doc.get('kind')} ({doc.get('apiVersion')})" if doc.get("apiVersion") else str(doc.get("kind"))
    return f"{kind} {name}" if name else kind


def served_summary(presets: Sequence[ServedKind]) -> str:
    """What celmut serves instead, to show once after the errors."""
    kinds = [*POLICY_KINDS, *presets]
    groups: dict[str, list[str]] = {}
    for served in kinds:
        groups.setdefault(served.group, []).append(served.kind)
    listed = "; ".join(f"{', '.join(names)} ({group})" for group, names in groups.items())
    return f"celmut serves {listed}; spot webhook values (staticConfig); and CustomResourceDefinitions as schemas"


def check(document: Document, presets: Sequence[ServedKind] = ()) -> UnsupportedDocument | None:
    """Why ``document``, found among the policies and claimed by no policy kind or preset, is not
    served; None for a document that is welcome there (a CRD)."""
    doc = document.content
    if not isinstance(doc, dict):
        return UnsupportedDocument(document, describe_type(doc), "not a Kubernetes object")
    kind, api_version = doc.get("kind"), str(doc.get("apiVersion") or "")
    if not isinstance(kind, str) or not kind:
        return UnsupportedDocument(document, "a document", "kind is not set")
    group = _group(api_version)
    what = _identify(doc)
    if kind == CRD_KIND and group == CRD_GROUP:
        return None
    if group == KYVERNO_CLASSIC_GROUP and kind in ("ClusterPolicy", "Policy"):
        return UnsupportedDocument(document, what, CLASSIC_HINT)
    if group == KYVERNO_CLI_GROUP:
        return UnsupportedDocument(document, what, "a Kyverno CLI file, not a policy: run Test files with celmut test")
    if kind in OTHER_ENGINES.get(group, ()):
        return UnsupportedDocument(document, what, "not a mutation: celmut serves mutating policies only")
    known = [*POLICY_KINDS, *presets]
    same_kind = [s for s in known if s.kind == kind]
    if same_kind:  # the right kind in the wrong group (kyverno.io/v1 MutatingPolicy)
        wanted = " or ".join(f"{s.group}/…" for s in same_kind)
        return UnsupportedDocument(document, what, f"a {kind} has apiVersion {wanted}, not {api_version or 'none'}")
    close = difflib.get_close_matches(kind.lower(), [s.kind.lower() for s in known], n=1, cutoff=0.8)
    if close:
        suggestion = next(s for s in known if s.kind.lower() == close[0])
        hint = f"did you mean {suggestion.kind} ({suggestion.group})?"
        return UnsupportedDocument(document, what, f"unknown kind; {hint}")
    return UnsupportedDocument(document, what, "not a policy")
