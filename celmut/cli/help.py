"""How every command's ``--help`` reads, and the exit codes it documents.

Descriptions come from the command modules' docstrings, which are written in reST for the code's
readers: :func:`plain` renders them as plain text for the terminal (````celmut apply```` →
``celmut apply``, ``:mod:`celmut.cli``` → ``celmut.cli``), keeping their paragraphs.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 70  # 70: EX_SOFTWARE (sysexits.h)
BAD_INPUT = "bad input: an unreadable file, an invalid policy, document or flag (the message names it)"
INTERNAL = "internal error: a bug in celmut (run again with --debug for the traceback)"

_ROLE = re.compile(r":(?:mod|class|func|meth|data|attr|exc|obj):`(~?)([^`]+)`")
_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)


def plain(text: str | None) -> str | None:
    """reST inline markup as plain text: roles become their target, literals lose their backticks."""
    if not text:
        return text
    text = _ROLE.sub(lambda m: m.group(2).rpartition(".")[2] if m.group(1) else m.group(2), text)
    return _LITERAL.sub(lambda m: m.group(1), text)


def exit_codes_epilog(codes: Mapping[int, str]) -> str:
    """The ``exit codes:`` section of a command's help; every command can also exit 70."""
    rows = {**codes, EXIT_INTERNAL: INTERNAL}
    return "exit codes:\n" + "\n".join(f"  {code:<3} {meaning}" for code, meaning in sorted(rows.items()))


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose description, epilog and argument help are plain text, with the
    description's paragraphs kept as written.

    A long flag is never abbreviated (``allow_abbrev=False``): with abbreviations ``apply --cluster``
    would silently be read as ``--cluster-resources``, and every new flag could change what an old
    command line means."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        kwargs.setdefault("allow_abbrev", False)
        for key in ("description", "epilog"):
            if kwargs.get(key):
                kwargs[key] = plain(str(kwargs[key]).strip())
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        if isinstance(kwargs.get("help"), str):
            kwargs["help"] = plain(kwargs["help"])
        return super().add_argument(*args, **kwargs)
