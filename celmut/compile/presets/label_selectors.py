"""Label selectors in presets: a ``metav1.LabelSelector`` read and validated as the API server does,
and the CEL that tests one against a pod's labels."""

from __future__ import annotations

from celmut import names
from celmut.compile.cel_literals import cel_string, cel_strings
from celmut.policy.fields import Reader
from celmut.policy.match import LabelSelector, Requirement

LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def parse_label_selector(reader: Reader) -> LabelSelector:
    """A ``metav1.LabelSelector`` validated as the API server does (keys, values, operators), with
    every problem recorded on ``reader`` at its field path; unknown fields are rejected."""
    reader.unknown_fields(["matchLabels", "matchExpressions"])
    labels = reader.string_map("matchLabels")
    for key, value in labels.items():
        if not names.is_qualified_name(key):
            reader.fail(f"Invalid value: {key!r}: must be a label key ([prefix/]name)", f"matchLabels.{key}")
        if not names.is_label_value(value):
            reader.fail(f"Invalid value: {value!r}: must be a label value", f"matchLabels.{key}")
    requirements = []
    for item in reader.items("matchExpressions"):
        item.unknown_fields(["key", "operator", "values"])
        key = item.string("key", required=True)
        if key and not names.is_qualified_name(key):
            item.fail(f"Invalid value: {key!r}: must be a label key ([prefix/]name)", "key")
        operator = item.string("operator", required=True, enum=LABEL_SELECTOR_OPERATORS)
        values = tuple(item.string_list("values") or ())
        if operator in ("In", "NotIn") and not values:
            item.fail(f"Required value: must be specified when operator is {operator}", "values")
        if operator in ("Exists", "DoesNotExist") and values:
            item.fail(f"Forbidden: may not be specified when operator is {operator}", "values")
        for index, value in enumerate(values):
            if not names.is_label_value(value):
                item.fail(f"Invalid value: {value!r}: must be a label value", f"values[{index}]")
        requirements.append(Requirement(key, operator, values))
    return LabelSelector(tuple(labels.items()), tuple(requirements))


def label_selector(selector: LabelSelector, labels: str = "variables.podLabels") -> str:
    """CEL testing a (validated) label selector against ``labels`` (a CEL map); ``true`` when empty."""
    terms = [
        f"{cel_string(k)} in {labels} && {labels}[{cel_string(k)}] == {cel_string(v)}" for k, v in selector.match_labels
    ]
    for r in selector.match_expressions:
        key = cel_string(r.key)
        if r.operator == "In":
            terms.append(f"{key} in {labels} && {labels}[{key}] in {cel_strings(r.values)}")
        elif r.operator == "NotIn":
            terms.append(f"!({key} in {labels} && {labels}[{key}] in {cel_strings(r.values)})")
        elif r.operator == "Exists":
            terms.append(f"{key} in {labels}")
        else:
            terms.append(f"!({key} in {labels})")
    if not terms:
        return "true"
    return terms[0] if len(terms) == 1 else " && ".join(f"({t})" for t in terms)
