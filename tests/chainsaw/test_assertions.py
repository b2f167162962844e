"""The runner's assertion trees match as chainsaw's (kyverno/kyverno-json ``pkg/core/assertion``): each case
pins a behaviour the stored Kyverno tests rely on, and that a looser matcher would wrongly pass."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chainsaw.assertions import bound, mismatches

REPORT = {
    "metadata": {"labels": {"app.kubernetes.io/managed-by": "celmut", "extra": "x"}},
    "results": [
        {
            "policy": "p",
            "result": "pass",
            "source": "MutatingAdmissionPolicy",
            "properties": {"process": "background scan"},
        },
        {"policy": "q", "result": "fail", "source": "KyvernoMutatingPolicy"},
    ],
    "summary": {"pass": 1, "fail": 1},
}

CASES: list[tuple[str, Any, bool]] = [
    ("a subset of the fields matches", {"summary": {"pass": 1}}, True),
    ("a missing field does not", {"summary": {"warn": 0}}, False),
    ("a different scalar does not", {"summary": {"pass": 2}}, False),
    ("1 and 1.0 are equal numbers", {"summary": {"pass": 1.0}}, True),
    ("true is not 1", {"summary": {"pass": True}}, False),
    # arrays: same length, element-wise in order (report-assert.yaml lists every result)
    ("a list matches element-wise", {"results": [{"policy": "p"}, {"policy": "q"}]}, True),
    ("a shorter list does not", {"results": [{"policy": "p"}]}, False),
    ("order matters", {"results": [{"policy": "q"}, {"policy": "p"}]}, False),
    # (expression) keys: JMESPath on the node (no-reports.yaml, reports.yaml, generated-*.yaml)
    ("a JMESPath filter and length", {"(length(results[?policy == 'p' && result == 'pass']))": 1}, True),
    ("a JMESPath comparison", {"(length(results[?policy == 'x']) > `0`)": True}, False),
    ("keys(@) on a nested map", {"metadata": {"labels": {"(contains(keys(@), 'extra'))": True}}}, True),
    ("a JMESPath result must match its value", {"(length(results))": 3}, False),
]


@pytest.mark.parametrize(("what", "expected", "matches"), CASES, ids=[c[0] for c in CASES])
def test_assertion_trees(what: str, expected: Any, matches: bool) -> None:
    assert (not mismatches(expected, REPORT)) is matches, mismatches(expected, REPORT)


def test_bindings_fill_template_values_and_an_unknown_expression_is_an_error() -> None:
    """``metadata.name: ($name)`` in a step template takes the binding; any other value expression is not
    implemented, and says so rather than matching anything."""
    assert bound({"metadata": {"name": "($name)"}}, {"name": "p"}) == {"metadata": {"name": "p"}}
    with pytest.raises(KeyError):
        bound("($missing)", {})
    with pytest.raises(ValueError, match="only"):
        bound({"x": "(length(@))"}, {})
