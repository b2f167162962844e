"""Label selector evaluation (``matchLabels`` and ``matchExpressions``)."""

from __future__ import annotations

from collections.abc import Mapping

from celmut.policy.match import LabelSelector


def matches(selector: LabelSelector | None, labels: Mapping[str, str] | None) -> bool:
    """Whether ``labels`` satisfy ``selector``; an empty or absent selector matches everything."""
    if selector is None or selector.is_empty:
        return True
    labels = labels or {}
    for key, value in selector.match_labels:
        if labels.get(key) != value:
            return False
    for requirement in selector.match_expressions:
        present = requirement.key in labels
        operator = requirement.operator
        if operator == "In":
            if not present or labels[requirement.key] not in requirement.values:
                return False
        elif operator == "NotIn":
            if present and labels[requirement.key] in requirement.values:
                return False
        elif operator == "Exists":
            if not present:
                return False
        elif operator == "DoesNotExist" and present:
            return False
    return True


def labels_of(obj: Mapping[str, object] | None) -> dict[str, str]:
    if not obj:
        return {}
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        return {}
    labels = metadata.get("labels")
    return dict(labels) if isinstance(labels, Mapping) else {}
