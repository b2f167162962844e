"""``celmut test DIR…``: run Kyverno CLI test files (``kyverno-test.yaml``) as ``kyverno test`` does.

Each test prints Kyverno's progress lines and results table (ID, POLICY, RULE, RESOURCE, RESULT,
REASON; MESSAGE with ``--detailed-results``), then notes where a result passes only as Kyverno lets it
(a resource the policy does not match is Excluded, a pass; a result whose resource has no document in
``patchedResources`` is dropped), then the diff of each patched resource that differs from the one
expected, as ``kubectl diff`` prints it. The summary line counts as Kyverno's does (skips count as
passed). Results for policy kinds celmut does not run (ValidatingPolicy, ImageValidatingPolicy, a
classic ClusterPolicy …) are not evaluated: listed at the end, they change the exit code only with
``--require-all``. A test that cannot run (a file it names is missing, a policy is invalid) is reported
as ERROR and the other tests still run.

For CI: ``-o json|yaml|markdown|junit`` prints the rows for programs instead (nothing else on standard
output), and ``--junit FILE`` writes JUnit XML beside the table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from celmut.cli import console
from celmut.cli.help import BAD_INPUT, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from celmut.errors import ConfigurationError
from celmut.service import flags

if TYPE_CHECKING:
    from celmut.cli.suite_rows import Row, TestRun

OUTPUT_FORMATS = ("table", "json", "yaml", "markdown", "junit")
EXIT_CODES = {
    EXIT_OK: "every result was as expected (or no test was found, without --require-tests)",
    EXIT_FAILED: "a result differs from what its test expects; with --require-tests, no test was found; with "
    "--require-all, a result for a policy kind celmut does not run",
    EXIT_BAD_INPUT: BAD_INPUT + "; a test that cannot run (a file it names is missing, a policy is invalid) or a "
    "patchedResources file that cannot be read",
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("test", help="run kyverno-test.yaml files, like kyverno test", description=__doc__)
    p.add_argument("paths", nargs="+", metavar="DIR", help="test files or directories to search")
    p.add_argument(
        "-f", "--file-name", metavar="NAME", help="the test file name to look for (default: kyverno-test.yaml or .yml)"
    )
    p.add_argument(
        "-t",
        "--test-case-selector",
        default="policy=*,rule=*,resource=*",
        metavar="SELECTOR",
        help="run only the results whose policy, rule and resource match these globs (default policy=*,rule=*,"
        "resource=*); a resource= glob also narrows the resources a result checks",
    )
    p.add_argument("--fail-only", action="store_true", help="print only the failing results, in one table at the end")
    p.add_argument("--detailed-results", action="store_true", help="add the MESSAGE column (why each result is so)")
    p.add_argument("--require-tests", action="store_true", help="exit 1 when no test file is found")
    p.add_argument(
        "--require-all",
        action="store_true",
        help="fail the results for policy kinds celmut does not run (ValidatingPolicy …) instead of listing them",
    )
    p.add_argument(
        "-o",
        "--output-format",
        default="table",
        choices=OUTPUT_FORMATS,
        help="table (default), or the rows for programs: json, yaml, markdown or junit (JUnit XML)",
    )
    p.add_argument("--junit", metavar="FILE", help="also write the results as JUnit XML to FILE (for CI)")
    console.add_color_flag(p)
    flags.add(p)
    flags.add_authorizer(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from celmut.cli import suite_report
    from celmut.cli.kyverno_suites import run_test_file
    from celmut.cli.suite_spec import CaseSelector, find_test_files
    from celmut.service import offline_authorizer

    selector = CaseSelector.parse(args.test_case_selector)
    if args.junit and not Path(args.junit).parent.is_dir():  # refused before any test runs
        raise ConfigurationError(f"--junit {args.junit}: no such directory: {Path(args.junit).parent}")
    backend = flags.chosen(args)
    if backend is None:
        return EXIT_BAD_INPUT
    authorizer = offline_authorizer.from_flag(args.authorizer)
    files = find_test_files(args.paths, args.file_name)
    if not files:
        if args.require_tests:
            console.error(f"no tests found under {', '.join(args.paths)} (--require-tests)")
            return EXIT_FAILED
        print("No test yamls available")
        console.warning(f"no {args.file_name or 'kyverno-test.yaml'} under {', '.join(args.paths)}")
        return EXIT_OK
    table = args.output_format == "table"
    colors = console.palette(args) if table else console.Palette(False)
    runs: list[TestRun] = []
    for path in files:
        test = run_test_file(path, backend=backend, selector=selector, authorizer=authorizer)
        runs.append(test)
        for warning in test.warnings:
            console.warning(warning)
        if table:
            _print_test(test, colors, args)
    rows = [row for test in runs for row in test.rows]
    others = [row for test in runs for row in test.not_evaluated]
    passed = sum(1 for row in rows if row.counted in ("pass", "skip"))
    failed = sum(1 for row in rows if row.counted == "fail") + (len(others) if args.require_all else 0)
    if table:
        _print_summary(runs, rows, others, passed, failed, colors, args)
    else:
        sys.stdout.write(suite_report.render(runs, args.output_format, detailed=args.detailed_results))
    if args.junit:
        Path(args.junit).write_text(suite_report.junit(runs), encoding="utf-8")
    broken = [test for test in runs if test.error or test.file_errors]
    for test in broken:
        for message in [test.error] if test.error else test.file_errors:
            console.error(message)
    if broken:
        return EXIT_BAD_INPUT
    return EXIT_OK if failed == 0 else EXIT_FAILED


def _print_test(test: TestRun, colors: console.Palette, args: argparse.Namespace) -> None:
    from celmut.cli import suite_report

    print("\n".join(test.progress))
    if test.error:
        print(f"  {colors.red('ERROR')}: {test.error}")
        return
    if not args.fail_only:
        print()
        sys.stdout.write(suite_report.results_table(test.rows, colors, detailed=args.detailed_results))
        print()
    details = suite_report.test_details(test, colors)
    if details:
        sys.stdout.write(details)


def _print_summary(
    runs: list[TestRun],
    rows: list[Row],
    others: list[Row],
    passed: int,
    failed: int,
    colors: console.Palette,
    args: argparse.Namespace,
) -> None:
    from celmut.cli import suite_report

    if args.fail_only:  # command.go: "%d out of %d tests failed", then the failed rows
        print(f"\nTest Summary: {failed} out of {passed + failed} tests failed\n")
        failing = [row for row in rows if row.failed]
        if failing:
            print("Aggregated Failed Test Cases : ")
            sys.stdout.write(suite_report.results_table(failing, colors, detailed=args.detailed_results, renumber=True))
    else:
        print(f"\nTest Summary: {passed} tests passed and {failed} tests failed\n")
    if others:
        what = "fail (--require-all)" if args.require_all else "change nothing (--require-all fails them)"
        print(f"Not evaluated by celmut: {len(others)} results for policy kinds it does not run; they {what}")
        sys.stdout.write(suite_report.results_table(others, colors, renumber=True))
    could_not_run = [str(test.path) for test in runs if test.error]
    if could_not_run:
        print(f"{len(could_not_run)} tests could not run (ERROR above): {', '.join(could_not_run)}")
