"""The page's panes as documents, each bounded, and every problem located in the pane it came from.

A pane is YAML (or JSON) text the person typed or pasted: policies, resources, cluster objects, a
Kyverno Context, a UserInfo, old objects. The server that reads them is a webhook's sibling and has
its bounds (docs/security.md, "celmut playground"): the whole request is at most the API server's 3 MiB
(:data:`celmut.limits.MAX_REQUEST_BYTES`), and no document may *unfold* past it either — YAML aliases
let 200 bytes stand for gigabytes once the object is walked, and an alias to an enclosing node makes a
cycle no JSON can hold. Nothing in a pane may name a file on the server's disk (a ClusterResource's
``spec.crds``, a Context's ``valueFile``): text pasted into a page is not a directory.

A problem is a :class:`PaneProblem`: the pane, the document, the line and column in the pane's text
(1-based), the field path and the message, so the page can put the caret there, as the CLI puts a
caret under an expression.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from celmut.errors import CelmutError
from celmut.limits import MAX_REQUEST_BYTES
from celmut.sources.documents import Document, DocumentError, describe_type, parse_text

PANES = ("policies", "resources", "cluster", "context", "userInfo", "oldObjects")
MAX_DOCUMENT_NODES = 1_000_000  # maps, lists and scalars one document may unfold to
_AT_LINE = re.compile(r"at line (\d+) column (\d+)")


@dataclass(frozen=True)
class PaneProblem:
    """One problem, located: ``line``/``column`` are 1-based positions in the pane's text (0: unknown)."""

    pane: str
    message: str
    document: int | None = None
    line: int = 0
    column: int = 0
    field: str = ""
    snippet: str = ""  # the expression's line with a caret under the column, as the CLI prints it

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pane": self.pane, "message": self.message}
        for key in ("document", "line", "column", "field", "snippet"):
            value = getattr(self, key)
            if value not in (None, 0, ""):
                out[key] = value
        return out


class PaneError(CelmutError):
    """Input the page must fix before anything runs; carries every problem found."""

    def __init__(self, problems: list[PaneProblem]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{p.pane}: {p.message}" for p in problems))


@dataclass
class Pane:
    """One pane's text and its documents (``starts``: the 0-based line each document's node starts on)."""

    name: str
    text: str
    documents: list[Document] = field(default_factory=list)
    starts: list[yaml.Node] = field(default_factory=list)

    def node(self, index: int) -> yaml.Node | None:
        return self.starts[index] if 0 <= index < len(self.starts) else None


def read_pane(name: str, text: str) -> Pane:
    """Parse one pane; raises :class:`PaneError` naming the line of invalid YAML, or a document that
    unfolds past the request limit or into a cycle."""
    pane = Pane(name, text)
    if not text.strip():
        return pane
    try:
        contents = parse_text(text, name)
    except DocumentError as ex:
        found = _AT_LINE.search(ex.message)
        line, column = (int(found[1]), int(found[2])) if found else (0, 0)
        raise PaneError([PaneProblem(name, ex.message, line=line, column=column)]) from None
    for index, content in enumerate(contents):
        problem = unfolding_problem(content)
        if problem:
            raise PaneError([PaneProblem(name, f"document {index + 1}: {problem}", document=index)])
        pane.documents.append(Document(name, index, content))
    pane.starts = _document_nodes(text, len(contents))
    return pane


def objects_of(pane: Pane) -> list[dict[str, Any]]:
    """The pane's documents as Kubernetes objects (``apiVersion`` and ``kind``, as kubectl requires)."""
    out: list[dict[str, Any]] = []
    problems: list[PaneProblem] = []
    for document in pane.documents:
        content = document.content
        missing = []
        if isinstance(content, dict):
            missing = [k for k in ("apiVersion", "kind") if not isinstance(content.get(k), str) or not content[k]]
        what = f"not a Kubernetes object: {' and '.join(missing)} not set" if missing else ""
        if not isinstance(content, dict):
            what = f"not a Kubernetes object: {describe_type(content)}"
        if what:
            problems.append(located(pane, document.index, "", f"document {document.index + 1}: {what}"))
        else:
            out.append(content)
    if problems:
        raise PaneError(problems)
    return out


def single(pane: Pane, what: str) -> Any:
    """The pane's only document (a Context, a UserInfo), or None when it is empty."""
    if not pane.documents:
        return None
    if len(pane.documents) > 1:
        raise PaneError([PaneProblem(pane.name, f"expected one {what} document, found {len(pane.documents)}")])
    return pane.documents[0].content


def unfolding_problem(value: Any) -> str:
    """'' when ``value`` is a tree of at most :data:`MAX_DOCUMENT_NODES` nodes and
    :data:`MAX_REQUEST_BYTES` of JSON once every alias is unfolded; else why not. Counts without
    unfolding: a node met again adds what it was counted at."""
    sizes: dict[int, tuple[int, int]] = {}  # id → (nodes, bytes) of a finished container
    open_ids: set[int] = set()
    stack: list[tuple[Any, Iterator[Any] | None, list[int]]] = [(value, None, [0, 0])]
    result = (0, 0)
    while stack:
        node, children, total = stack[-1]
        if children is None:
            if not isinstance(node, dict | list):
                stack.pop()
                result = (1, _leaf_bytes(node))
                if stack:
                    _add(stack[-1][2], result)
                continue
            if id(node) in sizes:
                stack.pop()
                result = sizes[id(node)]
                if stack:
                    _add(stack[-1][2], result)
                continue
            if id(node) in open_ids:
                return "an alias refers to a node that contains it: the document never ends"
            open_ids.add(id(node))
            items = node.items() if isinstance(node, dict) else node
            children = iter(items)
            stack[-1] = (node, children, [1, 2])
            continue
        child: Any = next(children, _END)
        if child is _END:
            stack.pop()
            open_ids.discard(id(node))
            result = sizes[id(node)] = (total[0], total[1])
            if stack:
                _add(stack[-1][2], result)
            continue
        if isinstance(node, dict):
            key, child = child
            total[1] += _leaf_bytes(key) + 2
        if total[0] > MAX_DOCUMENT_NODES or total[1] > MAX_REQUEST_BYTES:
            return _too_big()
        stack.append((child, None, [0, 0]))
    if result[0] > MAX_DOCUMENT_NODES or result[1] > MAX_REQUEST_BYTES:
        return _too_big()
    return ""


_END = object()


def _add(total: list[int], part: tuple[int, int]) -> None:
    total[0] += part[0]
    total[1] += part[1] + 1


def _too_big() -> str:
    return (
        f"unfolds (YAML aliases included) to more than {MAX_REQUEST_BYTES} bytes or {MAX_DOCUMENT_NODES} values, "
        "the API server's request limit"
    )


def _leaf_bytes(value: Any) -> int:
    if isinstance(value, str):
        return len(value) + 2
    return len(str(value))


def _document_nodes(text: str, count: int) -> list[yaml.Node]:
    """The root node of each document (for positions); [] when the text is JSON or the documents do
    not line up one to one (a ``kind: List``)."""
    try:
        nodes = [n for n in yaml.compose_all(text, Loader=yaml.SafeLoader) if n is not None]
    except yaml.YAMLError:
        return []
    nodes = [n for n in nodes if not (isinstance(n, yaml.ScalarNode) and n.tag.endswith(":null"))]
    return nodes if len(nodes) == count else []


# --- positions -------------------------------------------------------------------------------------

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def field_node(root: yaml.Node, path: str) -> yaml.Node:
    """The deepest node of ``root`` along a field path (``spec.mutations[1].jsonPatch.expression``)."""
    node = root
    for name, index in _TOKEN.findall(path):
        if index and isinstance(node, yaml.SequenceNode) and int(index) < len(node.value):
            node = node.value[int(index)]
        elif name and isinstance(node, yaml.MappingNode):
            found = next((v for k, v in node.value if getattr(k, "value", None) == name), None)
            if found is None:
                return node
            node = found
        else:
            return node
    return node


def located(pane: Pane, document: int | None, path: str, message: str, line: int = 0, column: int = 0,
            snippet: str = "") -> PaneProblem:  # fmt: skip
    """A problem at ``path`` of a document of ``pane`` (``line``/``column``: inside the expression
    there, 1-based), with its line and column in the pane's text."""
    root = pane.node(document) if document is not None else None
    if root is None:
        return PaneProblem(pane.name, message, document, field=path, snippet=snippet)
    node = field_node(root, path) if path else root
    mark = node.start_mark
    at_line, at_column = mark.line + 1, mark.column + 1
    if line and isinstance(node, yaml.ScalarNode):
        if node.style in ("|", ">"):  # a block scalar: the expression starts on the next line
            indent = _block_indent(pane.text, mark.line + 1)
            at_line, at_column = mark.line + 1 + line, indent + column
        elif line == 1:
            at_column = mark.column + column + (1 if node.style in ("'", '"') else 0)
    return PaneProblem(pane.name, message, document, at_line, at_column, path, snippet)


def _block_indent(text: str, line: int) -> int:
    lines = text.splitlines()
    if line >= len(lines):
        return 0
    content = lines[line]
    return len(content) - len(content.lstrip(" "))
