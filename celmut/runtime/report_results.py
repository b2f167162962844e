"""Policy report results, as Kyverno builds them for MutatingPolicies and MutatingAdmissionPolicies.

Pure: a :class:`~celmut.runtime.results.PolicyOutcome` in, a :class:`ReportResult` out. Every field
follows Kyverno (kyverno/kyverno):

* ``pkg/cel/policies/mpol/engine/engine.go`` ``handlePolicy`` — what one MutatingPolicy decides: no
  result when the matchConstraints leave the resource out; ``skip`` / message ``skip`` when a
  matchCondition is false; ``error`` (rule ``evaluation``, ``failed to evaluate policy: <error>``);
  ``skip`` for an exception (rule ``exception``, ``rule is skipped due to policy exception: ns/name``,
  property ``exceptions``: the exception names) — ``pass`` / ``rule is passed due to policy exception``
  when the exception's ``reportResult`` is ``pass``; otherwise ``pass`` / ``success``;
* ``pkg/controllers/report/utils/scanner.go`` ``ScanResource`` — in a background scan a pass whose
  patched resource differs from the stored one becomes ``fail`` / ``mutation is not applied``
  (rule ``""``); the scan admits the stored object as a CREATE;
* ``pkg/utils/report/results.go`` ``ToPolicyReportResult`` — ``source`` ``KyvernoMutatingPolicy``
  (``MutatingAdmissionPolicy`` for a MAP, whose ``policy`` and ``rule`` are the MAP's name and whose
  binding is the ``mapBinding`` property), ``policy`` is the namespace/name key, ``scored`` unless the
  ``policies.kyverno.io/scored`` annotation is ``"false"`` (an unscored ``fail`` is a ``warn``),
  ``category`` and ``severity`` from the ``policies.kyverno.io/category``/``severity`` annotations,
  ``timestamp`` in seconds, the policy's evaluated ``auditAnnotations`` as properties, and the ``process``
  property: ``background scan`` or ``admission review``
  (as the chainsaw tests ``mutating-policies/reporting/standard-background-policy-creation`` and
  ``.../admission`` assert it).

:func:`result_of` is the one adapter from the runtime's outcome to a report result: when the runtime
reports per-policy outcomes differently, only it changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from celmut.compile.compiled import CompiledException, CompiledPolicy
    from celmut.runtime.results import PolicyOutcome

Result = Literal["pass", "fail", "warn", "error", "skip"]
RESULTS: tuple[Result, ...] = ("pass", "fail", "warn", "error", "skip")

SOURCE_MUTATING_POLICY = "KyvernoMutatingPolicy"  # kyverno pkg/utils/report/source.go SourceMutatingPolicy
SOURCE_MUTATING_ADMISSION_POLICY = "MutatingAdmissionPolicy"  # ... SourceMutatingAdmissionPolicy
PROCESS_BACKGROUND = "background scan"
PROCESS_ADMISSION = "admission review"

ANNOTATION_SCORED = "policies.kyverno.io/scored"  # kyverno api/kyverno/annotations.go
ANNOTATION_CATEGORY = "policies.kyverno.io/category"
ANNOTATION_SEVERITY = "policies.kyverno.io/severity"
# kyverno pkg/utils/report/labels.go LabelExcludeReporting: a *label*, whatever its value (chainsaw
# mutating-admission-policy-reports/background/generated-reporting-opt-in "disabled-wins": 'false' disables)
LABEL_REPORTS_DISABLED = "reports.kyverno.io/disabled"
# native MutatingAdmissionPolicies are reported only when opted in with this label set to "true" (chainsaw
# mutating-admission-policy-reports/background/generated-reporting-opt-in "false-is-not-opt-in"; the policies
# of with-binding-pass and with-binding-fail carry it); Kyverno's own kinds are reported unless disabled
LABEL_REPORTS_ENABLED = "reports.kyverno.io/enabled"
SEVERITIES = ("critical", "high", "medium", "low", "info")  # results.go SeverityFromString

MESSAGE_NOT_APPLIED = "mutation is not applied"  # scanner.go
MESSAGE_PASS = "success"  # mpol engine.go
MESSAGE_MAP_PASS = "mutation is successfully applied"  # kyverno pkg/admissionpolicy/mutate.go
MESSAGE_SKIP = "skip"  # mpol engine.go: a matchCondition left the resource out
MAX_MESSAGE = 4096  # characters: one error message never fills a report (etcd's object limit)


@dataclass(frozen=True)
class PolicyReporting:
    """What a report needs to know about one policy (from its definition, once per load)."""

    key: str  # the report's ``policy``: ``name`` or ``namespace/name`` (cache.MetaNamespaceKeyFunc)
    source: str
    scored: bool = True
    category: str = ""
    severity: str = ""
    disabled: bool = False  # label reports.kyverno.io/disabled (on a MAP: no reports.kyverno.io/enabled "true")
    background: bool = True  # spec.evaluation.background.enabled (always on for a MAP)
    admission: bool = True


def reporting_of(policy: CompiledPolicy) -> PolicyReporting:
    """The reporting facts of a compiled policy (an autogen variant reports as its policy)."""
    definition = policy.definition
    raw: Mapping[str, Any] = getattr(definition, "raw", None) or {}
    metadata = raw.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    labels = metadata.get("labels") or {}
    is_map = policy.kind == "MutatingAdmissionPolicy"
    evaluation = getattr(definition, "evaluation", None)
    severity = str(annotations.get(ANNOTATION_SEVERITY, ""))
    return PolicyReporting(
        key=f"{policy.namespace}/{policy.name}" if policy.namespace else policy.name,
        source=SOURCE_MUTATING_ADMISSION_POLICY if is_map else SOURCE_MUTATING_POLICY,
        scored=annotations.get(ANNOTATION_SCORED) != "false",
        category=str(annotations.get(ANNOTATION_CATEGORY, "")),
        severity=severity if severity in SEVERITIES else "",
        disabled=LABEL_REPORTS_DISABLED in labels or (is_map and labels.get(LABEL_REPORTS_ENABLED) != "true"),
        background=bool(getattr(evaluation, "background", True)) if not is_map else True,
        admission=policy.admission,
    )


@dataclass(frozen=True, slots=True)
class ReportResult:
    """One entry of a report's ``results`` (wgpolicyk8s.io v1alpha2 PolicyReportResult)."""

    policy: str
    result: Result
    message: str
    source: str
    rule: str = ""
    properties: tuple[tuple[str, str], ...] = ()
    scored: bool = True
    category: str = ""
    severity: str = ""
    timestamp: int = 0  # seconds

    def same_as(self, other: ReportResult) -> bool:
        """Equal but for the timestamp: rewriting it alone is not worth a write."""
        return self.without_timestamp() == other.without_timestamp()

    def without_timestamp(self) -> tuple[Any, ...]:
        return (
            self.policy,
            self.rule,
            self.result,
            self.message,
            self.source,
            self.properties,
            self.scored,
            self.category,
            self.severity,
        )

    def to_dict(self) -> dict[str, Any]:
        """The result as Kyverno serialises it (empty optional fields left out)."""
        out: dict[str, Any] = {}
        if self.category:
            out["category"] = self.category
        out["message"] = self.message
        out["policy"] = self.policy
        if self.properties:
            out["properties"] = dict(self.properties)
        out["result"] = self.result
        if self.rule:
            out["rule"] = self.rule
        out["scored"] = self.scored
        if self.severity:
            out["severity"] = self.severity
        out["source"] = self.source
        out["timestamp"] = {"nanos": 0, "seconds": self.timestamp}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReportResult:
        """A result read back from a stored report (to keep its timestamp when nothing changed)."""
        stamp = data.get("timestamp") or {}
        result = str(data.get("result", "skip"))
        return cls(
            policy=str(data.get("policy", "")),
            result=result if result in RESULTS else "skip",
            message=str(data.get("message", "")),
            source=str(data.get("source", "")),
            rule=str(data.get("rule", "")),
            properties=tuple(sorted((str(k), str(v)) for k, v in (data.get("properties") or {}).items())),
            scored=bool(data.get("scored", True)),
            category=str(data.get("category", "")),
            severity=str(data.get("severity", "")),
            timestamp=int(stamp.get("seconds", 0) or 0) if isinstance(stamp, Mapping) else 0,
        )


def result_of(
    outcome: PolicyOutcome,
    policy: PolicyReporting,
    process: str,
    now: int,
    *,
    scanned: bool | None = None,
    exception_results: Mapping[str, str] | None = None,
) -> ReportResult | None:
    """The report result of one policy outcome, or None when Kyverno reports nothing (the policy does
    not match the resource). ``process`` is the ``process`` property; ``scanned`` (default: whether
    ``process`` is a background scan) whether the outcome comes from a scan of a stored resource, where a
    change the policy would make is a ``fail``, rather than an admission, where it was applied.
    ``exception_results``: each PolicyException's ``spec.reportResult`` by ``namespace/name`` (``pass``
    turns the exception's ``skip`` into a ``pass``, chainsaw ``with-exception-pass-result``)."""
    if scanned is None:
        scanned = process == PROCESS_BACKGROUND
    properties: dict[str, str] = {"process": process}
    if outcome.binding:
        properties["mapBinding"] = outcome.binding
    if outcome.status in ("applied", "unchanged"):
        properties.update(audit_properties(outcome.audit_annotations, policy.key.rsplit("/", 1)[-1]))
    rule = policy.key if policy.source == SOURCE_MUTATING_ADMISSION_POLICY else ""
    result: Result
    if outcome.status == "error":
        result, rule = "error", rule or "evaluation"
        where = f"{outcome.path}: " if outcome.path else ""
        message = f"failed to evaluate policy: {where}{outcome.reason}"
    elif outcome.status == "excepted":
        name = outcome.cause_name or outcome.reason
        properties["exceptions"] = name.rsplit("/", 1)[-1]
        if (exception_results or {}).get(name) == "pass":
            result, rule, message = "pass", "exception", f"rule is passed due to policy exception: {name}"
        else:
            result, rule, message = "skip", "exception", f"rule is skipped due to policy exception: {name}"
    elif outcome.status == "skipped":
        if outcome.cause not in ("matchCondition", "targetMatchCondition"):
            return None  # not matched (constraints, namespace, binding): Kyverno has no rule response
        result, message = "skip", MESSAGE_SKIP
    elif outcome.status == "applied" and scanned:
        result, message = "fail", MESSAGE_NOT_APPLIED
    else:  # applied at admission, or nothing left to change
        result = "pass"
        message = MESSAGE_MAP_PASS if policy.source == SOURCE_MUTATING_ADMISSION_POLICY else MESSAGE_PASS
    if result == "fail" and not policy.scored:
        result = "warn"
    return ReportResult(
        policy=policy.key,
        result=result,
        message=message[:MAX_MESSAGE],
        source=policy.source,
        rule=rule,
        properties=tuple(sorted(properties.items())),
        scored=policy.scored,
        category=policy.category,
        severity=policy.severity,
        timestamp=now,
    )


def exception_results_of(exceptions: Iterable[CompiledException]) -> dict[str, str]:
    """Each PolicyException's ``spec.reportResult`` by ``namespace/name`` (the name an excepted outcome
    carries), for :func:`result_of`."""
    return {f"{e.namespace}/{e.name}" if e.namespace else e.name: e.report_result for e in exceptions}


PATCHED_TARGET = "patched-target"  # the property naming a target mutateExisting patched


def patched_target(target: Mapping[str, Any]) -> str:
    """results.go ``getResourceInfo``: ``<group>/<version>, Kind=<kind> Name=<name>[ Namespace=<ns>]`` (Go's
    ``schema.GroupVersionKind.String()``, so a core kind reads ``/v1, Kind=ConfigMap``)."""
    api_version = str(target.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    metadata = target.get("metadata") or {}
    info = f"{group}/{version}, Kind={target.get('kind', '')} Name={metadata.get('name', '')}"
    namespace = metadata.get("namespace")
    return f"{info} Namespace={namespace}" if namespace else info


def mutate_existing_result(policy: PolicyReporting, target: Mapping[str, Any], now: int) -> ReportResult:
    """The result Kyverno reports on a target its mutateExisting patched (pkg/background/mpol/processor.go
    ``audit``: a report on the target, built by ``MutationEngineResponseToReportResults``): ``pass`` /
    ``success``, the policy's process, and the ``patched-target`` property."""
    properties = {"process": process_of(policy), PATCHED_TARGET: patched_target(target)}
    return ReportResult(
        policy=policy.key,
        result="pass",
        message=MESSAGE_PASS,
        source=policy.source,
        properties=tuple(sorted(properties.items())),
        scored=policy.scored,
        category=policy.category,
        severity=policy.severity,
        timestamp=now,
    )


def audit_properties(annotations: Mapping[str, str], policy_name: str) -> dict[str, str]:
    """A MutatingPolicy's evaluated ``auditAnnotations`` as report properties, under their own keys (the
    mpol engine hands them to the rule response as its properties, which ``ToPolicyReportResult`` copies;
    chainsaw ``mutating-policies/reporting/audit-annotations``). The runtime keys them
    ``<policy>.<key>``, as the API server's audit log does."""
    prefix = f"{policy_name}."
    return {
        (key[len(prefix) :] if key.startswith(prefix) else key.partition(".")[2] or key): value
        for key, value in annotations.items()
    }


def process_of(policy: PolicyReporting) -> str:
    """results.go selectProcess: ``background scan`` when the policy has background processing on, else
    ``admission review`` when it has admission on (what Kyverno's CLI reports)."""
    if policy.background:
        return PROCESS_BACKGROUND
    return PROCESS_ADMISSION if policy.admission else ""


def sort_key(result: ReportResult) -> tuple[str, str, str, int]:
    """kyverno pkg/utils/report/results.go SortReportResults: policy, rule, source, timestamp."""
    return (result.policy, result.rule, result.source, result.timestamp)


def summary(results: Iterable[ReportResult]) -> dict[str, int]:
    """results.go CalculateSummary."""
    counts = dict.fromkeys(("error", "fail", "pass", "skip", "warn"), 0)
    for result in results:
        counts[result.result] += 1
    return counts
