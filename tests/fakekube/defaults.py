"""Fields the server fills in itself: timestamps, a pod's initial status, a CRD's status."""

from __future__ import annotations

import time
from typing import Any

Obj = dict[str, Any]


def now() -> str:
    """The current time as the API server formats ``metav1.Time``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def qos_class(pod: Obj) -> str:
    """The ``status.qosClass`` the server computes on pod creation."""
    containers = (pod.get("spec") or {}).get("containers") or []
    resources = [c.get("resources") or {} for c in containers if isinstance(c, dict)]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    for res in resources:
        limits, requests = res.get("limits") or {}, res.get("requests") or {}
        if not all(limits.get(k) and requests.get(k, limits[k]) == limits[k] for k in ("cpu", "memory")):
            return "Burstable"
    return "Guaranteed"


def crd_status(crd: Obj, old_status: Obj | None = None) -> Obj:
    """A CRD's status: Established and NamesAccepted at once, acceptedNames and storedVersions."""
    spec = crd.get("spec") or {}
    stored = list((old_status or {}).get("storedVersions") or [])
    for ver in spec.get("versions") or []:
        if ver.get("storage") and ver.get("name") not in stored:
            stored.append(ver["name"])
    stamp = now()
    conditions = [
        {
            "type": "NamesAccepted",
            "status": "True",
            "reason": "NoConflicts",
            "message": "no conflicts found",
            "lastTransitionTime": stamp,
        },
        {
            "type": "Established",
            "status": "True",
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
            "lastTransitionTime": stamp,
        },
    ]
    old_conditions = (old_status or {}).get("conditions")
    return {
        "conditions": old_conditions or conditions,
        "acceptedNames": spec.get("names") or {},
        "storedVersions": stored,
    }


def admission_policy_defaults(obj: Obj) -> Obj:
    """A MutatingAdmissionPolicy as the API server stores it (kubernetes
    ``pkg/apis/admissionregistration/v1/defaults.go``: ``failurePolicy`` Fail; ``SetDefaults_MatchResources``:
    ``matchPolicy`` Equivalent, empty namespace and object selectors; ``SetDefaults_Rule``: ``scope`` "*")."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    spec.setdefault("failurePolicy", "Fail")
    match = spec.get("matchConstraints")
    if isinstance(match, dict):
        match.setdefault("matchPolicy", "Equivalent")
        match.setdefault("namespaceSelector", {})
        match.setdefault("objectSelector", {})
        for rules in ("resourceRules", "excludeResourceRules"):
            for rule in match.get(rules) or []:
                if isinstance(rule, dict):
                    rule.setdefault("scope", "*")
    return obj
