"""``celmut test DIR…``: run Kyverno CLI test files (``kyverno-test.yaml``) and report each result.

Prints one row per expected result (policy, resource, expected, actual, reason) and a summary like
``kyverno test``; Pass and Fail are coloured on a terminal. A test that cannot run (a file it names is
missing, a policy is invalid) is reported as ERROR and the other tests still run.
"""

from __future__ import annotations

import argparse

from celmut.cli import console
from celmut.cli.help import BAD_INPUT, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from celmut.errors import ConfigurationError
from celmut.service import flags

EXIT_CODES = {
    EXIT_OK: "every result was as expected",
    EXIT_FAILED: "a result differs from what its test expects",
    EXIT_BAD_INPUT: BAD_INPUT + "; a test that cannot run (a file it names is missing, a policy is invalid)",
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("test", help="run kyverno-test.yaml files", description=__doc__)
    p.add_argument("paths", nargs="+", metavar="DIR", help="test files or directories to search")
    p.add_argument("--fail-only", action="store_true", help="print only failing results")
    console.add_color_flag(p)
    flags.add(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from celmut.cli.kyverno_suites import find_test_files, run_test_file

    backend = flags.chosen(args)
    if backend is None:
        return EXIT_BAD_INPUT
    files = find_test_files(args.paths)
    if not files:
        raise ConfigurationError(f"no kyverno-test.yaml found under {', '.join(args.paths)}")
    colors = console.palette(args)
    passed = failed = 0
    could_not_run: list[str] = []
    for path in files:
        test = run_test_file(path, backend=backend)
        print(f"Test {test.name} ({path})")
        if test.error:
            print(f"  {colors.red('ERROR')}: {test.error}")
            could_not_run.append(str(path))
            continue
        for index, row in enumerate(test.rows, 1):
            if row.passed:
                passed += 1
            else:
                failed += 1
            if args.fail_only and row.passed:
                continue
            mark = colors.green("Pass") if row.passed else colors.red("Fail")
            detail = f" (want {row.expected}, got {row.actual}{': ' + row.reason if row.reason else ''})"
            print(f"  {index:>3}  {mark}  {row.policy}  {row.resource}{'' if row.passed else detail}")
    summary = f"\nTest Summary: {passed} tests passed and {failed} tests failed"
    print(summary + (f"; {len(could_not_run)} tests could not run" if could_not_run else ""))
    if could_not_run:
        console.error(f"{len(could_not_run)} tests could not run (ERROR above): {', '.join(could_not_run)}")
        return EXIT_BAD_INPUT
    return EXIT_OK if failed == 0 else EXIT_FAILED
