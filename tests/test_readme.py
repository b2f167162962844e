"""The README's quick start works as written (issue 15, item 7): every ``celmut`` command of its
``sh`` blocks runs from a clone and exits 0, or the code its comment announces (``# exit 2: …``)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def quick_start_commands() -> list[tuple[list[str], int]]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Quick start") :]
    section = section[: section.index("\n## ", 1)]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.DOTALL):
        for line in block.splitlines():
            if not line.startswith("celmut "):
                continue
            expected = re.search(r"#\s*exit (\d+)", line)
            commands.append((shlex.split(line, comments=True)[1:], int(expected.group(1)) if expected else 0))
    return commands


COMMANDS = quick_start_commands()


def test_the_quick_start_has_commands_for_each_offline_command() -> None:
    assert {argv[0] for argv, _ in COMMANDS} >= {"apply", "test", "eval", "compile"}


@pytest.mark.parametrize(("argv", "code"), COMMANDS, ids=[" ".join(argv)[:70] for argv, _ in COMMANDS])
def test_each_quick_start_command_exits_as_documented(argv: list[str], code: int) -> None:
    result = subprocess.run([sys.executable, "-m", "celmut", *argv], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == code, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Traceback" not in result.stderr
