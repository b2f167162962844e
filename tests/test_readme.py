"""The README is the front door: it opens with the two set-up commands, stays a five-minute read,
and every link into the documentation resolves. Its examples run in tests/docs/test_examples.py."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_the_readme_opens_with_the_two_setup_commands() -> None:
    title, block = README.split("\n\n", 2)[:2]
    assert title == "# celmut"
    assert block.splitlines()[0] == "```sh"
    commands = [line.split("#")[0].strip() for line in block.splitlines()[1:-1]]
    assert commands == ["make demo", "make test"]


def test_the_readme_is_at_most_200_lines() -> None:
    assert len(README.splitlines()) <= 200


def test_every_relative_link_of_the_readme_resolves() -> None:
    links = [target for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README) if "://" not in target]
    assert len(links) >= 15
    assert [target for target in links if not (ROOT / target).exists()] == []
