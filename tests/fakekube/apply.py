"""Server-side apply (``PATCH`` with ``application/apply-patch+yaml``): field managers and ownership.

As in k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager (structured-merge-diff): every field an
``Apply`` sets is owned by its ``fieldManager`` (recorded in ``metadata.managedFields``, ``FieldsV1``);
a later apply by the same manager that no longer sets a field REMOVES it, unless another manager owns it
too; setting a field another manager owns to a different value is a 409 ``Conflict`` naming the manager
and the field, unless ``force=true``, which moves ownership to the applier. This is what makes a Helm 4
``--take-ownership`` (same manager ``helm``) strip annotations the previous release set, and what the
install tests rely on.

APPROXIMATED: lists are atomic (the real server merges ``x-kubernetes-list-type: map`` lists by key);
only ``Apply`` managers are tracked (writes by create/update/merge patch own nothing here, so they never
conflict); ``status`` and the server-set metadata are never owned.
"""

from __future__ import annotations

import copy
import datetime
from typing import Any

from . import errors

Obj = dict[str, Any]
Path = tuple[str, ...]

#: Fields the server sets or that identify the object: never owned, never removed by an apply.
UNOWNED: frozenset[Path] = frozenset(
    {
        ("apiVersion",),
        ("kind",),
        ("status",),
        ("metadata", "name"),
        ("metadata", "namespace"),
        ("metadata", "uid"),
        ("metadata", "resourceVersion"),
        ("metadata", "generation"),
        ("metadata", "creationTimestamp"),
        ("metadata", "deletionTimestamp"),
        ("metadata", "managedFields"),
        ("metadata", "selfLink"),
    }
)


def leaf_paths(value: Any, prefix: Path = ()) -> set[Path]:
    """The owned leaves of an applied configuration: maps recurse, anything else (lists too) is a leaf."""
    if prefix in UNOWNED:
        return set()
    if isinstance(value, dict) and value:
        out: set[Path] = set()
        for key, item in value.items():
            out |= leaf_paths(item, (*prefix, str(key)))
        return out
    return {prefix} if prefix else set()


def _get(obj: Any, path: Path) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


def _set(obj: Obj, path: Path, value: Any) -> None:
    for key in path[:-1]:
        child = obj.get(key)
        if not isinstance(child, dict):
            child = obj[key] = {}
        obj = child
    obj[path[-1]] = copy.deepcopy(value)


def _remove(obj: Obj, path: Path) -> None:
    parents = [obj]
    for key in path[:-1]:
        child = parents[-1].get(key)
        if not isinstance(child, dict):
            return
        parents.append(child)
    parents[-1].pop(path[-1], None)
    for depth in range(len(path) - 2, -1, -1):  # an emptied map goes too, as SMD prunes it
        if parents[depth + 1] == {} and depth + 1 < len(parents):
            parents[depth].pop(path[depth], None)


def _overlaps(a: Path, b: Path) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    """The ``fieldsV1`` trie of a field set (``{"f:metadata": {"f:labels": {"f:a": {}}}}``)."""
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for key in path:
            node = node.setdefault(f"f:{key}", {})
    return root


def from_fields_v1(trie: dict[str, Any], prefix: Path = ()) -> set[Path]:
    """The leaf paths of a ``fieldsV1`` trie."""
    children = {k: v for k, v in trie.items() if k.startswith("f:")}
    if not children:
        return {prefix} if prefix else set()
    out: set[Path] = set()
    for key, sub in children.items():
        out |= from_fields_v1(sub if isinstance(sub, dict) else {}, (*prefix, key[2:]))
    return out


def owners_of(obj: Obj) -> dict[str, set[Path]]:
    """manager -> the fields it owns by Apply, from ``metadata.managedFields``."""
    out: dict[str, set[Path]] = {}
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        if entry.get("operation") == "Apply":
            out[entry["manager"]] = from_fields_v1(entry.get("fieldsV1") or {})
    return out


def server_side_apply(current: Obj | None, applied: Obj, manager: str, force: bool) -> Obj:
    """The object after ``manager`` applies ``applied`` to ``current`` (None: created by the apply)."""
    if not manager:
        raise errors.ApiError(422, "fieldManager: Required value: is required for apply patch", "Invalid")
    base: Obj = copy.deepcopy(current) if current is not None else {}
    owners = owners_of(base)
    mine_before = owners.pop(manager, set())
    wanted = leaf_paths(applied)
    conflicts = [
        (other, path)
        for other, fields in sorted(owners.items())
        for path in sorted(wanted)
        if any(_overlaps(path, owned) for owned in fields) and _get(base, path) != _get(applied, path)
    ]
    if conflicts and not force:
        listed = "\n".join(f'- conflict with "{other}": .{".".join(path)}' for other, path in conflicts)
        raise errors.ApiError(
            409, f"Apply failed with {len(conflicts)} conflict{'s' if len(conflicts) > 1 else ''}:\n{listed}",
            "Conflict",
        )
    if force:
        for other in owners:
            owners[other] = {f for f in owners[other] if not any(_overlaps(f, p) for p in wanted)}
    for path in mine_before - wanted:  # no longer applied: removed, unless someone else owns it
        if not any(_overlaps(path, f) for fields in owners.values() for f in fields):
            _remove(base, path)
    for key in ("apiVersion", "kind"):
        if key in applied:
            base[key] = applied[key]
    meta = base.setdefault("metadata", {})
    for key in ("name", "namespace"):
        if key in (applied.get("metadata") or {}):
            meta[key] = applied["metadata"][key]
    for path in wanted:
        _set(base, path, _get(applied, path))
    owners[manager] = wanted
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    api_version = applied.get("apiVersion", base.get("apiVersion", ""))
    kept = [e for e in meta.get("managedFields") or [] if e.get("operation") != "Apply"]
    meta["managedFields"] = kept + [
        {"manager": name, "operation": "Apply", "apiVersion": api_version, "time": now,
         "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(fields)}
        for name, fields in sorted(owners.items())
        if fields
    ]
    return base
