"""Label and field selectors with the real server's syntax and semantics.

* Label selectors (``labelSelector=``): ``k``, ``!k``, ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``,
  ``k notin (a,b)``, ``k>1``, ``k<1``; ``!=`` and ``notin`` also match objects without the key.
* ``metav1.LabelSelector`` objects (``matchLabels`` + ``matchExpressions``), as in PodDisruptionBudgets.
* Field selectors (``fieldSelector=``): ``=``, ``==``, ``!=`` on ``metadata.name``/``metadata.namespace``
  plus the few per-kind fields the real server indexes (e.g. ``spec.nodeName`` and ``status.phase`` of
  pods); any other field is a 400 ``field label not supported``, as on the real server.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .errors import bad_request

Obj = dict[str, Any]
Predicate = Callable[[Obj], bool]

_REQ_RE = re.compile(
    r"""^\s*(?:
        (?P<not>!)\s*(?P<nkey>[^\s=!<>(),]+)
      | (?P<skey>[^\s=!<>(),]+)\s+(?P<setop>in|notin)\s*\((?P<values>[^)]*)\)
      | (?P<key>[^\s=!<>(),]+)\s*(?:(?P<op>==|=|!=|>|<)\s*(?P<value>[^\s=!<>(),]*))?
    )\s*$""",
    re.VERBOSE,
)


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _labels(obj: Obj) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _requirement(text: str) -> Callable[[dict[str, str]], bool]:
    match = _REQ_RE.match(text)
    if not match:
        raise bad_request(f"unable to parse requirement: found '{text.strip()}', expected: label selector")
    if match.group("not"):
        nkey = match.group("nkey")
        return lambda labels: nkey not in labels
    if match.group("setop"):
        skey = match.group("skey")
        values = {v.strip() for v in match.group("values").split(",")}
        if match.group("setop") == "in":
            return lambda labels: skey in labels and labels[skey] in values
        return lambda labels: skey not in labels or labels[skey] not in values
    key, op, value = match.group("key"), match.group("op"), match.group("value") or ""
    if op is None:
        return lambda labels: key in labels
    if op in ("=", "=="):
        return lambda labels: labels.get(key) == value
    if op == "!=":
        return lambda labels: labels.get(key) != value
    try:
        bound = int(value)
    except ValueError:
        raise bad_request(
            f"unable to parse requirement: for 'gt', 'lt' operators, the value must be an integer: {value}"
        ) from None
    if op == ">":
        return lambda labels: key in labels and labels[key].lstrip("-").isdigit() and int(labels[key]) > bound
    return lambda labels: key in labels and labels[key].lstrip("-").isdigit() and int(labels[key]) < bound


def parse_label_selector(text: str | None) -> Predicate | None:
    """A predicate on objects for a ``labelSelector`` query string, or None when it selects everything."""
    if not text or not text.strip():
        return None
    requirements = [_requirement(part) for part in _split_top_level(text) if part.strip()]

    def matches(obj: Obj) -> bool:
        labels = _labels(obj)
        return all(req(labels) for req in requirements)

    return matches


def label_selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Whether a ``metav1.LabelSelector`` (matchLabels/matchExpressions) selects these labels.

    ``None`` selects nothing and ``{}`` everything (the policy/v1 PodDisruptionBudget semantics)."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), set(expr.get("values") or [])
        if op == "In" and not (key in labels and labels[key] in values):
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def label_selector_string(selector: dict[str, Any] | None) -> str:
    """The query-string form of a ``metav1.LabelSelector`` (as a Scale's ``status.selector``)."""
    if not selector:
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), ",".join(sorted(expr.get("values") or []))
        parts.append(
            {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key}.get(op, f"!{key}")
        )
    return ",".join(parts)


def _path(*keys: str) -> Callable[[Obj], str]:
    def get(obj: Obj) -> str:
        value: Any = obj
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return "" if value is None else str(value)

    return get


#: Per-kind fields beyond metadata.name / metadata.namespace that the real server supports.
_KIND_FIELDS: dict[str, dict[str, Callable[[Obj], str]]] = {
    "Pod": {
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": lambda o: "true" if (o.get("spec") or {}).get("hostNetwork") else "false",
        "status.phase": _path("status", "phase"),
        "status.podIP": _path("status", "podIP"),
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    "Event": {
        "involvedObject.kind": _path("involvedObject", "kind"),
        "involvedObject.namespace": _path("involvedObject", "namespace"),
        "involvedObject.name": _path("involvedObject", "name"),
        "involvedObject.uid": _path("involvedObject", "uid"),
        "involvedObject.apiVersion": _path("involvedObject", "apiVersion"),
        "involvedObject.resourceVersion": _path("involvedObject", "resourceVersion"),
        "involvedObject.fieldPath": _path("involvedObject", "fieldPath"),
        "reason": _path("reason"),
        "reportingComponent": _path("reportingComponent"),
        "source": _path("source", "component"),
        "type": _path("type"),
    },
    "Secret": {"type": _path("type")},
    "Node": {"spec.unschedulable": lambda o: "true" if (o.get("spec") or {}).get("unschedulable") else "false"},
    "Namespace": {"status.phase": _path("status", "phase")},
    "Job": {"status.successful": _path("status", "succeeded")},
}

_FIELD_RE = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*?)\s*$")


def parse_field_selector(text: str | None, kind: str) -> Predicate | None:
    """A predicate for a ``fieldSelector`` query string on objects of ``kind``, or None for everything."""
    if not text or not text.strip():
        return None
    fields: dict[str, Callable[[Obj], str]] = {
        "metadata.name": _path("metadata", "name"),
        "metadata.namespace": _path("metadata", "namespace"),
        **_KIND_FIELDS.get(kind, {}),
    }
    requirements: list[tuple[Callable[[Obj], str], bool, str]] = []
    for part in text.split(","):
        if not part.strip():
            continue
        match = _FIELD_RE.match(part)
        if not match:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        name, op, value = match.groups()
        if name not in fields:
            raise bad_request(f"field label not supported: {name}")
        requirements.append((fields[name], op != "!=", value))

    def matches(obj: Obj) -> bool:
        return all((getter(obj) == value) == equal for getter, equal, value in requirements)

    return matches


def combine(*predicates: Predicate | None) -> Predicate | None:
    """One predicate that holds when all given (non-None) predicates hold."""
    present = [p for p in predicates if p is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    return lambda obj: all(p(obj) for p in present)
