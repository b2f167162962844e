"""Exactly one PodMutation applies per pod: the most specific by the reference's scoring (workload name
4, pod labels 2, namespace 1) and its tie-break rules in order (fewer workload names, fewer
namespaces, more label conditions, alphabetical name) — decided by the generated policies'
``outranked`` variables, so every engine gives the same answer."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.compile.presets.podmutation.compiler import COMPILER
from celmut.compile.presets.podmutation.model import parse
from celmut.compile.presets.podmutation.specificity import rank, specificity
from celmut.runtime import AdmissionInput
from celmut.sources.documents import Document
from tests.compile.presets.test_podmutation_support import cluster, mutated_by, pod, podmutation


def exact(*values: str) -> list[dict[str, str]]:
    return [{"type": "exact", "value": v} for v in values]


def labels(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {
        "matchers": [
            {"keyMatcher": {"type": "exact", "value": k}, "valueMatcher": {"type": "exact", "value": v}}
            for k, v in pairs
        ]
    }


def mutation(
    name: str,
    names: tuple[str, ...] = (),
    namespaces: tuple[str, ...] = (),
    pod_labels: tuple[tuple[str, str], ...] = (),
) -> dict[str, Any]:
    workload: dict[str, Any] = {}
    if names:
        workload["names"] = exact(*names)
    if namespaces:
        workload["namespaces"] = exact(*namespaces)
    filter_v2: dict[str, Any] = {"workload": workload}
    if pod_labels:
        filter_v2["pod"] = {"labels": {**labels(*pod_labels), "operator": "and"}}
    return podmutation(
        name, {"filterV2": filter_v2, "patches": [{"op": "add", "path": "/metadata/labels/by", "value": name}]}
    )


SUBJECT = pod("web", namespace="production", labels={"tier": "web", "env": "prod"})

SCORED = {
    "name-labels-namespace": mutation("name-labels-namespace", ("web",), ("production",), (("tier", "web"),)),
    "name-namespace": mutation("name-namespace", ("web",), ("production",)),
    "labels-namespace": mutation("labels-namespace", (), ("production",), (("tier", "web"),)),
    "namespace": mutation("namespace", (), ("production",)),
}


@pytest.mark.parametrize(
    ("name", "score"),
    [("name-labels-namespace", 7), ("name-namespace", 5), ("labels-namespace", 3), ("namespace", 1)],
)
def test_reference_score_table(name: str, score: int) -> None:
    assert specificity(parse(Document("m.yaml", 0, SCORED[name]))).score == score


@pytest.mark.parametrize(
    ("present", "winner"),
    [
        (["namespace", "labels-namespace", "name-namespace", "name-labels-namespace"], "name-labels-namespace"),  # 7
        (["namespace", "labels-namespace", "name-namespace"], "name-namespace"),  # 5
        (["namespace", "labels-namespace"], "labels-namespace"),  # 3
        (["namespace"], "namespace"),  # 1
    ],
    ids=["score 7 wins", "score 5 wins", "score 3 wins", "score 1 applies alone"],
)
def test_the_highest_score_wins_and_only_it_applies(present: list[str], winner: str) -> None:
    offline = cluster(*(SCORED[n] for n in present))
    result = offline.engine.admit(AdmissionInput.from_object(SUBJECT))
    assert mutated_by(result) == winner and result.object["metadata"]["labels"]["by"] == winner
    statuses = {o.policy: (o.status, o.reason) for o in result.outcomes}
    for name in present:
        if name != winner:
            assert statuses[f"podmutation-{name}"] == ("skipped", "matchCondition 'most-specific' is false")


TIE_BREAKS = {
    "fewer workload names wins": (
        mutation("a-three-names", ("web", "api", "db")),
        mutation("z-one-name", ("web",)),
        "z-one-name",
    ),
    "fewer namespaces wins": (
        mutation("a-three-namespaces", (), ("production", "staging", "dev")),
        mutation("z-one-namespace", (), ("production",)),
        "z-one-namespace",
    ),
    "more label conditions wins": (
        mutation("a-one-label", (), (), (("tier", "web"),)),
        mutation("z-two-labels", (), (), (("tier", "web"), ("env", "prod"))),
        "z-two-labels",
    ),
    "alphabetical name wins": (
        mutation("beta", ("web",), ("production",)),
        mutation("alpha", ("web",), ("production",)),
        "alpha",
    ),
    "names count before namespaces": (
        mutation("a-two-names-one-ns", ("web", "api"), ("production",)),
        mutation("z-one-name-two-ns", ("web",), ("production", "staging")),
        "z-one-name-two-ns",
    ),
    "namespaces count before labels": (
        mutation("a-two-ns-two-labels", (), ("production", "staging"), (("tier", "web"), ("env", "prod"))),
        mutation("z-one-ns-one-label", (), ("production",), (("tier", "web"),)),
        "z-one-ns-one-label",
    ),
}


@pytest.mark.parametrize(("first", "second", "winner"), list(TIE_BREAKS.values()), ids=list(TIE_BREAKS))
def test_tie_breaks(first: dict[str, Any], second: dict[str, Any], winner: str) -> None:
    mutations = [parse(Document("m.yaml", i, d)) for i, d in enumerate((first, second))]
    assert specificity(mutations[0]).score == specificity(mutations[1]).score
    assert rank(mutations)[0].name == winner
    for order in ((first, second), (second, first)):  # the input order does not matter
        result = cluster(*order).engine.admit(AdmissionInput.from_object(SUBJECT))
        assert mutated_by(result) == winner


def test_a_less_specific_mutation_applies_where_the_more_specific_one_does_not_match() -> None:
    offline = cluster(SCORED["name-labels-namespace"], SCORED["namespace"])
    other = pod("api", namespace="production", labels={"tier": "web"})
    result = offline.engine.admit(AdmissionInput.from_object(other))
    assert mutated_by(result) == "namespace"


def test_a_mutation_without_filters_ranks_last() -> None:
    catch_all = podmutation(
        "aaa-everything", {"patches": [{"op": "add", "path": "/metadata/labels/by", "value": "all"}]}
    )
    offline = cluster(catch_all, SCORED["namespace"])
    inside = offline.engine.admit(AdmissionInput.from_object(SUBJECT))
    outside = offline.engine.admit(AdmissionInput.from_object(pod("web", namespace="dev")))
    assert mutated_by(inside) == "namespace" and mutated_by(outside) == "aaa-everything"


def test_generated_policies_name_the_mutations_that_outrank_them() -> None:
    output = COMPILER.compile(
        [Document("m.yaml", i, d) for i, d in enumerate((SCORED["namespace"], SCORED["name-namespace"]))]
    )
    assert [p["metadata"]["name"] for p in output.policies] == ["podmutation-name-namespace", "podmutation-namespace"]
    variables = [{v["name"]: v["expression"] for v in p["spec"]["variables"]} for p in output.policies]
    assert variables[0]["outranked"] == "false"
    assert variables[1]["outranked"].startswith("// name-namespace\n(")
    assert output.policies[1]["metadata"]["annotations"]["celmut.io/specificity"] == (
        "score 1 (workload names: 0, namespaces: 1, label conditions: 0)"
    )
