"""Per-resource PolicyReport / ClusterPolicyReport objects, as Kyverno's reports controller writes them.

One report per resource (kyverno ``pkg/controllers/report/aggregate/resource``): a namespaced
resource gets a ``PolicyReport`` in its namespace, a cluster-scoped one a ``ClusterPolicyReport``;
``scope`` names the resource, one ownerReference points at it (the garbage collector deletes the
report with the resource), ``summary`` counts the results, the results are sorted as
``pkg/utils/report/results.go`` ``SortReportResults`` sorts them. Kyverno names the report after the
resource's UID; next to Kyverno celmut prefixes it (``celmut-<uid>``) so neither overwrites the
other's, and labels it ``app.kubernetes.io/managed-by: celmut`` (Kyverno's reports carry ``kyverno``).

The wgpolicyk8s.io ``v1alpha2`` API is the one Kyverno 1.15+ writes by default (openreports.io only
behind its ``--openreportsEnabled`` flag).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from celmut.runtime.report_results import ReportResult, sort_key, summary

GROUP = "wgpolicyk8s.io"
VERSION = "v1alpha2"
API_VERSION = f"{GROUP}/{VERSION}"
NAMESPACED = ("PolicyReport", "policyreports")
CLUSTER = ("ClusterPolicyReport", "clusterpolicyreports")
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_CELMUT = "celmut"
MAX_RESULTS = 1000  # results per report; the rest are dropped (one object stays well under etcd's limit)


@dataclass(frozen=True, slots=True)
class ResourceRef:
    """The resource a report is about."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ResourceRef | None:
        """The reference of a stored object (None without a UID: nothing to own a report). Its strings
        are interned: a controller holds one per resource, beside the same strings in its caches."""
        metadata = obj.get("metadata") or {}
        uid = str(metadata.get("uid") or "")
        if not uid:
            return None
        return cls(
            sys.intern(str(obj.get("apiVersion", ""))),
            sys.intern(str(obj.get("kind", ""))),
            sys.intern(str(metadata.get("namespace") or "")),
            sys.intern(str(metadata.get("name") or "")),
            sys.intern(uid),
        )

    @property
    def report_kind(self) -> tuple[str, str]:
        """(kind, plural) of the report about this resource."""
        return NAMESPACED if self.namespace else CLUSTER

    def scope(self) -> dict[str, Any]:
        out = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        out["uid"] = self.uid
        return out


def report_name(ref: ResourceRef, prefix: str = "") -> str:
    """Kyverno's name (the resource UID), with celmut's prefix when living next to Kyverno."""
    return f"{prefix}{ref.uid}"


def bounded(results: Iterable[ReportResult], limit: int = MAX_RESULTS) -> tuple[list[ReportResult], int]:
    """The results sorted as Kyverno sorts them, at most ``limit``; and how many were dropped."""
    ordered = sorted(results, key=sort_key)
    return ordered[:limit], max(0, len(ordered) - limit)


def build_report(
    ref: ResourceRef, results: Iterable[ReportResult], *, prefix: str = "", limit: int = MAX_RESULTS
) -> dict[str, Any]:
    """The report object about ``ref`` holding ``results``."""
    kept, _ = bounded(results, limit)
    kind, _plural = ref.report_kind
    metadata: dict[str, Any] = {
        "name": report_name(ref, prefix),
        "labels": {MANAGED_BY: MANAGED_BY_CELMUT},
        "ownerReferences": [{"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name, "uid": ref.uid}],
    }
    if ref.namespace:
        metadata["namespace"] = ref.namespace
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": metadata,
        "scope": ref.scope(),
        "summary": summary(kept),
        "results": [r.to_dict() for r in kept],
    }


def results_of(report: Mapping[str, Any]) -> list[ReportResult]:
    """The results of a stored report."""
    return [ReportResult.from_dict(r) for r in report.get("results") or [] if isinstance(r, Mapping)]


def ref_of(report: Mapping[str, Any]) -> ResourceRef | None:
    """The resource a stored report is about (its scope)."""
    scope = report.get("scope") or {}
    if not isinstance(scope, Mapping) or not scope.get("uid"):
        return None
    return ResourceRef(
        str(scope.get("apiVersion", "")),
        str(scope.get("kind", "")),
        str(scope.get("namespace") or ""),
        str(scope.get("name", "")),
        str(scope["uid"]),
    )
