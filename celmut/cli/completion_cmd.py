"""``celmut completion bash|zsh|fish``: print a shell completion script for every command and flag.

    source <(celmut completion bash)                        # this shell; add it to ~/.bashrc to keep it
    celmut completion zsh > "${fpath[1]}/_celmut"           # zsh, then start a new shell
    celmut completion fish > ~/.config/fish/completions/celmut.fish

The script is generated from celmut's own argument parser by shtab, so it always names the commands,
flags and choices this version has (files complete where a command reads a path).
"""

from __future__ import annotations

import argparse
from typing import Any

from celmut.cli.help import BAD_INPUT, EXIT_BAD_INPUT, EXIT_OK

SHELLS = ("bash", "zsh", "fish")
EXIT_CODES = {EXIT_OK: "printed the script", EXIT_BAD_INPUT: BAD_INPUT}
# Flags and positionals whose value is a path: the shell completes file names there.
PATH_METAVARS = frozenset({"PATH", "POLICY_PATH", "FILE", "DIR"})


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh, fish)", description=__doc__)
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(run=run)


def attach(root: argparse.ArgumentParser, command: argparse.ArgumentParser) -> None:
    """Give the ``completion`` command the parser it describes (main builds it after the commands)."""
    command.set_defaults(root_parser=root)


def run(args: argparse.Namespace) -> int:
    import shtab  # generates bash/zsh/fish scripts from an argparse tree (kept upstream, as argparse changes)

    root: argparse.ArgumentParser = args.root_parser
    _mark_paths(root, shtab.FILE)
    print(shtab.complete(root, shell=args.shell, root_prefix="celmut"), end="")
    return EXIT_OK


def _mark_paths(parser: argparse.ArgumentParser, files: dict[str, Any]) -> None:
    """Complete file names for every argument whose metavar says it is a path (shtab's ``.complete``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                _mark_paths(child, files)
        elif action.metavar in PATH_METAVARS:
            action.complete = files  # type: ignore[attr-defined]  # shtab reads this attribute
