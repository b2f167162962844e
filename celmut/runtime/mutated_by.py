"""``celmut.io/mutated-by``: who changed an object, written on the object itself (opt-in).

For the policies annotated ``celmut.io/record-provenance: "true"`` (a PodMutation passes it on), or for
every policy (``serve --record-provenance``), the engine writes, after the policies ran, a compact
JSON summary naming each policy that changed the object and the pointers it changed
(:func:`celmut.runtime.provenance.attributed`): ``{"add-team":["/metadata/labels/team"]}``. It is
merged with the summary already there (an UPDATE, or the API server calling the webhook again) and
bounded in size. PodMutations keep writing CAST AI's own ``pod-mutations.cast.ai/pod-mutation-name``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from celmut.jsonutil import escape_pointer
from celmut.runtime.provenance import MUTATED_BY_ANNOTATION, attributed, pointers_of
from celmut.runtime.results import PolicyOutcome

__all__ = ["MAX_MUTATED_BY_BYTES", "MUTATED_BY_ANNOTATION", "Recorder", "record_on_object"]

MUTATED_BY_POINTER = "/metadata/annotations/" + escape_pointer(MUTATED_BY_ANNOTATION)
MAX_MUTATED_BY_BYTES = 1024  # annotations share 256 KiB per object: the summary stays small
_MORE = "…"


def record_on_object(
    obj: dict[str, Any],
    outcomes: Sequence[PolicyOutcome],
    recorded: Collection[str] | None,
    patch: Sequence[dict[str, Any]],
) -> Any:
    """``obj`` with ``celmut.io/mutated-by`` naming each applied policy in ``recorded`` (None: every
    one) and the fields of ``patch`` (the admission's change) it changed (:func:`attributed`), merged
    with the summary already there (an UPDATE, or the API server calling the webhook again); ``obj``
    itself when there is nothing to record.

    The value is compact JSON, ``{"policy": ["/pointer", …]}``, in the order the policies applied;
    over :data:`MAX_MUTATED_BY_BYTES` it keeps only the names, then only the latest policies and
    ``"…": ["+N earlier"]``. Copy-on-write: only ``metadata`` and its ``annotations`` are new."""
    entries: dict[str, list[str]] = {}
    pointers = pointers_of(patch)
    for outcome in outcomes:
        if outcome.status != "applied" or (recorded is not None and outcome.policy not in recorded):
            continue
        paths = entries.setdefault(outcome.policy, [])
        changed = attributed(outcome, pointers)
        paths += [c.path for c in changed if c.path not in paths and c.path != MUTATED_BY_POINTER]
    if not entries:
        return obj
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    annotations = metadata.get("annotations")
    annotations = annotations if isinstance(annotations, dict) else {}
    value = _bounded(_merged(annotations.get(MUTATED_BY_ANNOTATION), entries))
    if annotations.get(MUTATED_BY_ANNOTATION) == value:
        return obj
    return {**obj, "metadata": {**metadata, "annotations": {**annotations, MUTATED_BY_ANNOTATION: value}}}


def _merged(existing: Any, entries: dict[str, list[str]]) -> dict[str, list[str]]:
    merged: dict[str, list[str]] = {}
    try:
        previous = orjson.loads(existing) if isinstance(existing, str) else None
    except orjson.JSONDecodeError:
        previous = None  # not ours to keep: someone else's text in our annotation is replaced
    if isinstance(previous, dict):
        for name, paths in previous.items():
            if isinstance(name, str) and isinstance(paths, list):
                merged[name] = [p for p in paths if isinstance(p, str)]
    for name, paths in entries.items():
        kept = merged.pop(name, [])  # re-applied: it moves to the end, the latest
        merged[name] = kept + [p for p in paths if p not in kept]
    return merged


def _earlier(marker: list[str] | None) -> int:
    """How many policies an earlier truncation dropped (its ``"…": ["+N earlier"]``)."""
    text = marker[0] if marker else ""
    number = text[1:].partition(" ")[0] if text.startswith("+") else ""
    return int(number) if number.isdigit() else 0


def _dump(entries: dict[str, list[str]]) -> str:
    return orjson.dumps(entries).decode()


def _bounded(entries: dict[str, list[str]], limit: int = MAX_MUTATED_BY_BYTES) -> str:
    text = _dump(entries)
    if len(text.encode()) <= limit:
        return text
    names: dict[str, list[str]] = {name: [] for name in entries if name != _MORE}
    dropped = _earlier(entries.get(_MORE))
    while True:
        shown = {_MORE: [f"+{dropped} earlier"]} if dropped else {}
        text = _dump({**shown, **names})
        if len(text.encode()) <= limit or not names:
            return text
        del names[next(iter(names))]
        dropped += 1


@dataclass
class Recorder:
    """Which policies record themselves on the objects they change (built once per engine)."""

    record_all: bool = False
    opted_in: frozenset[str] = field(default_factory=frozenset)

    @property
    def active(self) -> bool:
        return self.record_all or bool(self.opted_in)

    def record(self, obj: dict[str, Any], outcomes: Sequence[PolicyOutcome], patch: Sequence[dict[str, Any]]) -> Any:
        return record_on_object(obj, outcomes, None if self.record_all else self.opted_in, patch)
