"""Sources to compiled policies in one call: the path every surface takes.

``compile_documents`` expands preset documents (PodMutation, spot values, …) into policies,
classifies documents, parses the policy kinds and compiles them; documents that are neither come
back in ``PolicySet.other`` (resources, CRDs).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from celmut.compile.compiled import CompiledPolicySet
from celmut.compile.policies import compile_policy_set
from celmut.compile.presets import registry as presets
from celmut.policy.loader import PolicySet, load_policy_documents
from celmut.sources.documents import Document, DocumentError, load_documents


@dataclass
class Compilation:
    """The result of compiling some sources: policies ready to run, and what went wrong."""

    policies: PolicySet
    compiled: CompiledPolicySet
    other: list[Document] = field(default_factory=list)

    @property
    def errors(self) -> list[Exception]:
        return self.compiled.errors


def compile_documents(documents: Iterable[Document], backend: str | None = None) -> Compilation:
    """Expand presets into policies, then parse and compile every policy."""
    expanded, preset_errors = presets.expand(documents)
    policies = load_policy_documents(expanded)
    policies.errors[:0] = preset_errors
    compiled = compile_policy_set(policies, backend)
    return Compilation(policies, compiled, policies.other)


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


def compile_paths(*paths: str, backend: str | None = None) -> Compilation:
    """Load every file under ``paths`` and compile it; unreadable files are reported as errors."""
    documents, errors = read_paths(*paths)
    compilation = compile_documents(documents, backend)
    compilation.compiled.errors[:0] = errors
    return compilation
