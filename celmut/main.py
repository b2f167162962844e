"""``celmut`` entry point: one parser, the subcommands of every surface.

The offline commands live in :mod:`celmut.cli`, ``serve`` in :mod:`celmut.server.command` and
``controller`` in :mod:`celmut.controller.command`; the surfaces never import each other, only this
module sees them all. Command modules import their heavy dependencies (FastAPI, uvicorn, the
Kubernetes client) inside ``run``, so ``celmut --version`` and the offline commands start fast.

Exit codes are shared by every subcommand: 0 success, 1 a policy or expression failed at run time
(or a test failed), 2 bad input (unreadable file, invalid policy, CEL compile error, bad flags).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from celmut import __version__
from celmut.cli import apply_cmd, compile_cmd, eval_cmd, explain_cmd, manifests_cmd, suite_cmd, webhook_config_cmd
from celmut.controller import command as controller_cmd
from celmut.server import command as serve_cmd

COMMANDS = (
    eval_cmd,
    apply_cmd,
    explain_cmd,
    suite_cmd,
    compile_cmd,
    serve_cmd,
    webhook_config_cmd,
    controller_cmd,
    manifests_cmd,
)

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="celmut", description="Kyverno-compatible CEL mutation engine for Kubernetes."
    )
    parser.add_argument("--version", action="version", version=f"celmut {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
