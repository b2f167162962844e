"""The policies a server is running, swapped atomically on reload.

Each reload compiles everything from the sources into a new :class:`AdmissionEngine`; requests keep using the
engine they started with. From files, a reload with any broken document is rejected whole — the
error is reported and the last good set stays in service. From the cluster, a policy that fails to
compile is skipped and reported, and the others load.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from celmut.compile.pipeline import compile_documents
from celmut.runtime import AdmissionEngine
from celmut.service.assembly import EngineSettings, assemble_engine
from celmut.sources.documents import Document

log = logging.getLogger("celmut.server")


class PolicySource(Protocol):
    #: True when a broken document is skipped (the cluster); False when it rejects the reload (files).
    skips_invalid: bool

    def fingerprint(self) -> object:
        """Cheap; changes whenever :meth:`documents` would return something different."""
        ...

    def documents(self) -> tuple[list[Document], list[Exception]]: ...

    def report(self, errors: list[Exception]) -> None:
        """Told every error of the reload that just happened (to report them where they came from)."""
        ...


def _error_origin(error: Exception) -> str:
    """The document path an error names (a file or ``cluster:Kind/ns/name``), '' when it names none."""
    origin = str(getattr(error, "source", "") or getattr(error, "path", "") or "")
    return origin.split("#", 1)[0]


@dataclass
class ReloadOutcome:
    accepted: bool
    policies: int
    errors: list[str] = field(default_factory=list)


class PolicyStore:
    """Holds the current engine; :meth:`reload` builds and swaps a new one."""

    def __init__(
        self,
        sources: list[PolicySource],
        settings: EngineSettings,
        *,
        all_or_nothing: bool = True,
        on_reload: Callable[[ReloadOutcome], None] | None = None,
    ) -> None:
        self.sources = sources
        self.settings = settings
        self.all_or_nothing = all_or_nothing
        self.on_reload = on_reload
        self._engine: AdmissionEngine | None = None
        self._fingerprint: object = None
        self._lock = threading.Lock()
        self.last_errors: list[str] = []
        self.loaded_at = 0.0

    @property
    def engine(self) -> AdmissionEngine | None:
        return self._engine

    @property
    def ready(self) -> bool:
        return self._engine is not None

    def reload(self, *, force: bool = False) -> ReloadOutcome | None:
        """Recompile when the sources changed (or ``force``); None when nothing changed."""
        with self._lock:
            fingerprint = tuple(source.fingerprint() for source in self.sources)
            if not force and fingerprint == self._fingerprint and self._engine is not None:
                return None
            documents: list[Document] = []
            errors: list[Exception] = []
            skippable: set[str] = set()
            for source in self.sources:
                docs, source_errors = source.documents()
                documents += docs
                errors += source_errors
                if source.skips_invalid:
                    skippable.update(d.path for d in docs)
            compilation = compile_documents(documents)
            errors += compilation.errors
            messages = [str(e) for e in errors]
            blocking = [e for e in errors if _error_origin(e) not in skippable]
            self._fingerprint = fingerprint
            for source in self.sources:
                source.report(errors)
            if blocking and self.all_or_nothing and self._engine is not None:
                outcome = ReloadOutcome(False, len(self._engine.policies), messages)
                log.error("policy reload rejected; keeping the last good set", extra={"errors": messages})
            else:
                self._engine = assemble_engine(compilation, self.settings)
                self.loaded_at = time.time()
                outcome = ReloadOutcome(not blocking or not self.all_or_nothing, len(self._engine.policies), messages)
                if errors:
                    log.error("some policies were rejected", extra={"errors": messages})
            self.last_errors = messages
        if self.on_reload is not None:
            self.on_reload(outcome)
        return outcome
