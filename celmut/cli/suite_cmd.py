"""``celmut test DIR…``: run Kyverno CLI test files (``kyverno-test.yaml``) and report each result.

Prints one row per expected result (policy, resource, expected, actual, reason) and a summary like
``kyverno test``. Exit 1 when any result differs or a test cannot run, 0 otherwise.
"""

from __future__ import annotations

import argparse
import sys

from celmut.cli.kyverno_suites import find_test_files, run_test_file
from celmut.service import flags

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("test", help="run kyverno-test.yaml files", description=__doc__)
    p.add_argument("paths", nargs="+", metavar="DIR", help="test files or directories to search")
    p.add_argument("--fail-only", action="store_true", help="print only failing results")
    flags.add(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    backend = flags.chosen(args)
    if backend is None:
        return EXIT_BAD_INPUT
    files = find_test_files(args.paths)
    if not files:
        print(f"error: no kyverno-test.yaml found under {', '.join(args.paths)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    passed = failed = 0
    for path in files:
        test = run_test_file(path, backend=backend)
        print(f"Test {test.name} ({path})")
        if test.error:
            print(f"  ERROR: {test.error}")
            failed += 1
            continue
        for index, row in enumerate(test.rows, 1):
            if row.passed:
                passed += 1
            else:
                failed += 1
            if args.fail_only and row.passed:
                continue
            mark = "Pass" if row.passed else "Fail"
            detail = f" (want {row.expected}, got {row.actual}{': ' + row.reason if row.reason else ''})"
            print(f"  {index:>3}  {mark}  {row.policy}  {row.resource}{'' if row.passed else detail}")
    print(f"\nTest Summary: {passed} tests passed and {failed} tests failed")
    return EXIT_OK if failed == 0 else EXIT_FAILED
