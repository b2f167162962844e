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
    """One pane's text and its documents; each document's YAML node (with its positions) is composed
    only when a problem or a provenance link needs a position: a 3 MB resource that runs cleanly is
    never composed a second time."""

    name: str
    text: str
    documents: list[Document] = field(default_factory=list)
    _nodes: list[yaml.Node] | None = field(default=None, repr=False)

    def node(self, index: int) -> yaml.Node | None:
        if self._nodes is None:
            self._nodes = _document_nodes(self.text, len(self.documents)) if self.documents else []
        return self._nodes[index] if 0 <= index < len(self._nodes) else None


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
        place = scalar_position(pane.text, node, line, column)
        if place is not None:
            at_line, at_column = place
    return PaneProblem(pane.name, message, document, at_line, at_column, path, snippet)


def scalar_position(text: str, node: yaml.ScalarNode, line: int, column: int) -> tuple[int, int] | None:
    """The 1-based line and column in ``text`` of the 1-based ``line``/``column`` of the scalar's
    value (an expression's error position); None when the value cannot be followed in the source.

    Folding is what makes this more than an offset: in a folded (``>``, ``>-``) or plain multi-line
    scalar, each line break of the source becomes a space of the value, so an expression that CEL sees
    as one line spans several lines of the pane; a literal block (``|``) keeps its lines but drops their
    indentation; a quoted one its escapes. Each character of the value is found in the source in turn
    (a folded space at the line break it replaces, an escaped character at its backslash)."""
    value: str = node.value
    lines = value.split("\n")
    if not 0 < line <= len(lines):
        return None
    offset = sum(len(text_line) + 1 for text_line in lines[: line - 1]) + max(column - 1, 0)
    offset = min(offset, len(value))
    source_at = _source_offsets(text, node)
    if source_at is None:
        return None
    index = source_at[offset] if offset < len(source_at) else source_at[-1] + 1 if source_at else _start(text, node)
    before = text.rfind("\n", 0, index)
    return text.count("\n", 0, index) + 1, index - before


def _start(text: str, node: yaml.Node) -> int:
    """The character offset of a node's start mark (the marks' own ``index`` is not used: libyaml's
    counts bytes)."""
    mark = node.start_mark
    line_start = 0
    for _ in range(mark.line):
        line_start = text.index("\n", line_start) + 1
    return line_start + mark.column


def _source_offsets(text: str, node: yaml.ScalarNode) -> list[int] | None:
    """For each character of the scalar's value, its offset in ``text``; None when they do not line up."""
    value: str = node.value
    at = _start(text, node)
    if node.style in ("|", ">"):
        at = text.find("\n", at) + 1  # the content starts below the header (``>-``, ``|2``)
        if at == 0:
            return None
    elif node.style in ("'", '"'):
        at += 1
    double, single, folds = node.style == '"', node.style == "'", node.style != "|"
    out: list[int] = []
    for char in value:
        while at < len(text):
            here = text[at]
            if double and here == "\\":
                if text[at + 1 : at + 2] == "\n":  # an escaped line break stands for nothing
                    at += 2
                    continue
                break  # an escape stands for the character it makes
            if here == char or (folds and here == "\n" and char in " \n"):
                break  # the character, or a line break folded into a space (or kept as one line feed)
            at += 1
        else:
            return None
        out.append(at)
        at += _escape_length(text, at) if double and text[at] == "\\" else 2 if single and char == "'" else 1
    return out


_ESCAPE_LENGTHS = {"x": 4, "u": 6, "U": 10}


def _escape_length(text: str, at: int) -> int:
    """The length of the escape sequence at ``at`` (``\\n``: 2, ``\\x41``: 4, ``\\u00e9``: 6)."""
    return _ESCAPE_LENGTHS.get(text[at + 1 : at + 2], 2)
