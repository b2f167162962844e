"""How ``celmut test`` compares a patched resource with the one a suite expects, as ``kyverno test``
does, and shows the difference.

``cmd/cli/kubectl-kyverno/commands/test/compare.go``: both sides get
``resource.FixupGenerateLabels`` (the labels map always carries ``app.kubernetes.io/managed-by:
kyverno`` unless set, ``generate.kyverno.io/*`` labels are dropped) and ``resource.Tidy`` (nulls,
empty maps and empty lists removed, recursively), then must be equal (their JSON merge patch is
``{}``: extra fields on either side differ, lists compare whole and in order, ``1`` equals ``1.0``).
Both sides are read with Kyverno's namespace defaulting, which puts every kind — cluster-scoped ones
too — in ``default`` (``resource/resource.go`` ``YamlToUnstructured``), so the expected document is
found by apiVersion, kind, namespace (``default`` when absent) and name
(``resource.GetResourceFromPath``).

A difference is shown as the unified diff ``kubectl diff`` prints, of the two tidied documents with
sorted keys (so key order never shows), from expected to actual.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from typing import Any

from celmut.cli import output
from celmut.cli.console import Palette
from celmut.jsonutil import json_equal

MANAGED_BY = "app.kubernetes.io/managed-by"
GENERATE_PREFIX = "generate.kyverno.io/"


def tidy(value: Any) -> Any:
    """Kyverno's tidy: drop nulls, empty maps and empty lists, recursively."""
    if isinstance(value, dict):
        out = {k: tidy(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [v for v in (tidy(v) for v in value) if v not in (None, {}, [])]
    return value


def identity(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    """apiVersion, kind, namespace (``default`` when absent, as Kyverno reads every file) and name."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    return (
        str(obj.get("apiVersion") or ""),
        str(obj.get("kind") or ""),
        str(meta.get("namespace") or "default"),
        str(meta.get("name") or ""),
    )


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def normalize(obj: dict[str, Any], *, managed_by: bool = True) -> dict[str, Any]:
    """``obj`` as Kyverno compares it: namespace defaulted, labels fixed up (``managed_by``: with the
    label Kyverno adds to both sides; a diff leaves it out), tidied, keys sorted."""
    meta = dict(obj.get("metadata") or {})
    meta["namespace"] = meta.get("namespace") or "default"
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if not str(k).startswith(GENERATE_PREFIX)}
    meta["labels"] = {MANAGED_BY: "kyverno", **labels} if managed_by else labels
    normalized: dict[str, Any] = _sorted(tidy({**obj, "metadata": meta}))
    return normalized


def find_expected(documents: Iterable[dict[str, Any]], actual: dict[str, Any]) -> dict[str, Any] | None:
    """The document of an expected file that stands for ``actual`` (same identity), if any."""
    wanted = identity(actual)
    return next((d for d in documents if identity(d) == wanted), None)


def matches(expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    return json_equal(normalize(expected), normalize(actual))


def diff(expected: dict[str, Any], actual: dict[str, Any], colors: Palette) -> str:
    """The unified diff from the expected document to the actual one (both normalized)."""
    before, after = normalize(expected, managed_by=False), normalize(actual, managed_by=False)
    return output.unified_diff(before, after, colors, labels=("expected", "actual"))


def json_diff(expected: Any, actual: Any, colors: Palette, name: str) -> str:
    """The unified diff between two JSON documents of any root type, as indented JSON with sorted keys."""
    old, new = (json.dumps(doc, indent=2, sort_keys=True).splitlines(keepends=True) for doc in (expected, actual))
    lines = difflib.unified_diff(old, new, f"expected/{name}", f"actual/{name}")
    out = []
    for line in lines:
        text = line.rstrip("\n")
        paint = colors.bold if line.startswith(("---", "+++")) else colors.cyan if line.startswith("@@") else None
        paint = paint or (colors.red if line.startswith("-") else colors.green if line.startswith("+") else None)
        out.append((paint(text) if paint else text) + "\n")
    return "".join(out)
