"""The policies a server is running, swapped atomically on reload.

Each reload compiles the documents of every source together (bindings, exceptions and CRDs refer
across sources) into a new :class:`AdmissionEngine`; requests keep using the engine they started with.
A failure only holds back the source it comes from:

* a source that **skips invalid documents** (the cluster: one object, one policy) never blocks — a
  policy that fails to compile is left out and reported, the others load;
* a source that **does not** (files: a half-edited file must not half-apply) keeps its last good
  documents while any of its documents fails, and the other sources keep updating — a cluster policy
  deleted while a policy file is broken leaves service at once. Before a source ever loaded, its
  documents that compile are used (the webhook refuses to start on such errors anyway).

Sources are told the errors of what is actually in service (:meth:`PolicySource.report`), after the
engine is swapped, so a status written from them describes the running set.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from celmut.compile.pipeline import Compilation, compile_documents
from celmut.runtime import AdmissionEngine
from celmut.service.assembly import EngineSettings, assemble_engine
from celmut.sources.documents import Document

log = logging.getLogger("celmut.server")


class PolicySource(Protocol):
    #: True when a broken document is skipped (the cluster); False when it holds the source back (files).
    skips_invalid: bool

    def fingerprint(self) -> object:
        """Cheap; changes whenever :meth:`documents` would return something different."""
        ...

    def documents(self) -> tuple[list[Document], list[Exception]]: ...

    def report(self, errors: list[Exception]) -> None:
        """Told the errors of the documents in service after each reload (to report them where they
        came from)."""
        ...


def _error_origin(error: Exception) -> str:
    """The document path an error names (a file or ``cluster:Kind/ns/name``), '' when it names none."""
    origin = str(getattr(error, "source", "") or getattr(error, "path", "") or "")
    return origin.split("#", 1)[0]


def _describe(source: PolicySource) -> str:
    """How a log names a source: its ``description`` (``files: /etc/celmut``), else its type."""
    return str(getattr(source, "description", "") or type(source).__name__)


@dataclass
class ReloadOutcome:
    accepted: bool  # False when a source was held back at its last good documents (or had none)
    policies: int
    errors: list[str] = field(default_factory=list)
    held_back: list[int] = field(default_factory=list)  # indexes of the sources kept at their last good set


@dataclass
class _Read:
    source: PolicySource
    documents: list[Document]
    errors: list[Exception]  # the source's own (unreadable files, ...)

    @property
    def paths(self) -> set[str]:
        return {d.path.split("#", 1)[0] for d in self.documents}


class PolicyStore:
    """Holds the current engine; :meth:`reload` builds and swaps a new one."""

    def __init__(
        self,
        sources: list[PolicySource],
        settings: EngineSettings,
        *,
        all_or_nothing: bool = True,
        on_reload: Callable[[ReloadOutcome], None] | None = None,
        skip_unsupported: bool = False,
    ) -> None:
        """``all_or_nothing=False``: never hold a source back; whatever compiles is served.
        ``skip_unsupported``: documents that are no policy celmut serves (a Deployment among the policy
        files) are skipped with one warning per reload, as ``--skip-unsupported`` does for ``apply``."""
        self.sources = sources
        self.settings = settings
        self.all_or_nothing = all_or_nothing
        self.skip_unsupported = skip_unsupported
        self.on_reload = on_reload
        self._engine: AdmissionEngine | None = None
        self._fingerprint: object = None
        self._lock = threading.Lock()
        self._last_good: dict[int, list[Document]] = {}
        self.last_errors: list[str] = []
        self.last_problems: list[Exception] = []  # the same, as the exceptions (which document, what kind of error)
        self.loaded_at = 0.0

    @property
    def engine(self) -> AdmissionEngine | None:
        return self._engine

    @property
    def ready(self) -> bool:
        return self._engine is not None

    def _blocked(self, reads: list[_Read], errors: list[Exception]) -> set[int]:
        """The sources whose errors hold them back (sources that skip invalid documents never are)."""
        blocked: set[int] = set()
        for index, read in enumerate(reads):
            if read.source.skips_invalid:
                continue
            paths = read.paths
            if read.errors or any(_error_origin(e) in paths for e in errors):
                blocked.add(index)
        claimed = set().union(*(read.paths for read in reads)) if reads else set()
        if any(_error_origin(e) not in claimed for e in errors):  # an error naming no document: not skippable
            blocked |= {i for i, read in enumerate(reads) if not read.source.skips_invalid}
        return blocked

    def reload(self, *, force: bool = False) -> ReloadOutcome | None:
        """Recompile when the sources changed (or ``force``); None when nothing changed."""
        with self._lock:
            fingerprint = tuple(source.fingerprint() for source in self.sources)
            if not force and fingerprint == self._fingerprint and self._engine is not None:
                return None
            reads = [_Read(source, *source.documents()) for source in self.sources]
            compilation = self._compile([d for read in reads for d in read.documents])
            if compilation.unsupported and self.skip_unsupported:
                skipped = ", ".join(f"{u.source} ({u.what})" for u in compilation.unsupported)
                log.warning(
                    "skipped the documents celmut does not serve (--skip-unsupported)",
                    extra={"count": len(compilation.unsupported), "documents": skipped},
                )
            found = [e for read in reads for e in read.errors] + list(compilation.errors)
            blocked = self._blocked(reads, list(compilation.errors)) if self.all_or_nothing else set()
            held_back = sorted(i for i in blocked if i in self._last_good)
            if held_back:
                documents = [
                    d
                    for i, read in enumerate(reads)
                    for d in (self._last_good[i] if i in held_back else read.documents)
                ]
                compilation = self._compile(documents)
            for index, read in enumerate(reads):
                if index not in blocked:
                    self._last_good[index] = read.documents
            self._fingerprint = fingerprint
            self._engine = assemble_engine(compilation, self.settings)
            self.loaded_at = time.time()
            messages = [str(e) for e in found]
            outcome = ReloadOutcome(not blocked, len(self._engine.policies), messages, held_back)
            if held_back:
                log.error(
                    "policy sources kept at their last good documents; the others were reloaded",
                    extra={"errors": messages},
                )
            elif found:
                log.error("some policies were rejected", extra={"errors": messages})
            log.info(
                "policies loaded",
                extra={
                    "policies": len(self._engine.policies),
                    "documents": {_describe(read.source): len(read.documents) for read in reads},
                    "rejected": len(found),
                },
            )
            self.last_errors = messages
            self.last_problems = found
            in_service = self._in_service_errors(reads, compilation, held_back)
        for index, read in enumerate(reads):
            read.source.report(in_service if index not in held_back else [])
        if self.on_reload is not None:
            self.on_reload(outcome)
        return outcome

    def _compile(self, documents: list[Document]) -> Compilation:
        return compile_documents(
            documents,
            preset_failure_policy=self.settings.preset_failure_policy,
            skip_unsupported=self.skip_unsupported,
        )

    @staticmethod
    def _in_service_errors(reads: list[_Read], compilation: Compilation, held_back: list[int]) -> list[Exception]:
        """The errors of the documents now in service (a held-back source's new errors are not)."""
        errors = list(compilation.errors)
        return errors + [e for i, read in enumerate(reads) if i not in held_back for e in read.errors]
