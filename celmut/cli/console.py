"""What the offline commands print for a person: ``error:``/``warning:`` lines on stderr, and colour.

Colour only where a person reads: on a terminal, without ``--no-color`` and without ``NO_COLOR`` in
the environment (https://no-color.org: any non-empty value), so output piped into ``kubectl`` or a
file never carries escape codes.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

_RESET = "\033[0m"
_CODES = {"red": "31", "green": "32", "yellow": "33", "cyan": "36", "bold": "1"}


def add_color_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-color",
        "--remove-color",
        dest="no_color",
        action="store_true",
        help="no colour even on a terminal (also: the NO_COLOR environment variable; --remove-color is kyverno's name)",
    )


def color_enabled(stream: TextIO, no_color: bool = False) -> bool:
    """Whether to colour what is written to ``stream``."""
    if no_color or os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Palette:
    """ANSI colours when enabled; otherwise every method returns its text unchanged."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def paint(self, text: str, color: str) -> str:
        return f"\033[{_CODES[color]}m{text}{_RESET}" if self.enabled and text else text

    def red(self, text: str) -> str:
        return self.paint(text, "red")

    def green(self, text: str) -> str:
        return self.paint(text, "green")

    def yellow(self, text: str) -> str:
        return self.paint(text, "yellow")

    def cyan(self, text: str) -> str:
        return self.paint(text, "cyan")

    def bold(self, text: str) -> str:
        return self.paint(text, "bold")


def palette(args: argparse.Namespace, stream: TextIO | None = None) -> Palette:
    """The palette for ``stream`` (stdout by default) under the command's ``--no-color``."""
    return Palette(color_enabled(stream or sys.stdout, bool(getattr(args, "no_color", False))))


def error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def warning(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def hint(message: str) -> None:
    print(f"hint: {message}", file=sys.stderr)
