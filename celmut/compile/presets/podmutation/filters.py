"""PodMutation filters as one CEL condition (the policy variable ``matches``).

* Every specified criterion must hold (AND); a PodMutation without filters matches every pod.
  ``filterV2`` and the legacy ``filter`` may both be given: both must match.
* A list of matchers matches when **any** matcher matches; ``exclude*`` lists negate that.
* ``exact`` compares strings. ``regex`` is an RE2 **full match**: the pattern is anchored as
  ``^(?:pattern)$`` (so ``team-.*`` does not match ``my-team-a``; patterns already written as
  ``^…$`` mean the same).
* Namespaces compare ``request.namespace``; workload names and kinds compare
  ``variables.workloadName`` / ``variables.workloadKind`` (see
  :func:`celmut.compile.presets.placement.workload_variables`: owner lookups first, name
  derivation as the fallback, ``Pod`` for a pod without a controller).
* Pod labels are ``object.metadata.?labels.orValue({})`` (``variables.podLabels``). A label matcher
  matches when some label's key **and** its value both match; operator ``and`` (the default) needs
  every matcher, ``or`` any. ``excludeLabels`` negates its group.
* Legacy string lists are **exact** matches, and legacy ``{key, value}`` pairs are exact key and
  exact value.
"""

from __future__ import annotations

from collections.abc import Sequence

from celmut.compile.cel_literals import cel_string
from celmut.compile.presets.podmutation.model import Filter, LabelGroup, LabelMatcher, Matcher

NAMESPACE = "request.namespace"
WORKLOAD_NAME = "variables.workloadName"
WORKLOAD_KIND = "variables.workloadKind"
LABELS = "variables.podLabels"
LABELS_EXPRESSION = "object.metadata.?labels.orValue({})"


def anchored(pattern: str) -> str:
    """The full-match form of a regex matcher (CEL ``matches`` is a partial match)."""
    return f"^(?:{pattern})$"


def matcher_cel(subject: str, matcher: Matcher) -> str:
    if matcher.type == "regex":
        return f"{subject}.matches({cel_string(anchored(matcher.value))})"
    return f"{subject} == {cel_string(matcher.value)}"


def any_of(subject: str, matchers: Sequence[Matcher]) -> str:
    """True when one of ``matchers`` matches ``subject``; exact values are grouped in one ``in``."""
    exact = [m.value for m in matchers if m.type == "exact"]
    terms: list[str] = []
    if len(exact) == 1:
        terms.append(f"{subject} == {cel_string(exact[0])}")
    elif exact:
        terms.append(f"{subject} in [{', '.join(map(cel_string, exact))}]")
    terms += [matcher_cel(subject, m) for m in matchers if m.type == "regex"]
    return terms[0] if len(terms) == 1 else "(" + " || ".join(terms) + ")"


def label_cel(matcher: LabelMatcher) -> str:
    """Some label's key and value both match."""
    if matcher.key.type == "exact":
        key = cel_string(matcher.key.value)
        return f"({key} in {LABELS} && {matcher_cel(f'{LABELS}[{key}]', matcher.value)})"
    return f"{LABELS}.exists(k, {matcher_cel('k', matcher.key)} && {matcher_cel(f'{LABELS}[k]', matcher.value)})"


def group_cel(group: LabelGroup) -> str:
    terms = [label_cel(m) for m in group.matchers]
    joiner = " && " if group.operator == "and" else " || "
    return terms[0] if len(terms) == 1 else "(" + joiner.join(terms) + ")"


def _negate(condition: str) -> str:
    return f"!({condition})" if not condition.startswith("(") else f"!{condition}"


def filter_conditions(section: Filter) -> list[str]:
    """The CEL conditions of one filter section, all of which must hold."""
    conditions: list[str] = []
    for subject, include, exclude in (
        (NAMESPACE, section.namespaces, section.exclude_namespaces),
        (WORKLOAD_NAME, section.names, section.exclude_names),
        (WORKLOAD_KIND, section.kinds, section.exclude_kinds),
    ):
        if include:
            conditions.append(any_of(subject, include))
        if exclude:
            conditions.append(_negate(any_of(subject, exclude)))
    if section.labels is not None:
        conditions.append(group_cel(section.labels))
    if section.exclude_labels is not None:
        conditions.append(_negate(group_cel(section.exclude_labels)))
    return conditions


def matches_cel(filters: Sequence[Filter]) -> str:
    """The whole filter of one PodMutation; ``true`` when it has none."""
    conditions = [c for section in filters for c in filter_conditions(section)]
    return " &&\n".join(conditions) if conditions else "true"
