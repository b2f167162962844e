"""``--help`` speaks to users: no help text of any command (description, epilog, flag, group) names a
source file or module of celmut, Kyverno or Kubernetes (``celmut.cli.apply_cluster``,
``commands/apply/command.go``, ``pkg/…``) or an issue number; it says what the flag does instead. The
whole argparse tree is walked, so a new command or flag is checked too (the documentation site is
generated from the same tree)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from celmut.main import build_parser

CELMUT_PACKAGES = (
    "cli|server|controller|kube|service|runtime|compile|policy|cel|install|sources|playground|errors|logs|heap|"
    "api|main|kinds|names|limits|lazy|jsonutil|crashes"
)
SOURCE_REFERENCES = [
    ("a celmut module", re.compile(rf"(?<![\w/-])celmut[./](?:{CELMUT_PACKAGES})\b[\w./]*")),
    ("a source file", re.compile(r"[\w./-]+\.(?:go|py)\b")),
    ("a Go source directory", re.compile(r"(?<![\w-])(?:pkg|cmd|staging|internal)/[\w/.-]+")),
    ("a source repository", re.compile(r"\b(?:kyverno/kyverno|kubernetes/kubernetes|helm/helm|google/cel-go)\b")),
    ("an issue number", re.compile(r"\bissues? #?\d+", re.IGNORECASE)),
    ("reST markup", re.compile(r":(?:mod|class|func|meth|data|attr):`")),
]


def _texts(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, str]]:
    yield f"{path}: description", parser.description or ""
    yield f"{path}: epilog", parser.epilog or ""
    for group in parser._action_groups:
        yield f"{path}: group {group.title!r}", group.description or ""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                yield f"{path} {choice.dest}: summary", str(choice.help or "")
            for name, sub in action.choices.items():
                yield from _texts(sub, f"{path} {name}")
        else:
            yield f"{path} {'/'.join(action.option_strings) or action.dest}", str(action.help or "")


HELP_TEXTS = list(_texts(build_parser(), "celmut"))


def test_every_command_is_walked() -> None:
    commands = {where.split(":")[0] for where, _ in HELP_TEXTS}
    assert {"celmut apply", "celmut serve", "celmut controller", "celmut manifests"} <= commands


@pytest.mark.parametrize(("what", "pattern"), SOURCE_REFERENCES, ids=[w for w, _ in SOURCE_REFERENCES])
def test_no_help_text_names_a_source_path(what: str, pattern: re.Pattern[str]) -> None:
    found = [f"{where}: {m.group(0)!r}" for where, text in HELP_TEXTS for m in pattern.finditer(text)]
    assert found == [], f"--help names {what}; say what it does for the user instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "text",
    ["see celmut.cli.apply_cluster", "(commands/apply/command.go)", "kyverno pkg/cel/policies/mpol", "issue 45"],
)
def test_the_patterns_catch_what_was_reported(text: str) -> None:
    assert any(pattern.search(text) for _, pattern in SOURCE_REFERENCES)


@pytest.mark.parametrize("text", ["celmut.io/owner=celmut", "webhook.celmut.io", "/metadata/labels/team", "apps/v1"])
def test_the_patterns_leave_user_words_alone(text: str) -> None:
    assert not any(pattern.search(text) for _, pattern in SOURCE_REFERENCES)
