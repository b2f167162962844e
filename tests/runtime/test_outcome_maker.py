"""``outcome_maker``: the engine's outcomes of policies a request's kind leaves out (40 per Pod request
with autogen on) are made by position, in the dataclass's own order, and equal what keywords make."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import orjson
import pytest

import celmut
from celmut.runtime.results import NO_AUDIT_ANNOTATIONS, PolicyOutcome, outcome_maker

FIELDS = {
    "policy": "add-team",
    "kind": "MutatingPolicy",
    "status": "skipped",
    "reason": "no resourceRule matches",
    "failure_policy": "Ignore",
    "cause": "matchConstraints",
    "cause_name": "resourceRules",
}


def test_a_made_outcome_equals_one_made_by_keywords_and_is_new_each_time() -> None:
    make = outcome_maker(**FIELDS)
    first, second = make(), make()
    assert first == PolicyOutcome(**FIELDS) and first is not second  # type: ignore[arg-type]
    assert (first.cause, first.cause_name, first.failure_policy) == ("matchConstraints", "resourceRules", "Ignore")
    first.seconds = 1.0  # an outcome is its own: changing one leaves the next as made
    assert make().seconds == 0.0


def test_the_shared_audit_annotations_are_read_only() -> None:
    outcome = outcome_maker(**FIELDS)()
    assert outcome.audit_annotations is NO_AUDIT_ANNOTATIONS and outcome.audit_annotations == {}
    for change in (
        lambda a: a.__setitem__("x", "y"),
        lambda a: a.update(x="y"),
        lambda a: a.setdefault("x", "y"),
        lambda a: a.pop("x", None),
        lambda a: a.clear(),
    ):
        with pytest.raises(TypeError, match="shared"):
            change(outcome.audit_annotations)
    assert NO_AUDIT_ANNOTATIONS == {}


def test_a_made_outcome_copies_pickles_and_converts_as_any_outcome() -> None:
    """A user's asdict, deepcopy or pickle of a result's outcomes works on these too (a mappingproxy would not)."""
    outcome = outcome_maker(**FIELDS)()
    assert dataclasses.asdict(outcome) == dataclasses.asdict(PolicyOutcome(**FIELDS))  # type: ignore[arg-type]
    assert copy.deepcopy(outcome) == outcome and pickle.loads(pickle.dumps(outcome)) == outcome
    assert orjson.loads(orjson.dumps(outcome.to_dict())) == PolicyOutcome(**FIELDS).to_dict()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param({"polcy": "typo"}, "no field polcy", id="an unknown field"),
        pytest.param({"cause": "error"}, "field policy has no default", id="a required field left out"),
    ],
)
def test_a_wrong_field_is_refused_when_the_maker_is_made(fields: dict[str, str], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        outcome_maker(**fields)


def test_a_pod_gets_the_autogen_variants_outcomes_by_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Through the public API: the variants for Deployments and CronJobs are reported skipped, each its own."""
    (tmp_path / "p.yaml").write_text(
        "apiVersion: policies.kyverno.io/v1\nkind: MutatingPolicy\nmetadata: {name: add-team}\nspec:\n"
        "  matchConstraints:\n    resourceRules:\n    - {apiGroups: [''], apiVersions: [v1], operations: [CREATE],"
        " resources: [pods]}\n"
        "  mutations:\n  - patchType: ApplyConfiguration\n    applyConfiguration:\n"
        '      expression: \'Object{metadata: Object.metadata{labels: {"team": "a"}}}\'\n'
    )
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": []}}
    outcomes = celmut.load(tmp_path).apply(pod).outcomes
    skipped = [o for o in outcomes if o.status == "skipped"]
    assert [o.status for o in outcomes if o.policy == "add-team"] == ["applied"]
    assert skipped and all(o.cause == "matchConstraints" and o.cause_name == "resourceRules" for o in skipped)
    assert len({id(o) for o in skipped}) == len(skipped)


MAP_WITH_TWO_BINDINGS = """
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: prod-only}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
  - {name: is-prod, expression: 'object.metadata.?labels["env"].orValue("") == "prod"'}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"team": "a"}}}'
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata: {name: first}
spec: {policyName: prod-only}
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata: {name: second}
spec: {policyName: prod-only}
"""


def test_a_skip_by_a_false_condition_is_a_new_outcome_naming_its_binding_each_time(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The evaluator makes a skip by a false matchCondition from a maker kept per policy, condition and
    binding: each request gets new outcomes, each binding's names it, with Kubernetes' prose."""
    (tmp_path / "map.yaml").write_text(MAP_WITH_TWO_BINDINGS)
    policies = celmut.load(tmp_path)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": []}}
    first = policies.apply(pod).outcomes
    assert [(o.binding, o.status, o.cause, o.cause_name, o.reason) for o in first] == [
        ("first", "skipped", "matchCondition", "is-prod", "matchCondition 'is-prod' is false"),
        ("second", "skipped", "matchCondition", "is-prod", "matchCondition 'is-prod' is false"),
    ]
    first[0].seconds = 5.0
    second = policies.apply(pod).outcomes
    assert [o.binding for o in second] == ["first", "second"] and second[0].seconds != 5.0
    assert not {id(o) for o in first} & {id(o) for o in second}
    assert second[0].audit_annotations == {}
