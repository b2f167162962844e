"""Issue 36: a pure expression several policies carry is evaluated once per request and object state
(``celmut.runtime.shared``), and nothing a user sees changes: the same outcomes, patch and budget as
evaluating it every time, on random policy sets whose mutations change some of what the shared
conditions and variables read (hypothesis); impure expressions are never shared."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from celmut import cel
from celmut.runtime import AdmissionEngine, AdmissionInput, AdmissionOptions
from celmut.runtime.shared import SharedExpressions, reads, shareable
from tests.runtime.helpers import compile_text, pod

# Conditions and variables, each pure unless said otherwise, reading parts of the Pod that the
# mutations below change (labels, annotations) or leave alone (containers, name).
CONDITIONS = [
    'object.metadata.?labels["app"].orValue("") == "web"',
    'object.metadata.?labels["a"].orValue("") != "2"',
    "!has(object.metadata.annotations) || size(object.metadata.annotations) < 3",
    'object.spec.containers.exists(c, c.image.startsWith("nginx"))',
    'request.operation == "CREATE" && object.metadata.name != ""',
    "size(object.metadata.?labels.orValue({})) < 4",
    "object.metadata.name.size() > 100",
]
VARIABLES = [  # strings: a mutation names an annotation after one
    'object.metadata.?labels["a"].orValue("none")',
    'object.spec.containers.map(c, c.name).join("-")',
    "string(size(object.metadata.?annotations.orValue({})))",
]
MUTATIONS = [
    'Object{metadata: Object.metadata{labels: {"a": string(size(object.metadata.?labels.orValue({})))}}}',
    'Object{metadata: Object.metadata{annotations: {"seen-" + variables.v: "1"}}}',
    'Object{metadata: Object.metadata{labels: {"app": "db"}}}',
    'Object{spec: Object.spec{containers: [Object.spec.containers{name: "nginx", image: "busybox"}]}}',
]


def policy(index: int, conditions: list[str], variable: str, mutation: str, failure: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "failurePolicy": failure,
        "autogen": {"podControllers": {"controllers": []}},
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
            ]
        },
        "matchConditions": [{"name": f"c{i}", "expression": c} for i, c in enumerate(conditions)],
        "variables": [{"name": "v", "expression": variable}],
        "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": mutation}}],
    }
    metadata = {"name": f"p{index:02d}"}
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": metadata, "spec": spec}


@st.composite
def policy_sets(draw: st.DrawFn) -> list[dict[str, Any]]:
    return [
        policy(
            index,
            draw(st.lists(st.sampled_from(CONDITIONS), max_size=2)),
            draw(st.sampled_from(VARIABLES)),
            draw(st.sampled_from(MUTATIONS)),
            draw(st.sampled_from(["Fail", "Ignore"])),
        )
        for index in range(draw(st.integers(2, 6)))
    ]


def engines(documents: list[dict[str, Any]], **options: Any) -> tuple[AdmissionEngine, AdmissionEngine]:
    """An engine sharing expressions, and one evaluating every expression every time."""
    compiled = compile_text(yaml.safe_dump_all(documents))
    sharing = AdmissionEngine(compiled, options=AdmissionOptions(timeout_seconds=None, **options))
    evaluating = AdmissionEngine(compiled, options=AdmissionOptions(timeout_seconds=None, **options))
    evaluating.evaluator.shared = SharedExpressions(())
    return sharing, evaluating


def seen(result: Any) -> tuple[Any, ...]:
    outcomes = [(o.policy, o.status, o.reason, o.cause_name, o.patch) for o in result.outcomes]
    return (result.allowed, result.message, result.patch, result.warnings, outcomes)


SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SLOW
@given(documents=policy_sets(), labels=st.sampled_from([{}, {"app": "web"}, {"app": "web", "a": "2"}]))
def test_sharing_changes_no_outcome_patch_or_cost(documents: list[dict[str, Any]], labels: dict[str, str]) -> None:
    sharing, evaluating = engines(documents)
    obj = pod()
    obj["metadata"]["labels"] = labels
    budgets = [cel.Budget(), cel.Budget()]
    shared = sharing.admit(AdmissionInput.from_object(obj), budgets[0])
    every = evaluating.admit(AdmissionInput.from_object(obj), budgets[1])
    assert seen(shared) == seen(every)
    assert (budgets[0].spent, budgets[0].allocated) == (budgets[1].spent, budgets[1].allocated)


def test_a_request_runs_out_of_budget_where_it_would_have() -> None:
    """Reusing a value charges its cost: with a budget that the shared conditions exhaust, the same
    policy fails the same way with and without sharing."""
    heavy = "object.spec.containers.all(c, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(i, i * i >= 0))"
    documents = [policy(i, [heavy], VARIABLES[0], MUTATIONS[0], "Fail") for i in range(4)]
    sharing, evaluating = engines(documents)
    obj = pod()
    whole = cel.Budget()
    evaluating.admit(AdmissionInput.from_object(obj), whole)
    limits = [cel.Budget(limit=whole.spent * 2 // 3), cel.Budget(limit=whole.spent * 2 // 3)]
    shared = sharing.admit(AdmissionInput.from_object(obj), limits[0])
    every = evaluating.admit(AdmissionInput.from_object(obj), limits[1])
    assert not shared.allowed and "cost budget" in shared.message
    assert seen(shared) == seen(every)


def test_a_shared_condition_is_evaluated_once_while_what_it_reads_is_unchanged() -> None:
    """Four policies carry the same condition; the first two change labels it does not read, the
    third the label it reads: the value is reused for the second and third policy, and evaluated again
    for the fourth (a list the condition builds is the very same object when reused)."""
    condition = '[object.metadata.?labels["app"].orValue(""), string(size(object.spec.containers))]'
    documents = [
        policy(i, [], VARIABLES[0], mutation, "Fail")
        for i, mutation in enumerate([MUTATIONS[0], MUTATIONS[0], MUTATIONS[2], MUTATIONS[0]])
    ]
    for document in documents:
        document["spec"]["variables"].append({"name": "seen", "expression": condition})
        document["spec"]["mutations"].append(
            {"patchType": "JSONPatch", "jsonPatch": {"expression": "variables.seen.size() > 0 ? [] : []"}}
        )
    compiled = compile_text(yaml.safe_dump_all(documents))
    engine = AdmissionEngine(compiled, options=AdmissionOptions(timeout_seconds=None))
    programs = {id(p.variables["seen"]) for p in engine.policies}
    assert len(programs) == 1  # one program: the environment compiles a source once
    memo = engine.evaluator.shared.memo()
    assert memo is not None
    program = engine.policies[0].variables["seen"]
    obj = pod()
    budget = cel.Budget()
    activation = cel.Activation(object=obj, budget=budget)
    first = memo.evaluate(program, activation)
    relabelled = {**obj, "metadata": {**obj["metadata"], "labels": {**obj["metadata"]["labels"], "a": "1"}}}
    activation.with_object(relabelled)
    assert memo.evaluate(program, activation) is first  # labels copied, the app label itself unchanged
    renamed = {**relabelled, "metadata": {**relabelled["metadata"], "labels": {"app": "db"}}}
    activation.with_object(renamed)
    assert memo.evaluate(program, activation) == ["db", "1"]


@pytest.mark.parametrize(
    ("expression", "paths"),
    [
        ('object.metadata.?labels["app"].orValue("") == "web"', (("metadata", "labels", "app"),)),
        ("object.spec.containers.exists(c, c.image == 'x')", (("spec", "containers"),)),
        ("has(object.metadata.labels)", (("metadata", "labels"),)),
        ("object == oldObject", ((),)),
        ('request.operation == "CREATE"', ()),
    ],
)
def test_the_parts_of_the_object_an_expression_reads(expression: str, paths: tuple[tuple[str, ...], ...]) -> None:
    program = cel.Environment("kyverno").compile(expression)
    assert reads(program.checked.expr) == paths
    assert shareable(program) == paths


@pytest.mark.parametrize(
    ("profile", "expression"),
    [
        ("kyverno", "time.now() > timestamp('2020-01-01T00:00:00Z')"),  # the clock
        ("kyverno", 'size(resource.Get("v1", "configmaps", "default", "x")) > 0'),  # the cluster
        ("kyverno", "random() != ''"),
        ("kyverno", "variables.other == 1"),  # another variable: what it means depends on the policy
        ("kubernetes", "params.x == 1"),  # a binding's
        ("kubernetes", "authorizer.group('').resource('pods').check('get').allowed()"),
    ],
)
def test_impure_or_policy_dependent_expressions_are_never_shared(profile: str, expression: str) -> None:
    environment = cel.Environment(profile, variables={"other": cel.types.DYN})
    assert shareable(environment.compile(expression)) is None


def test_only_a_policy_carrying_a_shared_condition_asks_the_requests_memo() -> None:
    """The others evaluate their conditions directly (one lookup less per condition, on the path every
    skipped policy takes), with the same outcomes: a policy alone with its condition is skipped by it."""
    shared_condition, own_condition = CONDITIONS[0], CONDITIONS[6]
    documents = [
        policy(0, [shared_condition], VARIABLES[0], MUTATIONS[0], "Fail"),
        policy(1, [shared_condition], VARIABLES[0], MUTATIONS[0], "Fail"),
        policy(2, [own_condition], VARIABLES[0], MUTATIONS[0], "Fail"),
    ]
    engine = AdmissionEngine(
        compile_text(yaml.safe_dump_all(documents)), options=AdmissionOptions(timeout_seconds=None)
    )
    shared = engine.evaluator.shared
    assert [shared.shares_conditions(p) for p in engine.policies] == [True, True, False]
    outcomes = engine.admit(AdmissionInput.from_object(pod())).outcomes
    assert [(o.policy, o.status, o.cause_name) for o in outcomes][2] == ("p02", "skipped", "c0")
