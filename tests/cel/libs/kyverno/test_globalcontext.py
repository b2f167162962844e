"""Kyverno's globalContext library: rows from kyverno/sdk ``extensions/cel/libs/globalcontext/impl_test.go``
and the MutatingPolicy documentation, with a fake GlobalContextEntry store at the provider seam."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.cel.lookups import LookupFailed, Services
from tests.cel.helpers import Err, cases, check_case


class FakeStore:
    """GlobalContextEntry data as Kyverno's store holds it: entry → data, projection → derived data."""

    def __init__(self) -> None:
        self.entries: dict[str, Any] = {
            "foo": "stringValue",
            "map": {"key": "value"},
            "team-cluster-values": {"team": "platform", "environment": "prod", "replicas": 3},
        }
        self.projections = {("team-cluster-values", "teams"): ["platform", "apps"]}
        self.calls: list[tuple[str, str]] = []

    def get(self, entry: str, projection: str = "") -> Any:
        self.calls.append((entry, projection))
        if entry == "broken":
            raise RuntimeError("get entry error")
        if entry == "unready":
            raise LookupFailed("entry is not ready")
        if projection:
            return self.projections.get((entry, projection))
        return self.entries.get(entry)


ROWS = [
    ('globalContext.Get("foo")', "stringValue"),
    ('globalContext.get("foo")', "stringValue"),
    ('globalContext.get("map")', {"key": "value"}),
    ('globalContext.Get("map", "")', {"key": "value"}),
    ('globalContext.Get("missing")', None),  # an entry that does not exist is null
    ('globalContext.get("missing", "bar")', None),
    # the MutatingPolicy documentation's example
    ('globalContext.Get("team-cluster-values", "").team', "platform"),
    ('globalContext.Get("team-cluster-values", "").replicas', 3),
    ('globalContext.Get("team-cluster-values", "teams")', ["platform", "apps"]),
    ('globalContext.Get("broken")', Err("evaluation", "failed to get global reference: get entry error")),
    ('globalContext.get("broken", "x")', Err("evaluation", "get entry error")),
    ('globalContext.Get("unready")', Err("evaluation", "entry is not ready")),
    ("globalContext.Get(1)", Err("compile", "no matching overload")),
    ('globalContext.Get("foo", false)', Err("compile", "no matching overload")),
    ("globalContext.Get(dyn(false))", Err("evaluation", "no such overload")),
]


@cases(ROWS)
def test_global_context(expression: str, expected: Any) -> None:
    check_case(expression, expected, services=Services(global_context=FakeStore()))


def test_projection_reaches_the_provider() -> None:
    store = FakeStore()
    check_case('globalContext.Get("team-cluster-values", "teams").size()', 2, services=Services(global_context=store))
    assert store.calls == [("team-cluster-values", "teams")]


@pytest.mark.parametrize("expression", ['globalContext.Get("foo")', 'globalContext.get("foo", "")'])
def test_missing_provider(expression: str) -> None:
    check_case(expression, Err("evaluation", "no global context is configured"))


def test_kubernetes_profile_has_no_global_context() -> None:
    check_case(
        'globalContext.Get("foo")', Err("compile", "undeclared reference to 'globalContext.Get'"), profile="kubernetes"
    )
