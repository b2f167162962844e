"""Turn documents into validated policy models, keeping good policies when others are bad.

Every document is classified by ``apiVersion``/``kind``: Kyverno MutatingPolicy,
NamespacedMutatingPolicy and PolicyException, Kubernetes MutatingAdmissionPolicy and its binding.
Anything else (resources, preset documents such as PodMutation) is passed through in ``other`` for
later stages. A document with errors is rejected whole with a :class:`PolicyError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from celmut.policy import admission_policy, exception, mutating_policy
from celmut.policy.errors import FieldError, PolicyError
from celmut.sources.documents import Document, DocumentError, load_documents

Parser = Callable[[dict[str, Any], str, list[FieldError]], Any]


def _group_version(doc: dict[str, Any]) -> tuple[str, str]:
    api_version = str(doc.get("apiVersion", ""))
    group, _, version = api_version.rpartition("/")
    return group, version


def classify(doc: Any) -> str | None:
    """The policy kind celmut handles for this document, or None for any other document."""
    if not isinstance(doc, dict):
        return None
    group, _ = _group_version(doc)
    kind = doc.get("kind")
    if group == mutating_policy.GROUP and kind in (*mutating_policy.KINDS, *exception.KINDS):
        return str(kind)
    if group == admission_policy.GROUP and kind in admission_policy.KINDS:
        return str(kind)
    return None


_PARSERS: dict[str, tuple[Parser, tuple[str, ...]]] = {
    "MutatingPolicy": (mutating_policy.parse_mutating_policy, mutating_policy.VERSIONS),
    "NamespacedMutatingPolicy": (mutating_policy.parse_mutating_policy, mutating_policy.VERSIONS),
    "PolicyException": (exception.parse_policy_exception, ("v1alpha1", "v1beta1", "v1", "v2", "v2beta1")),
    "MutatingAdmissionPolicy": (admission_policy.parse_admission_policy, admission_policy.VERSIONS),
    "MutatingAdmissionPolicyBinding": (admission_policy.parse_binding, admission_policy.VERSIONS),
}


@dataclass
class PolicySet:
    """The validated policies of a load, plus what was rejected and what was not a policy."""

    mutating_policies: list[mutating_policy.MutatingPolicy] = field(default_factory=list)
    exceptions: list[exception.PolicyException] = field(default_factory=list)
    admission_policies: list[admission_policy.MutatingAdmissionPolicy] = field(default_factory=list)
    bindings: list[admission_policy.MutatingAdmissionPolicyBinding] = field(default_factory=list)
    other: list[Document] = field(default_factory=list)
    errors: list[Exception] = field(default_factory=list)

    def extend(self, other: PolicySet) -> None:
        self.mutating_policies += other.mutating_policies
        self.exceptions += other.exceptions
        self.admission_policies += other.admission_policies
        self.bindings += other.bindings
        self.other += other.other
        self.errors += other.errors


def parse_document(document: Document, policies: PolicySet) -> None:
    """Parse one document into ``policies`` (or its errors)."""
    doc = document.content
    kind = classify(doc)
    source = document.path if document.index == 0 else f"{document.path}#{document.index}"
    if kind is None:
        policies.other.append(document)
        return
    parser, versions = _PARSERS[kind]
    name = str((doc.get("metadata") or {}).get("name", "")) if isinstance(doc.get("metadata"), dict) else ""
    _, version = _group_version(doc)
    errors: list[FieldError] = []
    if version not in versions:
        errors.append(FieldError("apiVersion", f"unsupported version {version!r}; supported: {', '.join(versions)}"))
    else:
        parsed = parser(doc, source, errors)
    if errors:
        policies.errors.append(PolicyError(source, kind, name, errors))
        return
    targets: dict[str, list[Any]] = {
        "MutatingPolicy": policies.mutating_policies,
        "NamespacedMutatingPolicy": policies.mutating_policies,
        "PolicyException": policies.exceptions,
        "MutatingAdmissionPolicy": policies.admission_policies,
        "MutatingAdmissionPolicyBinding": policies.bindings,
    }
    targets[kind].append(parsed)


def load_policy_documents(documents: Iterable[Document]) -> PolicySet:
    policies = PolicySet()
    for document in documents:
        parse_document(document, policies)
    return policies


def load_policies(*paths: str) -> PolicySet:
    """Load every policy under the given files or directories; unreadable files become errors."""
    policies = PolicySet()
    for path in paths:
        try:
            documents = load_documents(path)
        except DocumentError as ex:
            policies.errors.append(ex)
            continue
        policies.extend(load_policy_documents(documents))
    return policies
