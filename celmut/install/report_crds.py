"""The ``wgpolicyk8s.io`` v1alpha2 report kinds: PolicyReport and ClusterPolicyReport.

As the Policy WG defines them (kubernetes-sigs/wg-policy-prototypes ``policy-report/crd/v1alpha2``,
the CRDs Kyverno's chart ships in ``charts/kyverno/charts/crds/templates/wgpolicyk8s.io``): the
``scope`` object reference, ``scopeSelector``, ``summary`` (pass/fail/warn/error/skip) and
``results`` (source, policy, rule, category, severity, timestamp, result, scored, subjects,
resourceSelector, message, properties), with Kyverno's short names ``polr``/``cpolr`` and its printer
columns. Descriptions are shortened.

They are installed like the Kyverno policy CRDs (:mod:`celmut.install.crds`): only while absent (or
ours), annotated ``helm.sh/resource-policy: keep``, so Kyverno's chart, Policy Reporter or any other
owner keeps its own and celmut never deletes the reports in them.
"""

from __future__ import annotations

from celmut.install import schema as s
from celmut.install.crd import CRD, Version

GROUP = "wgpolicyk8s.io"
KEEP = (("helm.sh/resource-policy", "keep"),)
_RESULTS = ("pass", "fail", "warn", "error", "skip")


def _object_reference(description: str) -> s.Schema:
    return s.obj(
        {
            "apiVersion": s.string("API version of the referent."),
            "fieldPath": s.string("A piece of the object, e.g. spec.containers{name}."),
            "kind": s.string("Kind of the referent."),
            "name": s.string("Name of the referent."),
            "namespace": s.string("Namespace of the referent."),
            "resourceVersion": s.string("Specific resourceVersion of the referent."),
            "uid": s.string("UID of the referent."),
        },
        description,
        **{"x-kubernetes-map-type": "atomic"},
    )


def _result() -> s.Schema:
    return s.obj(
        {
            "category": s.string("The policy category (policies.kyverno.io/category)."),
            "message": s.string("A short user friendly description of the policy rule."),
            "policy": s.string("The name or identifier of the policy."),
            "properties": s.string_map("Additional information for the policy rule."),
            "resourceSelector": s.label_selector("Selects the resources this result applies to."),
            "resources": s.arr(_object_reference("A resource the result applies to."), "Subjects (legacy)."),
            "result": s.string("The result of the policy rule.", enum=_RESULTS),
            "rule": s.string("The name or identifier of the rule within the policy."),
            "scored": s.boolean("False for a rule that is not scored (informational)."),
            "severity": s.string(
                "The severity of the policy (policies.kyverno.io/severity).",
                enum=("critical", "high", "low", "medium", "info"),
            ),
            "source": s.string("The policy engine that produced the result."),
            "subjects": s.arr(_object_reference("A subject of the result."), "The subjects of the result."),
            "timestamp": s.obj(
                {
                    "nanos": s.integer("Non-negative fractions of a second at nanosecond resolution."),
                    "seconds": s.integer("Seconds of UTC time since the Unix epoch.", format="int64"),
                },
                "When the result was found.",
            ),
        },
        "One result of a policy rule on the report's scope.",
        required=("policy",),
    )


def _summary() -> s.Schema:
    return s.obj(
        {n: s.integer(f"Number of results with status {n}.") for n in ("error", "fail", "pass", "skip", "warn")},
        "The number of results by status.",
    )


def _schema(kind: str) -> s.Schema:
    return s.obj(
        {
            "apiVersion": s.string("The versioned schema of this representation of an object."),
            "kind": s.string("The REST resource this object represents."),
            "metadata": {"type": "object"},
            "results": s.arr(_result(), "The policy results."),
            "scope": _object_reference("The object the report is about."),
            "scopeSelector": s.label_selector("Selects the objects the report is about."),
            "summary": _summary(),
        },
        f"{kind}: the results of policies on a scope.",
    )


_COLUMNS = tuple(
    [
        {"jsonPath": ".scope.kind", "name": "Kind", "type": "string", "priority": 1},
        {"jsonPath": ".scope.name", "name": "Name", "type": "string", "priority": 1},
    ]
    + [{"jsonPath": f".summary.{n}", "name": n.capitalize(), "type": "integer"} for n in _RESULTS]
    + [{"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"}]
)


def _report(kind: str, plural: str, short: str, scope: str) -> CRD:
    version = Version("v1alpha2", _schema(kind), storage=True, printer_columns=_COLUMNS, status_subresource=False)
    return CRD(GROUP, kind, plural, scope, (version,), short_names=(short,), annotations=KEEP)


def report_crds() -> list[CRD]:
    return [
        _report("PolicyReport", "policyreports", "polr", "Namespaced"),
        _report("ClusterPolicyReport", "clusterpolicyreports", "cpolr", "Cluster"),
    ]
