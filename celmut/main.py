"""``celmut`` entry point: one parser, the subcommands of every surface, and the one error handler.

The offline commands live in :mod:`celmut.cli`, ``serve`` in :mod:`celmut.server.command`,
``controller`` in :mod:`celmut.controller.command` and ``playground`` in
:mod:`celmut.playground.command`; the surfaces never import each other, only this module sees them
all. Command modules import their heavy dependencies (the CEL compiler, FastAPI, uvicorn, the
Kubernetes client) inside ``run``, so ``celmut --version`` and ``--help`` start fast.

Exit codes are shared by every subcommand: 0 success, 1 a policy or expression failed at run time
(or a test failed), 2 bad input (unreadable file, invalid policy, CEL compile error, bad flags), 70 a
bug in celmut. Every :class:`~celmut.errors.CelmutError` that reaches this module is bad input: one
``error:`` line on stderr and exit 2. Anything else is a bug: one line naming ``--debug``, which
prints the traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from types import ModuleType

from celmut import __version__
from celmut.cli import (
    apply_cmd,
    compile_cmd,
    completion_cmd,
    eval_cmd,
    explain_cmd,
    manifests_cmd,
    suite_cmd,
    version_cmd,
    webhook_config_cmd,
)
from celmut.cli.help import (
    BAD_INPUT,
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_OK,
    INTERNAL,
    CommandParser,
    exit_codes_epilog,
)
from celmut.controller import command as controller_cmd
from celmut.errors import CelmutError
from celmut.playground import command as playground_cmd
from celmut.server import command as serve_cmd

COMMANDS: tuple[ModuleType, ...] = (
    eval_cmd,
    apply_cmd,
    explain_cmd,
    suite_cmd,
    compile_cmd,
    playground_cmd,
    serve_cmd,
    webhook_config_cmd,
    controller_cmd,
    manifests_cmd,
    version_cmd,
    completion_cmd,
)
# Commands whose module does not list its own EXIT_CODES (the surfaces outside celmut.cli).
EXIT_CODES: Mapping[str, Mapping[int, str]] = {
    "serve": {0: "stopped by SIGTERM or SIGINT", 2: BAD_INPUT + "; unusable policies or TLS files at start"},
    "controller": {
        0: "stopped by SIGTERM or SIGINT; with --dry-run, no target failed",
        1: "with --dry-run: a target's policies failed",
        2: BAD_INPUT + "; no cluster connection at start",
    },
    "webhook-config": {0: "success", 2: BAD_INPUT},
}
DEBUG_HELP = "print the Python traceback of an unexpected error"


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="celmut",
        description="Kyverno-compatible CEL mutation engine for Kubernetes.",
        epilog="exit codes (each command's --help says what they mean for it):\n"
        "  0   success\n  1   a policy, an expression or a test failed at run time\n"
        f"  2   {BAD_INPUT}\n  70  {INTERNAL}",
    )
    parser.add_argument("--version", action="version", version=f"celmut {__version__}")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=CommandParser)
    for command in COMMANDS:
        before = set(sub.choices)
        command.add_parser(sub)
        for name in set(sub.choices) - before:
            subparser = sub.choices[name]
            subparser.epilog = exit_codes_epilog(getattr(command, "EXIT_CODES", None) or EXIT_CODES[name])
            # also after the command (celmut apply … --debug); SUPPRESS keeps the top-level value otherwise
            subparser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
    completion_cmd.attach(parser, sub.choices["completion"])
    return parser


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse ``argv``; an unknown flag is reported with the usage of the command it was given to."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        subparsers.choices[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return execute(parse(build_parser(), argv))


def execute(args: argparse.Namespace) -> int:
    """Run the parsed command (``args.run``); every error ends here, as one line and an exit code."""
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`celmut apply … | head`): not an error
        _discard_stdout()
        return EXIT_OK
    except (CelmutError, OSError) as ex:  # bad input, or a file or connection the user named
        if args.debug:
            traceback.print_exc()
        print(f"error: {_message(ex)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as ex:
        if args.debug:
            traceback.print_exc()
        else:
            print(
                f"internal error: {type(ex).__name__}: {_message(ex)}\n"
                "this is a bug in celmut: run again with --debug for the traceback",
                file=sys.stderr,
            )
        return EXIT_INTERNAL


def _message(ex: BaseException) -> str:
    """The message of an error; an OSError as ``file: reason`` (not ``[Errno 2] …``)."""
    if isinstance(ex, OSError) and ex.strerror:
        return f"{ex.filename}: {ex.strerror}" if ex.filename else ex.strerror
    return str(ex) or type(ex).__name__


def _discard_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
