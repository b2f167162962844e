"""What ``celmut apply`` reports the way ``kyverno apply`` does.

* the counts: ``pass: N, fail: N, warn: N, error: N, skip: N`` (``cmd/cli/kubectl-kyverno/commands/
  apply/print.go`` ``printViolations``), one per policy and resource it selected — a policy that
  applied or changed nothing passes, one whose matchCondition was false or that an exception covers
  is skipped, one that failed is an error; a warning the request returned counts as warn. A policy that
  does not match a resource is not counted (Kyverno's engine returns no rule response for it);
* ``--table``: those results as Kyverno's boxed table (ID, POLICY, RULE, RESOURCE, RESULT; MESSAGE with
  ``--detailed-results``);
* ``--output-file``/``--output-dir``: the mutated resources written where ``kyverno apply -o PATH``
  writes them (``processor/policy_processor.go`` ``printOutput``): all in one YAML file, or one
  ``<name>-mutated.yaml`` per resource name in a directory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from celmut.cli import output
from celmut.cli.boxes import box_table
from celmut.cli.console import Palette
from celmut.cli.suite_rows import NOT_MATCHED, resource_name
from celmut.errors import ConfigurationError

if TYPE_CHECKING:
    from celmut.runtime.mutate_existing import TargetResult
    from celmut.runtime.results import PolicyOutcome
    from celmut.service.offline import ResourceRun


@dataclass(frozen=True)
class PolicyResult:
    policy: str
    resource: str
    result: str  # pass | skip | error
    message: str


def _result(outcome: PolicyOutcome) -> str | None:
    if outcome.status == "error" or outcome.cause == "error":
        return "error"
    if outcome.status in ("applied", "unchanged"):
        return "pass"
    if outcome.status == "skipped" and outcome.cause in NOT_MATCHED:
        return None
    return "skip"


def results(runs: Sequence[ResourceRun], targets: Sequence[TargetResult]) -> list[PolicyResult]:
    out: list[PolicyResult] = []
    for run in runs:
        for outcome in run.result.outcomes:
            result = _result(outcome)
            if result is not None:
                message = outcome.reason or ("success" if result == "pass" else "")
                out.append(PolicyResult(outcome.policy, resource_name(run.resource), result, message))
    for target in targets:
        result = _result(target.outcome)
        if result is not None:
            message = target.outcome.reason or ("success" if result == "pass" else "")
            out.append(PolicyResult(target.policy, resource_name(target.target), result, message))
    return out


def summary(found: Sequence[PolicyResult], warnings: int) -> str:
    count = {kind: sum(1 for r in found if r.result == kind) for kind in ("pass", "skip", "error")}
    return f"pass: {count['pass']}, fail: 0, warn: {warnings}, error: {count['error']}, skip: {count['skip']}"


def table(found: Sequence[PolicyResult], colors: Palette, *, detailed: bool) -> str:
    paint = {"pass": colors.green, "skip": colors.yellow, "error": colors.red}
    headers = ["ID", "POLICY", "RULE", "RESOURCE", "RESULT", *(["MESSAGE"] if detailed else [])]
    rows = [
        [str(i), r.policy, "", r.resource, paint[r.result](r.result.capitalize()), *([r.message] if detailed else [])]
        for i, r in enumerate(found, 1)
    ]
    return box_table(headers, rows)


def check_destination(output_file: str | None, output_dir: str | None) -> None:
    """Refuse an output path that cannot be written before anything runs (kyverno apply checks it
    first too: ``checkMutateLogPath``), naming the flag."""
    if output_file is not None:
        target = Path(output_file)
        if target.is_dir():
            raise ConfigurationError(f"--output-file {output_file}: is a directory (use --output-dir for one)")
        if not target.parent.is_dir():
            raise ConfigurationError(f"--output-file {output_file}: no such directory: {target.parent}")
    if output_dir is not None and Path(output_dir).exists() and not Path(output_dir).is_dir():
        raise ConfigurationError(f"--output-dir {output_dir}: not a directory (use --output-file for one file)")


def write_file(path: Path, objects: Sequence[dict[str, Any]]) -> None:
    """All the objects in one YAML file (replacing what it held)."""
    path.write_text(output.render(objects, "yaml"), encoding="utf-8")


def write_directory(directory: Path, objects: Sequence[dict[str, Any]]) -> list[Path]:
    """One ``<name>-mutated.yaml`` per object name under ``directory`` (created if needed); objects of
    the same name share a file, as Kyverno appends them."""
    directory.mkdir(parents=True, exist_ok=True)
    by_name: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        meta = obj.get("metadata") or {}
        by_name.setdefault(str(meta.get("name") or meta.get("generateName") or "unnamed"), []).append(obj)
    written = []
    for name, group in by_name.items():
        safe = name.replace("/", "_").replace("\\", "_")  # never outside the directory, whatever the input
        path = directory / f"{'_' + safe if safe.startswith('.') else safe}-mutated.yaml"
        write_file(path, group)
        written.append(path)
    return written
