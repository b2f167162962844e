"""``celmut apply --policy-report``: the reports ``kyverno apply --policy-report`` prints.

As kyverno/kyverno ``cmd/cli/kubectl-kyverno/report/report.go`` builds them and
``commands/apply/command.go`` ``printReports`` prints them: the results of the cluster-wide policies
(MutatingPolicy, MutatingAdmissionPolicy) merged into one ``ClusterPolicyReport`` named ``merged``,
then, after ``---``, one ``PolicyReport`` per namespaced policy (named after it, in its namespace);
each result as ``pkg/utils/report/results.go`` ``ToPolicyReportResult`` makes it, with the resource
as its one subject; ``summary`` counts them. The CLI admits the resources, so a mutation that applies
is a ``pass`` (``success``); the ``process`` property follows the policy's evaluation settings
(``background scan`` unless background processing is off). Printed as YAML with sorted keys
(sigs.k8s.io/yaml), or JSON with ``-o json``. A policy that does not match a resource has no result.

mutateExisting targets (``--target-resources``) as ``processor/policy_processor.go`` reports them: one
result per (target, policy) evaluated, whose subject is the *trigger* (the engine response's
``Resource`` is the trigger; the target is only the rule's ``PatchedTarget``), ``pass`` whether or not
the target changed, ``skip``/``error`` as for the trigger. No ``patched-target`` property: the CLI's
``report.ComputePolicyReportResult`` calls ``ToPolicyReportResult`` alone; only the cluster's mutation
reports (``pkg/utils/report/results.go`` ``MutationEngineResponseToReportResults``) add it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import yaml

from celmut.runtime.report_objects import API_VERSION
from celmut.runtime.report_results import (
    PolicyReporting,
    ReportResult,
    process_of,
    reporting_of,
    result_of,
    sort_key,
    summary,
)

if TYPE_CHECKING:
    from celmut.compile.compiled import CompiledPolicy
    from celmut.runtime.mutate_existing import TargetResult
    from celmut.service.offline import ResourceRun


def _subject(resource: dict[str, Any]) -> dict[str, Any]:
    """corev1.ObjectReference of the resource (empty fields left out, as omitempty does)."""
    metadata = resource.get("metadata") or {}
    ref = {
        "apiVersion": resource.get("apiVersion"),
        "kind": resource.get("kind"),
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "resourceVersion": metadata.get("resourceVersion"),
        "uid": metadata.get("uid"),
    }
    return {k: v for k, v in ref.items() if v}


def reports(
    runs: Sequence[ResourceRun],
    policies: Sequence[CompiledPolicy],
    now: int | None = None,
    scanned: Sequence[TargetResult] = (),
    exception_results: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The ClusterPolicyReport ``merged`` (when a cluster-wide policy has a result), then one
    PolicyReport per namespaced policy with results. ``scanned``: the targets of mutateExisting policies
    with admission off (celmut evaluates them once, without a trigger); Kyverno's CLI evaluates the
    targets within each input resource's pass, so each is reported once per input resource, about it.
    ``exception_results``: each PolicyException's ``reportResult`` by ``namespace/name`` (``pass``: a pass)."""
    stamp = int(time.time()) if now is None else now
    facts: dict[str, tuple[PolicyReporting, str]] = {}
    for policy in policies:
        reporting = reporting_of(policy)
        facts[policy.display_name] = (reporting, policy.namespace)
    clustered: list[tuple[ReportResult, dict[str, Any]]] = []
    namespaced: dict[tuple[str, str], list[tuple[ReportResult, dict[str, Any]]]] = {}
    for run in runs:
        subject = _subject(run.resource)
        # the resource's own outcomes, then its mutateExisting targets' (reported about the resource)
        outcomes = [*run.result.outcomes, *(target.outcome for target in [*run.targets, *scanned])]
        for outcome in outcomes:
            if outcome.policy not in facts:
                continue
            reporting, namespace = facts[outcome.policy]
            result = result_of(
                outcome, reporting, process_of(reporting), stamp, scanned=False, exception_results=exception_results
            )
            if result is None:
                continue
            if namespace:
                namespaced.setdefault((namespace, reporting.key.split("/", 1)[-1]), []).append((result, subject))
            else:
                clustered.append((result, subject))
    out = []
    if clustered:
        out.append(_report("ClusterPolicyReport", "merged", "", clustered))
    for (namespace, name), found in sorted(namespaced.items()):
        out.append(_report("PolicyReport", name, namespace, found))
    return out


def _report(kind: str, name: str, namespace: str, found: list[tuple[ReportResult, dict[str, Any]]]) -> dict[str, Any]:
    ordered = sorted(found, key=lambda pair: sort_key(pair[0]))
    results = []
    for result, subject in ordered:
        entry = result.to_dict()
        entry["subjects"] = [subject]
        results.append(entry)
    metadata: dict[str, Any] = {"creationTimestamp": None, "name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": metadata,
        "results": results,
        "summary": summary(r for r, _ in ordered),
    }


def render(found: Sequence[dict[str, Any]], fmt: str) -> str:
    """As printReports prints them: each report, a ``---`` line before each PolicyReport."""
    text = []
    for report in found:
        if report["kind"] == "PolicyReport":
            text.append("---\n")
        body = json.dumps(report) if fmt == "json" else yaml.safe_dump(report, sort_keys=True, width=1 << 20)
        text.append(body + "\n")  # fmt.Fprintln
    return "".join(text)
