"""Policies from files and directories, with change detection for hot reload.

A :class:`FileSource` reads every YAML/JSON document under its paths. :meth:`fingerprint` is cheap
(paths, sizes and modification times) so a server can poll it and reload only when something
changed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from celmut.sources.documents import Document, DocumentError, iter_files, load_documents


@dataclass(frozen=True)
class FileSource:
    paths: Sequence[str]
    skips_invalid = False  # a broken file rejects the whole reload: the last good set stays

    @property
    def description(self) -> str:
        """How logs name this source."""
        return "files: " + ", ".join(self.paths)

    def report(self, errors: list[Exception]) -> None:
        """Files have nowhere to report to; the server logs the errors."""

    def _files(self) -> list[Path]:
        files: list[Path] = []
        for path in self.paths:
            if Path(path).is_dir():
                files += iter_files(path)
            else:
                files.append(Path(path))
        return files

    def fingerprint(self) -> tuple[tuple[str, int, int], ...]:
        """What changes when a file is added, removed or written."""
        out = []
        for file in self._files():
            try:
                stat = file.stat()
                out.append((str(file), stat.st_mtime_ns, stat.st_size))
            except OSError:
                out.append((str(file), -1, -1))
        return tuple(out)

    def documents(self) -> tuple[list[Document], list[Exception]]:
        """Every document, plus the files that could not be read or parsed."""
        documents: list[Document] = []
        errors: list[Exception] = []
        for path in self.paths:
            if not os.path.exists(path):
                errors.append(DocumentError(path, "no such file or directory"))
                continue
            try:
                documents += load_documents(path)
            except DocumentError as ex:
                errors.append(ex)
        return documents, errors
