"""Provenance: who changed which field of an object, and why the other policies did not apply.

One model for every surface (the webhook's audit annotations, ``celmut apply --explain``,
``celmut explain``, the controller's Events), built from what evaluation already produced: each
:class:`~celmut.runtime.results.PolicyOutcome` keeps the object before and after its policy (and,
when the engine was asked to explain, after each mutation: ``steps``), and the diff between them is
the change. Nothing here runs unless a surface asks for it. The records are plain slotted
dataclasses, never changed once built (the webhook builds a few per request; frozen ones cost twice as much).

* :class:`AppliedMutation` — one mutation (or, when steps were not recorded, one policy) and the
  fields it added, replaced or removed, as RFC 6901 pointers;
* :class:`NotApplied` — a policy considered but not applied, with its :data:`~celmut.runtime.results.Cause`
  (matchConstraints, a matchCondition by name, a PolicyException by name, an error under
  ``failurePolicy: Ignore``, Kyverno's own reasons) and the prose reason.

:mod:`celmut.runtime.mutated_by` writes a compact summary of it on the object itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from celmut import jsonutil
from celmut.jsonutil import PointerTokens
from celmut.runtime.patch import diff
from celmut.runtime.results import MutationStep, PolicyOutcome

MUTATED_BY_ANNOTATION = "celmut.io/mutated-by"  # the summary on the object (celmut.runtime.mutated_by)
RECORDER = "celmut"  # the name provenance gives celmut's own change (the summary annotation)


@dataclass(slots=True)
class FieldChange:
    """One field a mutation changed: ``op`` is ``add``, ``replace`` or ``remove``."""

    op: str
    path: str  # RFC 6901 pointer
    value: Any = None  # the new value (add/replace); never rendered in the audit log

    def to_dict(self, *, values: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op, "path": self.path}
        if values and self.op != "remove":
            out["value"] = self.value
        return out


@dataclass(slots=True)
class AppliedMutation:
    """The fields one mutation of one policy changed (``mutation`` is '' when only the policy's whole
    change is known: the engine was not asked to explain)."""

    policy: str
    kind: str
    mutation: str  # e.g. spec.mutations[1]
    index: int | None
    changes: tuple[FieldChange, ...]
    binding: str = ""
    reinvoked: bool = False
    trigger: str = ""  # mutateExisting: the trigger that led to this target
    kept: tuple[str, ...] = ()  # pointers it writes that already had its value (known when explaining)

    def pointers(self, op: str | None = None) -> list[str]:
        return [c.path for c in self.changes if op is None or c.op == op]

    def to_dict(self, *, values: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"policy": self.policy, "kind": self.kind}
        if self.mutation:
            out["mutation"] = self.mutation
            out["index"] = self.index
        for key in ("binding", "trigger"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.reinvoked:
            out["reinvoked"] = True
        out["changes"] = [c.to_dict(values=values) for c in self.changes]
        if self.kept:
            out["kept"] = list(self.kept)
        return out


@dataclass(slots=True)
class NotApplied:
    """A policy considered but not applied (or matched and changed nothing), and why."""

    policy: str
    kind: str
    status: str  # skipped | excepted | error | unchanged
    cause: str  # a results.Cause; '' for unchanged
    name: str  # the matchCondition or PolicyException ``cause`` names
    reason: str  # prose
    failure_policy: str = "Fail"
    path: str = ""  # the failing expression, for errors
    binding: str = ""

    @property
    def selects_resource(self) -> bool:
        """False when the policy's resource rules do not even name this kind of request (a Deployment
        policy on a Pod, an autogen variant): reports that answer "why not" can leave those out."""
        return selects_resource(self.cause, self.name)

    @property
    def summary(self) -> str:
        """A short reason: ``matchCondition is-prod``, ``PolicyException default/skip``, ``error (Ignore): …``."""
        return summary(self.status, self.cause, self.name, self.reason, self.failure_policy, self.path)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"policy": self.policy, "kind": self.kind, "status": self.status}
        if self.cause:
            out["cause"] = self.cause
        if self.name:
            out["name"] = self.name
        out["reason"] = self.reason
        if self.status == "error":
            out["failurePolicy"] = self.failure_policy
        for key in ("path", "binding"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out


def selects_resource(cause: str, name: str) -> bool:
    """:attr:`NotApplied.selects_resource` of an outcome's ``cause`` and ``cause_name``."""
    return not (cause == "matchConstraints" and name == "resourceRules")


def summary(status: str, cause: str, name: str, reason: str, failure_policy: str, path: str) -> str:
    """:attr:`NotApplied.summary` of an outcome's fields (the webhook's audit annotation reads them from
    each outcome directly: one per policy per request)."""
    if cause == "matchCondition" or cause == "targetMatchCondition":
        return f"{cause} {name}"
    if cause == "exception":
        return f"PolicyException {name}"
    if cause == "error":
        where = f"{path}: " if path else ""
        return f"error (failurePolicy {failure_policy}): {where}{reason}"
    if cause == "matchConstraints":
        return f"matchConstraints: {reason}"
    if status == "unchanged":
        return f"unchanged: {reason}" if reason else "unchanged"
    return f"{cause}: {reason}" if cause else reason


@dataclass(frozen=True)
class Provenance:
    """Every change to one object, in the order it was made, and every policy that did not apply."""

    applied: tuple[AppliedMutation, ...] = ()
    not_applied: tuple[NotApplied, ...] = ()

    def touching(self, pointer: str) -> list[AppliedMutation]:
        """The mutations that changed ``pointer``, a field inside it or a field that contains it, each
        with only those changes (:func:`_narrowed`): why is this field here (or not) — and nothing about
        its siblings (the same mutation writing ``/spec/containers/1/…`` too)."""
        out = []
        for mutation in self.applied:
            changes = tuple(n for n in (_narrowed(c, pointer) for c in mutation.changes) if n is not None)
            kept = tuple(pointer if _contains(k, pointer) else k for k in mutation.kept if _related(k, pointer))
            if changes or kept:
                out.append(dataclasses.replace(mutation, changes=changes, kept=tuple(dict.fromkeys(kept))))
        return out

    def by_policy(self) -> dict[str, dict[str, list[str]]]:
        """Per applied policy, its pointers by op (``{"add": [...], "replace": [...]}``), in order."""
        out: dict[str, dict[str, list[str]]] = {}
        for mutation in self.applied:
            if not mutation.changes:
                continue
            ops = out.setdefault(mutation.policy, {})
            for change in mutation.changes:
                paths = ops.setdefault(change.op, [])
                if change.path not in paths:
                    paths.append(change.path)
        return out

    def to_dict(self, *, values: bool = True) -> dict[str, Any]:
        return {
            "applied": [m.to_dict(values=values) for m in self.applied],
            "notApplied": [n.to_dict() for n in self.not_applied],
        }


def describe(applied: Iterable[AppliedMutation], limit: int) -> str:
    """One line naming each mutation and the fields it changed, at most ``limit`` characters:
    ``add-team spec.mutations[0]: add /metadata/labels/team; set-cpu spec.mutations[1]: replace …``;
    fields that do not fit are counted (``… and 3 more fields``)."""
    parts: list[str] = []
    pending = [(m, c) for m in applied for c in m.changes]
    used = 0
    previous: AppliedMutation | None = None
    for position, (mutation, change) in enumerate(pending):
        field_text = f"{change.op} {change.path}"
        if mutation is not previous:
            head = " ".join(p for p in (mutation.policy, short_mutation_path(mutation.mutation)) if p)
            text = ("; " if parts else "") + f"{head}: {field_text}"
        else:
            text = f", {field_text}"
        after = len(pending) - position - 1  # room for the count of those after this one, should they not fit
        if used + len(text) + (len(_more_fields(after)) if after else 0) > limit:
            parts.append(_more_fields(after + 1))  # fits: the previous field left room for it
            break
        parts.append(text)
        used += len(text)
        previous = mutation
    return "".join(parts)


def short_mutation_path(path: str) -> str:
    """``spec.mutations[1]`` for ``spec.mutations[1].jsonPatch.expression``."""
    head, found, _ = path.partition("].")
    return head + "]" if found else path


def _more_fields(count: int) -> str:
    return f" … and {count} more field{'s' if count > 1 else ''}"


def _related(path: str, pointer: str) -> bool:
    """Whether two pointers are the same field or one contains the other (``…/-``, a JSONPatch append,
    stands for its list)."""
    path, pointer = path.removesuffix("/-"), pointer.rstrip("/").removesuffix("/-")
    return path == pointer or path.startswith(pointer + "/") or pointer.startswith(path + "/")


def _contains(path: str, pointer: str) -> bool:
    """Whether ``path`` is a field strictly around ``pointer`` (not an append: its index is not known)."""
    return not path.endswith("/-") and pointer.rstrip("/").startswith(path + "/")


def _narrowed(change: FieldChange, pointer: str) -> FieldChange | None:
    """``change`` as it concerns ``pointer``: itself when it is that field or inside it; the part of its
    value at ``pointer`` when it wrote a field around it (None when that value has no such field); a
    removal of ``pointer`` when it removed a field around it; None when unrelated."""
    if not _related(change.path, pointer):
        return None
    if not _contains(change.path, pointer):
        return change
    if change.op == "remove":
        return FieldChange("remove", pointer)
    value = change.value
    around, field = jsonutil.split_pointer(change.path) or (), jsonutil.split_pointer(pointer.rstrip("/")) or ()
    for token in field[len(around) :]:
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return None
    return FieldChange(change.op, pointer, value)


def changes_of(patch: Iterable[dict[str, Any]]) -> tuple[FieldChange, ...]:
    return tuple(FieldChange(op["op"], op["path"], op.get("value")) for op in patch)


_MISSING = object()
# The pointers of a patch in runs that share their first two tokens (a diff's patch comes grouped so):
# (those tokens, [(pointer, its other tokens), ...]), unescaped, in the patch's order.
Pointers = list[tuple[tuple[str, ...], list[tuple[str, tuple[str, ...]]]]]
_PREFIX = 2


def pointers_of(patch: Iterable[dict[str, Any]], tokens: PointerTokens | None = None) -> Pointers:
    """The pointers of a patch, split once for every policy :func:`attributed` looks them up in: a
    policy that left a run's common parent alone (``/metadata/annotations``) is passed over the whole
    run with one look. ``tokens`` remembers the split of each pointer across requests (an engine's:
    patches repeat the same pointers)."""
    out: Pointers = []
    for op in patch:
        path = op["path"]
        split = (tokens.tokens(path) if tokens is not None else jsonutil.split_pointer(path)) or ()
        prefix, rest = split[:_PREFIX], split[_PREFIX:]
        if out and out[-1][0] == prefix:
            out[-1][1].append((path, rest))
        else:
            out.append((prefix, [(path, rest)]))
    return out


def _child(node: Any, token: str) -> Any:
    if type(node) is dict:
        return node.get(token, _MISSING)
    if type(node) is list and token.isdigit() and int(token) < len(node):
        return node[int(token)]
    return _MISSING


def attributed(outcome: PolicyOutcome, pointers: Pointers) -> tuple[FieldChange, ...]:
    """The pointers of the admission's whole change (``pointers``, from :func:`pointers_of`) this
    policy took part in: each whose value differs between the object the policy received and the one it
    produced, as an ``add`` (absent before), ``remove`` (absent after) or ``replace``.

    The webhook's way to name each policy's fields: a walk down both objects per pointer that stops at
    the first subtree they share (copy-on-write) instead of a diff of the whole object per policy. A
    field a policy set and a later one removed is in neither."""
    return tuple(FieldChange(op, path, new) for op, path, new in _attributed(outcome, pointers))


def _attributed(outcome: PolicyOutcome, pointers: Pointers) -> list[tuple[str, str, Any]]:
    """:func:`attributed` as (op, pointer, new value) tuples."""
    before, after = outcome.before, outcome.after
    changes: list[tuple[str, str, Any]] = []
    if before is after:
        return changes
    for prefix, run in pointers:
        parent_old, parent_new = before, after
        for token in prefix:  # _child, inlined for dicts: these loops run per pointer and policy
            if parent_old is parent_new:
                break
            parent_old = parent_old.get(token, _MISSING) if type(parent_old) is dict else _child(parent_old, token)
            parent_new = parent_new.get(token, _MISSING) if type(parent_new) is dict else _child(parent_new, token)
        if parent_old is parent_new:  # the policy left the run's parent as it was: none of the run
            continue
        maps = type(parent_old) is dict and type(parent_new) is dict
        for path, tokens in run:
            if maps and len(tokens) == 1:  # a member of the parent (a label, an annotation): one look
                old, new = parent_old.get(tokens[0], _MISSING), parent_new.get(tokens[0], _MISSING)
            else:
                old, new = parent_old, parent_new
                for token in tokens:
                    if old is new:
                        break
                    old = old.get(token, _MISSING) if type(old) is dict else _child(old, token)
                    new = new.get(token, _MISSING) if type(new) is dict else _child(new, token)
            if old is new or (type(old) is type(new) and old == new):
                continue
            if old is _MISSING:
                changes.append(("add", path, new))
            elif new is _MISSING:
                changes.append(("remove", path, None))
            else:
                changes.append(("replace", path, new))
    return changes


def _applied(outcome: PolicyOutcome, trigger: str = "", pointers: Pointers | None = None) -> list[AppliedMutation]:
    steps: Sequence[MutationStep] | None = outcome.steps
    common: dict[str, Any] = {"binding": outcome.binding, "reinvoked": outcome.reinvoked, "trigger": trigger}
    if steps is None:
        if outcome.status != "applied":
            return []
        changes = attributed(outcome, pointers) if pointers is not None else changes_of(outcome.patch)
        return [AppliedMutation(outcome.policy, outcome.kind, "", None, changes, **common)]
    out: list[AppliedMutation] = []
    for step in steps:
        changes = changes_of(step.patch) if step.after is not step.before else ()
        kept = tuple(dict.fromkeys(c for c in step.claims if not any(_related(c, change.path) for change in changes)))
        if changes or kept:
            out.append(
                AppliedMutation(outcome.policy, outcome.kind, step.path, step.index, changes, kept=kept, **common)
            )
    return out


def not_applied(outcome: PolicyOutcome) -> NotApplied:
    return NotApplied(
        outcome.policy,
        outcome.kind,
        outcome.status,
        outcome.cause,
        outcome.cause_name,
        outcome.reason,
        outcome.failure_policy,
        outcome.path,
        outcome.binding,
    )


def from_outcomes(
    outcomes: Iterable[PolicyOutcome],
    final: dict[str, Any] | None = None,
    *,
    patch: Sequence[dict[str, Any]] | None = None,
    trigger: str = "",
) -> Provenance:
    """The provenance of one object from the outcomes of its policies, in evaluation order.

    ``final`` (the object admitted) reveals celmut's own change after the policies: the
    ``celmut.io/mutated-by`` summary, attributed to :data:`RECORDER`. A policy whose steps were not
    recorded (the engine was not asked to explain) is described by its own diff, or, given ``patch``
    (the admission's whole change), by the operations of ``patch`` it took part in (:func:`attributed`)."""
    applied: list[AppliedMutation] = []
    skipped: list[NotApplied] = []
    last: Any = None
    pointers = pointers_of(patch) if patch is not None else None
    for outcome in outcomes:
        status = outcome.status
        mutations = _applied(outcome, trigger, pointers) if status == "applied" or status == "unchanged" else []
        applied += mutations
        if outcome.status == "applied":
            last = outcome.after
        elif not mutations:  # an unchanged policy that writes fields already set is explained by them
            skipped.append(not_applied(outcome))
    if final is not None and last is not None and final is not last:
        recorded = diff(last, final)
        if recorded:
            applied.append(AppliedMutation(RECORDER, RECORDER, MUTATED_BY_ANNOTATION, None, changes_of(recorded)))
    return Provenance(tuple(applied), tuple(skipped))


def pointers_by_policy(
    outcomes: Sequence[PolicyOutcome],
    final: dict[str, Any] | None,
    patch: Sequence[dict[str, Any]],
    tokens: PointerTokens | None = None,
) -> tuple[dict[str, dict[str, list[str]]], set[str]] | None:
    """``from_outcomes(outcomes, final, patch=patch).by_policy()`` and the names of its applied
    mutations' policies, without building the records: what the webhook's audit annotations need, per
    request. None when an outcome recorded steps (explaining): use :func:`from_outcomes` then."""
    pointers = pointers_of(patch, tokens)
    out: dict[str, dict[str, list[str]]] = {}
    applied: set[str] = set()
    last: Any = None
    for outcome in outcomes:
        if outcome.steps is not None:
            return None
        if outcome.status != "applied":
            continue
        applied.add(outcome.policy)
        last = outcome.after
        _add_pointers(out, outcome.policy, _attributed(outcome, pointers))
    if final is not None and last is not None and final is not last:
        recorded = diff(last, final)
        if recorded:
            applied.add(RECORDER)
            _add_pointers(out, RECORDER, [(op["op"], op["path"], None) for op in recorded])
    return out, applied


def _add_pointers(out: dict[str, dict[str, list[str]]], policy: str, changes: list[tuple[str, str, Any]]) -> None:
    if not changes:
        return
    ops = out.setdefault(policy, {})
    for op, path, _ in changes:
        paths = ops.setdefault(op, [])
        if path not in paths:
            paths.append(path)
