"""``--cel-engine`` names the engines without importing the CEL layer: ``--help``, completion and the
error for an unknown name list the current engines; every former name is still accepted."""

from __future__ import annotations

import argparse

import pytest

from celmut import cel_engines
from celmut.cel.backends import select
from celmut.service import flags


def test_the_flag_lists_the_current_engines_and_accepts_the_former_names() -> None:
    assert tuple(flags.CHOICES) == cel_engines.ENGINES == ("compiled", "interpreted")
    assert all(name in flags.CHOICES for name in ("compiled", "interpreted", "auto", "celpy", "planner", "cpp"))
    assert "bogus" not in flags.CHOICES
    assert select.CHOICES == cel_engines.CHOICES and flags.ENV_VAR == select.ENV_VAR == "CELMUT_CEL_ENGINE"


def test_help_and_the_unknown_name_error_show_only_the_current_engines(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="p")
    flags.add(parser)
    assert "{compiled,interpreted}" in parser.format_help()
    with pytest.raises(SystemExit):
        parser.parse_args(["--cel-engine", "bogus"])
    assert "invalid choice: 'bogus' (choose from 'compiled', 'interpreted')" in capsys.readouterr().err
    assert parser.parse_args(["--cel-engine", "planner"]).cel_engine == "planner"  # resolved when the command runs
