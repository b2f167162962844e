"""The policies the reports cover, and one evaluation of one of them on one stored object.

Which policies (:func:`reported_policies`): those with background processing on are scanned — with
admission off too, as Kyverno's background scan evaluates every policy with background processing on —
the others with admission on are reported from the admissions the watches see; a MutatingAdmissionPolicy
needs a binding; ``reports.kyverno.io/disabled`` (or, on a MAP, no opt-in) leaves a policy out. Each
runs alone, in an engine of its own (its autogen variants with it), evaluated on the stored object as a
CREATE, as Kyverno's ``pkg/controllers/report/utils/scanner.go`` does (:func:`scan_object`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from celmut.compile.compiled import CompiledPolicy
from celmut.policy.match import ResourceRule
from celmut.runtime import AdmissionEngine, AdmissionInput
from celmut.runtime.report_results import (
    PROCESS_ADMISSION,
    PROCESS_BACKGROUND,
    PolicyReporting,
    ReportResult,
    exception_results_of,
    reporting_of,
    result_of,
)
from celmut.service.assembly import narrowed


@dataclass
class ReportedPolicy:
    """One reported policy: its reporting facts and an engine that runs it (and its autogen variants) alone."""

    reporting: PolicyReporting
    engine: AdmissionEngine
    resources: frozenset[tuple[str, str]]  # (apiVersion, plural) its matchConstraints name
    admission_only: bool = False  # background off: reported from admissions only ("admission review")
    source: dict[str, Any] = field(default_factory=dict, repr=False)  # the policy object (its Events name it)


def watched_resources(policy: CompiledPolicy) -> set[tuple[str, str]]:
    """(apiVersion, plural) of each resource a policy's resourceRules name exactly (wildcards and
    subresources are not listed: Kyverno's background scan lists kinds, never ``*``)."""
    rules = list(policy.match.resource_rules)
    for binding in policy.bindings:
        if binding.match is not None:
            rules += binding.match.resource_rules
    return rule_resources(rules)


def rule_resources(rules: Iterable[ResourceRule]) -> set[tuple[str, str]]:
    """(apiVersion, plural) of each resource ``rules`` name exactly (no wildcard, no subresource)."""
    out: set[tuple[str, str]] = set()
    for rule in rules:
        for group in rule.api_groups:
            for version in rule.api_versions:
                for resource in rule.resources:
                    if "*" in (group, version) or "*" in resource or "/" in resource:
                        continue
                    out.add((f"{group}/{version}" if group else version, resource))
    return out


def reported_policies(
    engine: AdmissionEngine, *, background: bool = True, admission: bool = True
) -> dict[str, ReportedPolicy]:
    """The policies of ``engine`` that get reports, by report key: with ``background``, those with
    background processing on (scanned); with ``admission``, the others with admission on (reported from
    the admissions the watches see)."""
    grouped: dict[str, list[CompiledPolicy]] = {}
    facts: dict[str, PolicyReporting] = {}
    scanned: dict[str, bool] = {}
    for policy in engine.policies:
        reporting = reporting_of(policy)
        scan = background and reporting.background
        if reporting.disabled or not (scan or (admission and reporting.admission)):
            continue
        scanned[reporting.key] = scan
        if policy.kind == "MutatingAdmissionPolicy" and not policy.bindings:
            continue
        grouped.setdefault(reporting.key, []).append(policy)
        facts[reporting.key] = reporting
    out: dict[str, ReportedPolicy] = {}
    for key, policies in grouped.items():
        resources: set[tuple[str, str]] = set()
        for policy in policies:
            resources |= watched_resources(policy)
        # the same settings, schemas and exceptions; a policy with admission off is scanned all the same
        # (Kyverno's background scan evaluates every policy with background processing on)
        scanned_as_created = [p if p.admission else dataclasses.replace(p, admission=True) for p in policies]
        engine_of_one = narrowed(engine, scanned_as_created)
        source = dict(getattr(policies[0].definition, "raw", None) or {})
        out[key] = ReportedPolicy(facts[key], engine_of_one, frozenset(resources), not scanned[key], source)
    return out


def scan_object(
    policy: ReportedPolicy, obj: dict[str, Any], now: int, admitted: tuple[str, dict[str, Any] | None] | None = None
) -> list[ReportResult]:
    """The results of one policy on one stored object: as a background scan sees it (a CREATE of the
    stored object), or, with ``admitted`` (operation, old object), as the admission that stored it did."""
    if admitted is None:
        request = AdmissionInput.from_object(obj, "CREATE")
        process = PROCESS_BACKGROUND
    else:
        operation, old = admitted
        request = AdmissionInput.from_object(obj, operation, old_object=old)
        process = PROCESS_ADMISSION
    outcomes = policy.engine.admit(request).outcomes
    reported_as = exception_results_of(policy.engine.exceptions)
    results = (
        result_of(o, policy.reporting, process, now, scanned=admitted is None, exception_results=reported_as)
        for o in outcomes
    )
    return [r for r in results if r is not None]


def admission_reported_resources(engine: AdmissionEngine, config: Any) -> frozenset[tuple[str, str]]:
    """The resources whose changes report a policy from its admissions (background processing off): their
    UPDATEs are evaluated with the previous object, so their caches keep whole objects. ``config``: the
    :class:`~celmut.controller.report_loop.ReportingConfig` (admission reports on, background reports on)."""
    if not config.admission:
        return frozenset()
    found: set[tuple[str, str]] = set()
    for policy in engine.policies:
        reporting = reporting_of(policy)
        if not reporting.disabled and reporting.admission and not (config.background and reporting.background):
            found |= watched_resources(policy)
    return frozenset(found)
