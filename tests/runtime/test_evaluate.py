"""The one per-policy evaluator (runtime/evaluate.py): admission and mutateExisting run the same
pipeline and report the same outcome; Kyverno's and Kubernetes' differences come from one strategy
object each; an error outcome carries its one-line message."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.runtime import AdmissionInput, semantics
from celmut.runtime.mutate_existing import Target, mutate_target
from celmut.runtime.results import PolicyOutcome
from tests.runtime.helpers import admit, engine, jsonpatch, map_policy, mpol, pod

ADD_LABEL = jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/a", value: "1"}]')
BROKEN = jsonpatch('[JSONPatch{op: "add", path: "/x", value: object.metadata.missing}]')


def existing(text: str, obj: dict[str, Any]) -> PolicyOutcome:
    """The outcome of the engine's only policy run as mutateExisting over ``obj`` (a scan, no trigger)."""
    eng = engine(text)
    return mutate_target(eng, Target(eng.policies[0], obj)).outcome


@pytest.mark.parametrize(
    ("name", "mutations", "status", "reason_has"),
    [
        ("applies", ADD_LABEL, "applied", ""),
        ("changes-nothing", jsonpatch('[JSONPatch{op: "test", path: "/kind", value: "Pod"}]'), "unchanged", ""),
        ("fails", BROKEN, "error", "no such key: missing"),
    ],
)
def test_admission_and_mutate_existing_report_the_same_outcome(
    name: str, mutations: str, status: str, reason_has: str
) -> None:
    text = mpol(name, mutations)
    admitted = admit(text, pod()).outcomes[0]
    background = existing(text, pod())
    assert (admitted.status, background.status) == (status, status)
    assert reason_has in admitted.reason and reason_has in background.reason
    assert admitted.patch == background.patch


def test_an_exception_skips_the_policy_in_admission_and_in_mutate_existing_alike() -> None:
    exception = """
---
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata: {name: not-web, namespace: default}
spec:
  policyRefs: [{name: p, kind: MutatingPolicy}]
  matchConditions: [{name: web, expression: "object.metadata.name == 'web'"}]
"""
    text = mpol("p", ADD_LABEL) + exception
    admitted, background = admit(text, pod()).outcomes[0], existing(text, pod())
    assert (admitted.status, admitted.cause_name) == ("excepted", "default/not-web")
    assert (background.status, background.cause_name) == ("excepted", "default/not-web")


def test_each_policy_kind_evaluates_with_its_own_semantics() -> None:
    kyverno = engine(mpol("p", ADD_LABEL)).policies[0]
    kubernetes = engine(map_policy(ADD_LABEL)).policies[0]
    assert semantics.of(kyverno) is semantics.KYVERNO and semantics.of(kubernetes) is semantics.KUBERNETES
    assert semantics.KYVERNO.filters_controlled_replicasets and not semantics.KUBERNETES.filters_controlled_replicasets
    assert semantics.KUBERNETES.isolates_errors and not semantics.KYVERNO.isolates_errors


def test_the_denial_message_is_the_error_outcome_message() -> None:
    result = admit(mpol("broken", BROKEN), pod())
    error = result.outcomes[0]
    assert result.message == error.message
    assert error.message.startswith("policy broken: spec.mutations[0].jsonPatch.expression: ")


def test_an_outcome_without_a_field_path_names_only_the_policy() -> None:
    outcome = PolicyOutcome("p", "MutatingPolicy", "error", "listing failed")
    assert outcome.message == "policy p: listing failed"


def test_a_delete_request_is_skipped_for_want_of_an_object_in_either_semantics() -> None:
    for text, reason in [
        (mpol("p", ADD_LABEL, operations="[DELETE]"), "DELETE requests carry no object to mutate"),
        (map_policy(ADD_LABEL).replace("[CREATE]", "[DELETE]"), "the request carries no object to mutate"),
    ]:
        eng = engine(text)
        outcome = eng.admit(AdmissionInput.from_object(None, "DELETE", old_object=pod())).outcomes[0]
        assert (outcome.status, outcome.cause, outcome.reason) == ("skipped", "noObject", reason)
