"""What ``celmut test`` prints: ``kyverno test``'s results table, and the same rows for programs.

The table is Kyverno's (``cmd/cli/kubectl-kyverno/output/table``): boxed, with the columns ID,
POLICY, RULE, RESOURCE, RESULT, REASON, and MESSAGE with ``--detailed-results``. Below a test's table,
the notes (results that pass only as Kyverno lets them) and, for each ``Resource diff``, the unified
diff from the expected document to celmut's, as ``kubectl diff`` prints it.

For programs (``-o``): ``json`` and ``yaml`` — a list of rows keyed like Kyverno's (ID, POLICY, RULE,
RESOURCE, RESULT, REASON) plus TEST, MESSAGE and, for a diff, DIFF; ``markdown`` — Kyverno's table
in Markdown; ``junit`` — JUnit XML (one ``testsuite`` per test file, one ``testcase`` per row; not
evaluated rows are ``skipped``, a test that could not run an ``error``), which CI systems read.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

import yaml

from celmut.cli import suite_compare
from celmut.cli.boxes import box_table
from celmut.cli.console import Palette
from celmut.cli.suite_rows import FAIL, NOT_EVALUATED, PASS, Row, TestRun

HEADERS = ("ID", "POLICY", "RULE", "RESOURCE", "RESULT", "REASON")
FORMATS = ("table", "json", "yaml", "markdown", "junit")


def _result(row: Row, colors: Palette) -> str:
    if row.result == PASS:
        return colors.green(PASS)
    if row.result == FAIL:
        return colors.red(FAIL)
    return colors.yellow(row.result)


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def results_table(rows: Sequence[Row], colors: Palette, *, detailed: bool = False, renumber: bool = False) -> str:
    headers = [*HEADERS, "MESSAGE"] if detailed else list(HEADERS)
    cells = []
    for index, row in enumerate(rows, 1):
        values = [str(index if renumber else row.id), row.policy, row.rule, row.resource, _result(row, colors)]
        values.append(row.reason)
        if detailed:
            values.append(_first_line(row.message))
        cells.append(values)
    return box_table(headers, cells)


def row_diff(row: Row, colors: Palette) -> str:
    if row.json_docs is not None:
        return suite_compare.json_diff(*row.json_docs, colors, row.resource)
    if row.expected_doc is None or row.actual_doc is None:
        return ""
    return suite_compare.diff(row.expected_doc, row.actual_doc, colors)


def test_details(run: TestRun, colors: Palette) -> str:
    """A test's notes and its rows' diffs, after its table."""
    out = [f"note: {note}\n" for note in run.notes]
    for row in run.rows:
        diff = row_diff(row, colors)
        if diff:
            out.append(f"{colors.red(row.reason)} in row {row.id}: {row.resource} differs from {row.patched_file}:\n")
            if row.policy_error:
                out.append(f"(the policy failed, so the resource is not patched: {row.policy_error})\n")
            out.append(diff)
    return "".join(out)


# --- for programs ---------------------------------------------------------------------------------------


def _row_map(run: TestRun, row: Row, *, detailed: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"ID": row.id, "TEST": run.name}
    out |= dict(zip(HEADERS[1:], (row.policy, row.rule, row.resource, row.result, row.reason), strict=True))
    out["MESSAGE"] = row.message if detailed else _first_line(row.message)
    diff = row_diff(row, Palette(False))
    if diff:
        out["DIFF"] = diff
    return out


def row_maps(runs: Sequence[TestRun], *, detailed: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for run in runs:
        if run.error:
            out.append({"ID": 0, "TEST": run.name, "RESULT": "Error", "REASON": "Test error", "MESSAGE": run.error})
        out += [_row_map(run, row, detailed=detailed) for row in [*run.rows, *run.not_evaluated]]
        out += [
            {"ID": 0, "TEST": run.name, "RESULT": "Error", "REASON": "Resource error", "MESSAGE": error}
            for error in run.file_errors
        ]
    return out


def render(runs: Sequence[TestRun], fmt: str, *, detailed: bool) -> str:
    """The rows of every run in ``fmt`` (json, yaml, markdown or junit)."""
    if fmt == "junit":
        return junit(runs)
    rows = row_maps(runs, detailed=detailed)
    if fmt == "json":
        return json.dumps(rows, indent=2) + "\n"
    if fmt == "yaml":
        return yaml.safe_dump(rows, sort_keys=False)
    headers = ["TEST", *HEADERS, *(["MESSAGE"] if detailed else [])]
    lines = ["| " + " | ".join(headers) + " |", "|" + "----|" * len(headers)]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(h, "")).replace("\n", " ") for h in headers) + " |")
    return "\n".join(lines) + "\n"


def junit(runs: Sequence[TestRun]) -> str:
    """JUnit XML: a testsuite per test file, a testcase per row."""
    root = ET.Element("testsuites", name="celmut test")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for run in runs:
        suite = ET.SubElement(root, "testsuite", name=run.name, file=str(run.path))
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for message in [*([run.error] if run.error else []), *run.file_errors]:
            case = ET.SubElement(suite, "testcase", classname=run.name, name="load")
            ET.SubElement(case, "error", message=message).text = message
            counts["tests"] += 1
            counts["errors"] += 1
        for row in [*run.rows, *run.not_evaluated]:
            case = ET.SubElement(suite, "testcase", classname=row.policy, name=f"{row.id} {row.resource}".strip())
            counts["tests"] += 1
            details = f"policy: {row.policy}\nrule: {row.rule}\nresource: {row.resource}\nmessage: {row.message}\n"
            if row.result == FAIL:
                counts["failures"] += 1
                failure = ET.SubElement(case, "failure", message=row.reason, type=row.reason)
                failure.text = details + row_diff(row, Palette(False))
            elif row.result == NOT_EVALUATED:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=f"{NOT_EVALUATED}: {row.reason}")
            else:
                ET.SubElement(case, "system-out").text = f"reason: {row.reason}\n{details}"
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
