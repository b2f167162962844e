"""The fenced examples of the user documentation (README.md, CONTRIBUTING.md, docs/), as blocks.

A block is a fence with a language: ``sh``/``console`` (commands; a console block shows each command
after ``$ `` and its output below it), ``yaml``. A YAML block with ``title="name"`` is written to that
file for the page's other blocks. A block that cannot run here carries, on the line above its fence,
``<!-- not-run: <reason> -->``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL = ("sh", "bash", "shell", "console")
YAML = ("yaml", "yml")
MARKER = re.compile(r"^<!-- not-run:(.*)-->$")
FENCE = re.compile(r"^(\s*)```(\w+)?(.*)$")
EXIT = re.compile(r"#\s*exit (\d+)")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository
    line: int  # of the opening fence
    language: str
    title: str  # title="…" of the fence, or ""
    not_run: str | None  # the reason a block does not run, or None
    text: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass(frozen=True)
class Command:
    """One command line of a shell block (continuations joined) and, in a console block, its output."""

    line: str
    output: str | None  # None: not shown

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.line, comments=True)

    @property
    def exit_code(self) -> int:
        found = EXIT.search(self.line)
        return int(found.group(1)) if found else 0


def pages() -> list[Path]:
    docs = sorted((ROOT / "docs").rglob("*.md"))
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *docs]


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    lines = page.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, language = len(opening.group(1)), (opening.group(2) or "").lower()
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith("```"):
            end += 1
        title = re.search(r'title="([^"]+)"', opening.group(3) or "")
        marker = MARKER.match(lines[index - 1].strip()) if index else None
        found.append(
            Block(
                page=page.relative_to(ROOT).as_posix(),
                line=index + 1,
                language=language,
                title=title.group(1) if title else "",
                not_run=marker.group(1).strip() if marker else None,
                text="\n".join(line[indent:] for line in lines[index + 1 : end]) + "\n",
            )
        )
        index = end + 1
    return found


def commands(block: Block) -> list[Command]:
    """The commands of a shell block: ``$ `` lines of a console block with the output under each, or
    every non-comment line of an ``sh`` block (a trailing backslash continues a line)."""
    joined: list[str] = []
    for raw in block.text.splitlines():
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + " " + raw.strip()
        else:
            joined.append(raw)
    if block.language != "console":
        return [Command(line.strip(), None) for line in joined if line.strip() and not line.strip().startswith("#")]
    found: list[Command] = []
    output: list[str] = []
    for line in joined:
        if line.startswith("$ "):
            if found:
                found[-1] = Command(found[-1].line, "\n".join(output))
            found.append(Command(line[2:], None))
            output = []
        else:
            output.append(line)
    if found:
        found[-1] = Command(found[-1].line, "\n".join(output))
    return found


def segments(line: str) -> list[list[str]]:
    """The simple commands of a shell line (split at ``|``, ``&&``, ``;``), each as argv without its
    redirections; a leading ``do``/``then`` is dropped, so a loop's body is a command too."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    found: list[list[str]] = [[]]
    redirected = False
    for token in lexer:
        if token in ("|", "||", "&&", ";", "&"):
            found.append([])
        elif token in (">", ">>", "<", "<<", "&>"):
            redirected = True  # the next token is the file: not an argument
        elif redirected:
            redirected = False
        else:
            found[-1].append(token)
    return [argv[1:] if argv and argv[0] in ("do", "then") else argv for argv in found if argv]
