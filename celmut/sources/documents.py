"""Read Kubernetes-style YAML/JSON documents from files, directories and standard input (``-``).

YAML is read the way Kubernetes reads it for objects: timestamps stay strings (PyYAML would turn
``2024-01-01T00:00:00Z`` into a datetime, which no Kubernetes object contains), multi-document files
are split on ``---``, empty documents are skipped, and a ``kind: List`` is flattened into its items.
Errors name the file and, for YAML, the line; :func:`kubernetes_objects` refuses a document that is
not an object with ``apiVersion`` and ``kind`` (as kubectl does) instead of passing it on.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from celmut.errors import CelmutError
from celmut.sources.yaml_loader import KubernetesLoader

YAML_SUFFIXES = (".yaml", ".yml")
DOCUMENT_SUFFIXES = (*YAML_SUFFIXES, ".json")
MAX_FILE_BYTES = 16 * 1024 * 1024
STDIN = "-"  # a path that means standard input, as for kubectl -f -
STDIN_NAME = "<stdin>"  # how documents read from standard input are named in errors


class DocumentError(CelmutError):
    """A file could not be read or parsed; the message names the file (and line for YAML)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


@dataclass(frozen=True)
class Document:
    """One parsed document and where it came from (``index`` counts documents within the file)."""

    path: str
    index: int
    content: Any

    @property
    def source(self) -> str:
        """Where the document is, as errors name it: the file, plus ``#index`` after the first document."""
        return self.path if self.index == 0 else f"{self.path}#{self.index}"


def parse_text(text: str, path: str = "<input>") -> list[Any]:
    """All non-empty documents in YAML or JSON text."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")) and (path.endswith(".json") or path == STDIN_NAME):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as ex:
            if path.endswith(".json"):
                raise DocumentError(path, f"invalid JSON at line {ex.lineno} column {ex.colno}: {ex.msg}") from None
        else:  # standard input that is not JSON is read as YAML (a flow mapping starts with "{" too)
            return _flatten(data if isinstance(data, list) else [data])
    try:
        docs = [d for d in yaml.load_all(text, Loader=KubernetesLoader) if d is not None]
    except yaml.YAMLError as ex:
        mark = getattr(ex, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(ex, "problem", None) or str(ex).splitlines()[0]
        raise DocumentError(path, f"invalid YAML{where}: {problem}") from None
    return _flatten(docs)


def _flatten(docs: list[Any]) -> list[Any]:
    out: list[Any] = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            out.extend(item for item in doc["items"] if item is not None)
        else:
            out.append(doc)
    return out


def read_stdin() -> list[Any]:
    """The documents on standard input (read once: a second read finds nothing)."""
    try:
        text = sys.stdin.read(MAX_FILE_BYTES + 1)
    except (OSError, UnicodeDecodeError) as ex:
        raise DocumentError(STDIN_NAME, f"cannot read: {ex}") from None
    if len(text) > MAX_FILE_BYTES:
        raise DocumentError(STDIN_NAME, f"over the {MAX_FILE_BYTES}-byte limit")
    return parse_text(text, STDIN_NAME)


def read_file(path: str | Path) -> list[Any]:
    """The documents of one file, or of standard input for ``-``."""
    if str(path) == STDIN:
        return read_stdin()
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise DocumentError(str(path), f"file is {size} bytes, over the {MAX_FILE_BYTES}-byte limit")
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DocumentError(str(path), "no such file") from None
    except IsADirectoryError:
        raise DocumentError(str(path), "is a directory") from None
    except (OSError, UnicodeDecodeError) as ex:
        raise DocumentError(str(path), f"cannot read: {ex}") from None
    return parse_text(text, str(path))


def iter_files(path: str | Path) -> Iterator[Path]:
    """The file itself, or every YAML/JSON file under a directory in sorted (stable) order.

    Hidden files and directories are skipped: a mounted ConfigMap or Secret keeps timestamped copies
    of its files in ``..2026_11_22_…/`` next to the links, which would load every document twice.
    """
    p = Path(path)
    if str(path) == STDIN:
        yield p
    elif p.is_dir():
        try:
            found = [f for f in p.rglob("*") if f.is_file() and f.suffix in DOCUMENT_SUFFIXES]
        except OSError as ex:
            raise DocumentError(str(path), f"cannot read the directory: {ex.strerror or ex}") from None
        yield from sorted(f for f in found if not any(part.startswith(".") for part in f.relative_to(p).parts))
    elif p.exists():
        yield p
    else:
        raise DocumentError(str(path), "no such file or directory")


def load_documents(*paths: str | Path) -> list[Document]:
    """Every document under the given files and directories, in a stable order."""
    out: list[Document] = []
    for path in paths:
        for file in iter_files(path):
            name = STDIN_NAME if str(file) == STDIN else str(file)
            for index, content in enumerate(read_file(file)):
                out.append(Document(name, index, content))
    return out


def load_single(path: str | Path) -> Any:
    """The only document of a file; an error if it holds none or several."""
    docs = read_file(path)
    if len(docs) != 1:
        raise DocumentError(str(path), f"expected exactly one document, found {len(docs)}")
    return docs[0]


def kubernetes_objects(documents: Iterable[Document]) -> list[dict[str, Any]]:
    """The documents as Kubernetes objects; a :class:`DocumentError` for the first one that is not a
    mapping with ``apiVersion`` and ``kind`` (kubectl refuses those too: "apiVersion not set, kind not
    set"), rather than passing it on to be echoed back or skipped."""
    objects: list[dict[str, Any]] = []
    for document in documents:
        content = document.content
        if not isinstance(content, dict):
            raise DocumentError(document.source, f"not a Kubernetes object: {describe_type(content)}")
        missing = [key for key in ("apiVersion", "kind") if not isinstance(content.get(key), str) or not content[key]]
        if missing:
            raise DocumentError(document.source, f"not a Kubernetes object: {' and '.join(missing)} not set")
        objects.append(content)
    return objects


def describe_type(value: Any) -> str:
    """What a YAML value is, for messages: ``a string``, ``a list``, ``a number`` …"""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a map"
    return "null" if value is None else type(value).__name__
