"""The rows a Kyverno CLI Test run reports (``cmd/cli/kubectl-kyverno/commands/test/output.go``), what
``celmut test`` prints and serialises, and the resource names Kyverno's tables use; shared by the
runner (:mod:`celmut.cli.kyverno_suites`), the reports and ``celmut apply --table``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PASS, FAIL, NOT_EVALUATED = "Pass", "Fail", "Not evaluated"
# Why a policy did not apply that means it did not match the resource: Kyverno returns no rule
# response then, which kyverno test reports as Excluded and kyverno apply does not count.
NOT_MATCHED = {"matchConstraints", "namespace", "controlledReplicaSet", "backgroundRequest", "noBinding", "noObject"}
DIFF_MESSAGE = "Patched resource didn't match the patched resource in the test result"


@dataclass
class Row:
    """One line of the results table."""

    id: int
    policy: str
    rule: str
    resource: str
    result: str  # Pass, Fail or Not evaluated
    reason: str
    message: str = ""
    counted: str = "pass"  # pass | skip | fail | other: which of Kyverno's counters it adds to
    expected_doc: dict[str, Any] | None = None  # for a Resource diff: the two documents compared
    actual_doc: dict[str, Any] | None = None
    patched_file: str = ""
    json_docs: tuple[Any, Any] | None = None  # for a JSON document's Resource diff: (expected, actual)
    policy_error: str = ""  # for a Resource diff: why the policy failed, when it did (the resource is unpatched)

    @property
    def failed(self) -> bool:
        return self.result == FAIL


@dataclass
class TestRun:
    path: Path
    name: str
    rows: list[Row] = field(default_factory=list)
    not_evaluated: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # where a result passes only as Kyverno lets it
    warnings: list[str] = field(default_factory=list)
    progress: list[str] = field(default_factory=list)  # Kyverno's "Loading …" lines
    error: str = ""  # the test could not run
    file_errors: list[str] = field(default_factory=list)  # patchedResources files that could not be read

    @property
    def passed(self) -> bool:
        return not self.error and not self.file_errors and not any(row.failed for row in self.rows)


def resource_name(obj: dict[str, Any]) -> str:
    """``apiVersion/Kind/namespace/name``, as Kyverno's newer tables name resources (a cluster-scoped
    one has no namespace part; an object with only ``generateName`` is named by it)."""
    meta = obj.get("metadata") or {}
    parts = [
        obj.get("apiVersion"),
        obj.get("kind"),
        meta.get("namespace"),
        meta.get("name") or meta.get("generateName"),
    ]
    return "/".join(str(p) for p in parts if p)
