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
        "      expression: 'Object{metadata: Object.metadata{labels: {\"team\": \"a\"}}}'\n"
    )
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": []}}
    outcomes = celmut.load(tmp_path).apply(pod).outcomes
    skipped = [o for o in outcomes if o.status == "skipped"]
    assert [o.status for o in outcomes if o.policy == "add-team"] == ["applied"]
    assert skipped and all(o.cause == "matchConstraints" and o.cause_name == "resourceRules" for o in skipped)
    assert len({id(o) for o in skipped}) == len(skipped)
