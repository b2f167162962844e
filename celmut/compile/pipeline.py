"""Sources to compiled policies in one call: the path every surface takes.

``compile_documents`` expands preset documents (PodMutation, spot values, …) into policies,
classifies documents, parses the policy kinds and compiles them. Documents that are neither come
back in ``Compilation.other``: CRDs, which give custom resources their schema, and documents celmut
does not serve (a ConfigMap, a typo'd kind, a classic ClusterPolicy), which are also errors
(:mod:`celmut.policy.unsupported`) unless the caller asks to skip them (``--skip-unsupported``);
skipped or not, they are listed in ``Compilation.unsupported``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from celmut.compile.compiled import CompiledPolicySet
from celmut.compile.policies import compile_policy_set
from celmut.compile.presets import registry as presets
from celmut.policy import unsupported
from celmut.policy.loader import PolicySet, load_policy_documents
from celmut.sources.documents import Document, DocumentError, load_documents


@dataclass
class Compilation:
    """The result of compiling some sources: policies ready to run, and what went wrong."""

    policies: PolicySet
    compiled: CompiledPolicySet
    other: list[Document] = field(default_factory=list)
    unsupported: list[unsupported.UnsupportedDocument] = field(default_factory=list)

    @property
    def errors(self) -> list[Exception]:
        return self.compiled.errors


def compile_documents(
    documents: Iterable[Document],
    backend: str | None = None,
    *,
    skip_unsupported: bool = False,
    preset_failure_policy: str | None = None,
) -> Compilation:
    """Expand presets into policies, then parse and compile every policy; a document that is neither
    a policy, a preset nor a CRD is an error, or with ``skip_unsupported`` only listed.
    ``preset_failure_policy``: the failurePolicy of the presets' policies (default their own, Ignore)."""
    expanded, preset_errors = presets.expand(documents, failure_policy=preset_failure_policy)
    policies = load_policy_documents(expanded)
    policies.errors[:0] = preset_errors
    compiled = compile_policy_set(policies, backend)
    found = [e for e in (unsupported.check(d, presets.SERVED_KINDS) for d in policies.other) if e is not None]
    if not skip_unsupported:
        compiled.errors[:0] = found
    return Compilation(policies, compiled, policies.other, found)


def read_paths(*paths: str) -> tuple[list[Document], list[Exception]]:
    """Every document under ``paths``; unreadable files are returned as errors, not raised."""
    documents: list[Document] = []
    errors: list[Exception] = []
    for path in paths:
        try:
            documents += load_documents(path)
        except DocumentError as ex:
            errors.append(ex)
    return documents, errors


def compile_paths(*paths: str, backend: str | None = None, skip_unsupported: bool = False) -> Compilation:
    """Load every file under ``paths`` and compile it; unreadable files are reported as errors."""
    documents, errors = read_paths(*paths)
    compilation = compile_documents(documents, backend, skip_unsupported=skip_unsupported)
    compilation.compiled.errors[:0] = errors
    return compilation
