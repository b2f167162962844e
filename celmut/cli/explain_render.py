"""Who changed which field, for a person (a table) or a program (JSON): ``apply --explain`` and ``explain``.

Both commands render the runtime's provenance (:mod:`celmut.runtime.provenance`) of each object:
every field a mutation changed (``add``/``replace``/``remove``) or wrote with the value it already
had (``kept``), with the policy and the mutation (``spec.mutations[N]``), then every policy considered
but not applied and why (matchConstraints, a matchCondition by name, a PolicyException by name, an
error under ``failurePolicy: Ignore``, …). ``field`` narrows the changes to one JSON pointer: why is
this field here, and, when no policy wrote it, the policies that did not apply.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from celmut.runtime.mutate_existing import TargetResult
from celmut.runtime.provenance import (
    MUTATED_BY_ANNOTATION,
    AppliedMutation,
    NotApplied,
    Provenance,
    from_outcomes,
    short_mutation_path,
)
from celmut.runtime.results import AdmissionResult
from celmut.service.offline import ResourceRun, reference

FORMATS = ("table", "json")
MAX_VALUE = 40  # characters of a value in the table (JSON has them whole)
MAX_UNSELECTED_NAMES = 5  # policies named on the line counting those that do not select the object


@dataclass(frozen=True)
class Explained:
    """One object and its provenance."""

    reference: str  # Pod shop/web
    identity: dict[str, str]  # apiVersion, kind, namespace, name
    provenance: Provenance
    allowed: bool = True
    message: str = ""  # why it was denied
    target: bool = False  # a mutateExisting target, not an admitted object
    recorded: str = ""  # the celmut.io/mutated-by summary the object already carried


def identity(obj: dict[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    out = {"apiVersion": str(obj.get("apiVersion", "")), "kind": str(obj.get("kind", ""))}
    if meta.get("namespace"):
        out["namespace"] = str(meta["namespace"])
    out["name"] = str(meta.get("name") or meta.get("generateName") or "")
    return out


def _recorded(obj: dict[str, Any]) -> str:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(MUTATED_BY_ANNOTATION) if isinstance(annotations, dict) else None
    return value if isinstance(value, str) else ""


def explain_admission(resource: dict[str, Any], result: AdmissionResult) -> Explained:
    """One admitted (or denied) object."""
    provenance = from_outcomes(result.outcomes, result.object if result.allowed else None)
    return Explained(
        reference(resource), identity(resource), provenance, result.allowed, result.message, False, _recorded(resource)
    )


def explain_targets(targets: Iterable[TargetResult]) -> list[Explained]:
    """mutateExisting targets, one entry per object (several policies may target it)."""
    grouped: dict[str, list[TargetResult]] = {}
    for target in targets:
        grouped.setdefault(target.reference, []).append(target)
    out: list[Explained] = []
    for name, results in grouped.items():
        applied: list[AppliedMutation] = []
        not_applied: list[NotApplied] = []
        for result in results:
            provenance = from_outcomes([result.outcome], trigger=result.trigger)
            applied += provenance.applied
            not_applied += provenance.not_applied
        out.append(
            Explained(name, identity(results[0].target), Provenance(tuple(applied), tuple(not_applied)), target=True)
        )
    return out


def explain_runs(runs: Sequence[ResourceRun], scanned: Sequence[TargetResult] = ()) -> list[Explained]:
    """Each admitted resource, then the mutateExisting targets they (or a policy-event pass) reached."""
    explained = [explain_admission(run.resource, run.result) for run in runs]
    return explained + explain_targets([t for run in runs for t in run.targets] + list(scanned))


def render(explained: Sequence[Explained], fmt: str, field: str | None = None) -> str:
    """``table`` or ``json``, ending with a newline."""
    if fmt == "json":
        return json.dumps({"items": [_as_dict(e, field) for e in explained]}, indent=2) + "\n"
    return "\n".join(_table(e, field) for e in explained)


# --- JSON -------------------------------------------------------------------------------------------


def _as_dict(explained: Explained, field: str | None) -> dict[str, Any]:
    provenance = explained.provenance
    applied = provenance.touching(field) if field else list(provenance.applied)
    out: dict[str, Any] = {"object": explained.identity}
    if explained.target:
        out["mutateExistingTarget"] = True
    out["allowed"] = explained.allowed
    if explained.message:
        out["message"] = explained.message
    if field:
        out["field"] = field
    out["applied"] = [m.to_dict() for m in applied]
    out["notApplied"] = [n.to_dict() for n in provenance.not_applied]
    if explained.recorded:
        out["recorded"] = explained.recorded
    return out


# --- the table --------------------------------------------------------------------------------------


def _value(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def _columns(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def _change_rows(applied: Iterable[AppliedMutation]) -> list[list[str]]:
    rows: list[list[str]] = []
    for mutation in applied:
        where = short_mutation_path(mutation.mutation) if mutation.mutation else "(whole policy)"
        if mutation.binding:
            where += f" binding {mutation.binding}"
        if mutation.reinvoked:
            where += " (reinvoked)"
        for change in mutation.changes:
            value = _value(change.value) if change.op != "remove" else ""
            rows.append([change.path, change.op, mutation.policy, where, value])
        rows += [[pointer, "kept", mutation.policy, where, ""] for pointer in mutation.kept]
    return rows


def _table(explained: Explained, field: str | None) -> str:
    provenance = explained.provenance
    title = explained.reference + (" (mutateExisting target)" if explained.target else "")
    lines = [title]
    if not explained.allowed:
        lines.append(f"  denied: {explained.message}")
    applied = provenance.touching(field) if field else list(provenance.applied)
    rows = _change_rows(applied)
    if rows:
        if field:
            lines.append(f"  why {field}:")
        lines += _columns([["FIELD", "OP", "POLICY", "MUTATION", "VALUE"], *rows])
    elif field:
        lines.append(f"  no policy wrote {field} or a field around it")
    else:
        lines.append("  no field changed")
    candidates = [n for n in provenance.not_applied if n.selects_resource]
    if candidates:
        skipped = [[n.policy, n.kind, n.status, n.summary] for n in candidates]
        lines += _columns([["NOT APPLIED", "KIND", "STATUS", "REASON"], *skipped])
    unselected = [n.policy for n in provenance.not_applied if not n.selects_resource]
    if unselected:
        names = ", ".join(unselected[:MAX_UNSELECTED_NAMES]) + (", …" if len(unselected) > MAX_UNSELECTED_NAMES else "")
        lines.append(f"  {len(unselected)} policies do not select this resource (resourceRules): {names}")
    if explained.recorded:
        lines.append(f"  recorded on the object ({MUTATED_BY_ANNOTATION}): {explained.recorded}")
    return "\n".join(lines) + "\n"
