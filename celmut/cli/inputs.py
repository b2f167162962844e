"""What the offline commands read, checked the same way everywhere.

Paths may be files, directories or ``-`` (standard input, once per command: for the policies or the
resources, not both — as ``kyverno apply`` rules, ``cmd/cli/kubectl-kyverno/commands/apply/command.go``
``checkArguments``). Resources must be Kubernetes objects (``apiVersion`` and ``kind``), and every
document among the policies must be one celmut serves (:mod:`celmut.policy.unsupported`):
``--skip-unsupported`` turns those errors into one warning listing what was skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from celmut.cli import console
from celmut.errors import ConfigurationError
from celmut.service import flags
from celmut.sources.documents import STDIN, Document, kubernetes_objects, load_documents

if TYPE_CHECKING:  # the compiler loads CEL: only the commands that compile import it, inside run
    from celmut.compile.pipeline import Compilation

add_skip_unsupported = flags.add_skip_unsupported


def check_stdin(paths: Mapping[str, Sequence[str]]) -> None:
    """Standard input can be read once: refuse ``-`` given twice (``paths``: what → its paths)."""
    readers = [what for what, values in paths.items() for value in values if value == STDIN]
    if len(readers) > 1:
        raise ConfigurationError(f"- (standard input) can be read once, but was given for {' and '.join(readers)}")


def documents(paths: Sequence[str]) -> list[Document]:
    return load_documents(*paths)


def objects(paths: Sequence[str], flag: str) -> list[dict[str, Any]]:
    """The Kubernetes objects in ``paths`` (given with ``flag``); a DocumentError names the first document
    that is not one, a ConfigurationError a path holding none (:func:`object_documents`)."""
    return kubernetes_objects(object_documents(paths, flag))


def object_documents(paths: Sequence[str], flag: str) -> list[Document]:
    """The documents in ``paths``, each checked to be a Kubernetes object (see :func:`objects`). A path
    that holds no document at all (an empty file, only ``---`` and comments, a folder without YAML) is
    refused naming it, as ``kubectl apply`` refuses one ("no objects passed to apply"): given on
    purpose, it is a mistake that would otherwise pass in silence with nothing done."""
    found: list[Document] = []
    for path in paths:
        documents = load_documents(path)
        if not documents:
            shown = "standard input" if path == STDIN else path
            raise ConfigurationError(f"{flag} {shown}: no resource in it (empty, or only '---' and comments)")
        found += documents
    kubernetes_objects(found)
    return found


def report(compilation: Compilation, *, skip_unsupported: bool = False) -> bool:
    """Print the compilation's errors (with a caret under each CEL error) and warnings; False when
    there were errors."""
    from celmut.compile.presets.registry import SERVED_KINDS
    from celmut.policy.errors import PolicyError
    from celmut.policy.unsupported import UnsupportedDocument, served_summary

    for error in compilation.errors:
        console.error(error.render(snippets=True) if isinstance(error, PolicyError) else str(error))
    if not skip_unsupported and any(isinstance(e, UnsupportedDocument) for e in compilation.errors):
        console.hint(f"{served_summary(SERVED_KINDS)}; {flags.SKIP_HINT}")
    if skip_unsupported and compilation.unsupported:
        skipped = ", ".join(f"{u.source} ({u.what})" for u in compilation.unsupported)
        console.warning(f"skipped {len(compilation.unsupported)} documents celmut does not serve: {skipped}")
    for warning in compilation.compiled.warnings:
        console.warning(str(warning))
    return not compilation.errors
