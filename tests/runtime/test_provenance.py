"""Provenance (issue 18): who changed which field, and why the other policies did not apply — the one
model every surface renders, built from the outcomes of an admission."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from celmut.runtime import AdmissionInput
from celmut.runtime.mutated_by import MAX_MUTATED_BY_BYTES
from celmut.runtime.provenance import (
    MUTATED_BY_ANNOTATION,
    RECORDER,
    AppliedMutation,
    FieldChange,
    describe,
    from_outcomes,
)
from celmut.sources.documents import load_documents
from tests.compile.presets.test_podmutation_support import NAME_ANNOTATION, podmutation
from tests.offline import offline_cluster
from tests.runtime.helpers import admit, engine, jsonpatch, mpol, pod

DATA = Path(__file__).resolve().parents[1] / "data" / "provenance"


def shop_pod() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DATA / "pod.yaml").read_text())
    return loaded


def admitted(*, explain: bool) -> Any:
    offline = offline_cluster(load_documents(str(DATA / "policies.yaml")))
    return offline.engine.admit(AdmissionInput.from_object(shop_pod()), explain=explain)


def test_each_field_names_its_policy_and_mutation_and_each_skip_its_reason() -> None:
    """The pod of the issue: one policy applies (two mutations), one is skipped by its matchCondition,
    one by a PolicyException, one fails under failurePolicy Ignore."""
    result = admitted(explain=True)
    provenance = from_outcomes(result.outcomes, result.object)
    assert [(m.policy, m.mutation, m.index, [c.to_dict() for c in m.changes]) for m in provenance.applied] == [
        (
            "add-team",
            "spec.mutations[0].jsonPatch.expression",
            0,
            [{"op": "add", "path": "/metadata/labels/team", "value": "payments"}],
        ),
        (
            "add-team",
            "spec.mutations[1].applyConfiguration.expression",
            1,
            [{"op": "add", "path": "/metadata/annotations", "value": {"owner": "payments"}}],
        ),
    ]
    reasons = {n.policy: (n.status, n.cause, n.name, n.summary) for n in provenance.not_applied if n.selects_resource}
    assert reasons == {
        "prod-only": ("skipped", "matchCondition", "is-prod", "matchCondition is-prod"),
        "tier-label": ("excepted", "exception", "shop/skip-web", "PolicyException shop/skip-web"),
        "flaky": (
            "error",
            "error",
            "",
            "error (failurePolicy Ignore): spec.mutations[0].jsonPatch.expression: no such key: missing",
        ),
    }
    unselected = sorted(n.policy for n in provenance.not_applied if not n.selects_resource)
    assert "deployments-only" in unselected and "add-team (autogen defaults)" in unselected


def test_without_explain_only_each_policys_whole_change_is_known() -> None:
    """The admission hot path records no per-mutation steps; the per-policy change is still the diff."""
    result = admitted(explain=False)
    assert all(o.steps is None for o in result.outcomes)
    provenance = from_outcomes(result.outcomes, result.object)
    assert [(m.policy, m.mutation, m.index) for m in provenance.applied] == [("add-team", "", None)]
    assert provenance.by_policy() == {"add-team": {"add": ["/metadata/labels/team", "/metadata/annotations"]}}


def test_a_field_already_at_its_value_is_kept_not_changed() -> None:
    """Why is this label here, on an object that already has it: the policy that writes it keeps it."""
    already = shop_pod()
    already["metadata"]["labels"]["team"] = "payments"
    offline = offline_cluster(load_documents(str(DATA / "policies.yaml")))
    result = offline.engine.admit(AdmissionInput.from_object(already), explain=True)
    provenance = from_outcomes(result.outcomes, result.object)
    first = provenance.touching("/metadata/labels/team")
    assert [(m.policy, m.index, m.changes, m.kept) for m in first] == [("add-team", 0, (), ("/metadata/labels/team",))]
    assert provenance.touching("/metadata/labels/tier") == []


MAP_WITH_BINDING = """
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: map}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: '[JSONPatch{op: "add", path: "/metadata/labels/a", value: "1"}]'}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: only-db}
spec:
  policyName: map
  matchResources: {objectSelector: {matchLabels: {tier: db}}}
"""


def test_a_kubernetes_binding_that_does_not_match_names_the_selector() -> None:
    result = engine(MAP_WITH_BINDING).admit(AdmissionInput.from_object(pod()), explain=True)
    (skipped,) = from_outcomes(result.outcomes).not_applied
    assert (skipped.cause, skipped.name, skipped.binding) == ("matchConstraints", "objectSelector", "only-db")
    assert skipped.summary == "matchConstraints: binding only-db: objectSelector does not match"


def test_a_failed_jsonpatch_test_writes_nothing_and_says_why() -> None:
    guarded = jsonpatch(
        '[JSONPatch{op: "test", path: "/metadata/labels/app", value: "db"},'
        ' JSONPatch{op: "add", path: "/metadata/labels/x", value: "1"}]'
    )
    result = engine(mpol("guarded", guarded)).admit(AdmissionInput.from_object(pod()), explain=True)
    provenance = from_outcomes(result.outcomes)
    assert provenance.applied == ()
    (unchanged,) = provenance.not_applied
    assert (
        unchanged.status == "unchanged" and "JSONPatch test at /metadata/labels/app did not hold" in unchanged.summary
    )


def test_appends_are_kept_only_when_nothing_was_appended() -> None:
    append = jsonpatch('[JSONPatch{op: "add", path: "/spec/tolerations/-", value: {"key": "spot"}}]')
    result = engine(mpol("spot", append)).admit(AdmissionInput.from_object(pod(tolerations=[])), explain=True)
    (mutation,) = from_outcomes(result.outcomes).applied
    assert [c.path for c in mutation.changes] == ["/spec/tolerations/0"] and mutation.kept == ()


# --- the summary on the object -----------------------------------------------------------------------

LABEL_A = jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/a", value: "1"}]')
LABEL_B = jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/b", value: "2"}]')


def opted_in(name: str, mutations: str) -> str:
    return mpol(name, mutations).replace(
        f"metadata: {{name: {name}}}",
        f'metadata: {{name: {name}, annotations: {{celmut.io/record-provenance: "true"}}}}',
    )


def test_only_policies_that_opt_in_record_themselves_on_the_object() -> None:
    result = admit(engine(opted_in("a-recorded", LABEL_A) + "---" + mpol("b-silent", LABEL_B)), pod())
    recorded = json.loads(result.object["metadata"]["annotations"][MUTATED_BY_ANNOTATION])
    assert recorded == {"a-recorded": ["/metadata/labels/a"]}
    assert {
        "op": "add",
        "path": "/metadata/annotations",
        "value": {MUTATED_BY_ANNOTATION: json.dumps(recorded, separators=(",", ":"))},
    } in result.patch
    provenance = from_outcomes(result.outcomes, result.object)
    assert [m.policy for m in provenance.applied] == ["a-recorded", "b-silent", RECORDER]


def test_nothing_is_recorded_without_an_opt_in_or_when_nothing_changed() -> None:
    result = admit(engine(mpol("silent", LABEL_A)), pod())
    assert "annotations" not in result.object["metadata"]
    unchanged = pod()
    unchanged["metadata"]["labels"]["a"] = "1"
    again = admit(engine(opted_in("recorded", LABEL_A)), unchanged)
    assert again.patch == [] and "annotations" not in again.object["metadata"]


def test_record_all_merges_with_the_summary_already_there() -> None:
    """An UPDATE (or the API server calling the webhook again) keeps what earlier admissions recorded;
    a policy recorded again moves to the end."""
    earlier = pod()
    earlier["metadata"]["annotations"] = {MUTATED_BY_ANNOTATION: '{"b":["/spec/x"],"old":["/metadata/labels/z"]}'}
    result = admit(engine(mpol("b", LABEL_B), record_provenance=True), earlier)
    assert json.loads(result.object["metadata"]["annotations"][MUTATED_BY_ANNOTATION]) == {
        "old": ["/metadata/labels/z"],
        "b": ["/spec/x", "/metadata/labels/b"],
    }


@pytest.mark.parametrize(
    ("previous", "expected_first"),
    [
        ("not json", "policy-00"),  # someone else's text in our annotation is replaced
        ('{"…":["+7 earlier"]}', "…"),  # a truncated summary keeps counting what it dropped
    ],
)
def test_the_summary_stays_within_its_bound(previous: str, expected_first: str) -> None:
    many = "---".join(
        mpol(
            f"policy-{i:02d}",
            jsonpatch(f'[JSONPatch{{op: "add", path: "/metadata/labels/l{i:02d}-{"x" * 40}", value: "1"}}]'),
        )
        for i in range(40)
    )
    start = pod()
    start["metadata"]["annotations"] = {MUTATED_BY_ANNOTATION: previous}
    result = admit(engine(many, record_provenance=True), start)
    value = result.object["metadata"]["annotations"][MUTATED_BY_ANNOTATION]
    assert len(value.encode()) <= MAX_MUTATED_BY_BYTES
    recorded = json.loads(value)
    assert next(iter(recorded)) == expected_first and "policy-39" in recorded
    if expected_first == "…":
        dropped = int(recorded["…"][0].split()[0].lstrip("+"))
        assert dropped == 7 + 40 - (len(recorded) - 1)


def test_a_podmutation_keeps_writing_its_cast_ai_name_annotation_beside_the_summary() -> None:
    mutation = podmutation(
        "team-label",
        {"patchesV2": [{"operations": [{"op": "add", "path": "/metadata/labels/team", "value": "a"}]}]},
        annotations={"celmut.io/record-provenance": "true"},
    )
    offline = offline_cluster([mutation])
    result = offline.engine.admit(AdmissionInput.from_object(pod()))
    annotations = result.object["metadata"]["annotations"]
    assert annotations[NAME_ANNOTATION] == "team-label"
    (recorded,) = json.loads(annotations[MUTATED_BY_ANNOTATION]).items()
    assert "/metadata/labels/team" in recorded[1]


# --- one line for an Event ---------------------------------------------------------------------------


def test_describe_names_each_mutation_and_counts_the_fields_that_do_not_fit() -> None:
    mutations = [
        AppliedMutation(
            "add-team", "MutatingPolicy", "spec.mutations[0]", 0, (FieldChange("add", "/metadata/labels/team"),)
        ),
        AppliedMutation(
            "limits",
            "MutatingPolicy",
            "spec.mutations[1]",
            1,
            tuple(FieldChange("replace", f"/spec/containers/{i}/resources") for i in range(30)),
        ),
    ]
    whole = describe(mutations, 10_000)
    assert whole.startswith(
        "add-team spec.mutations[0]: add /metadata/labels/team; limits spec.mutations[1]: replace /spec/containers/0/resources, "
    )
    short = describe(mutations, 120)
    assert len(short) <= 120 and short.endswith("more fields") and short.startswith("add-team spec.mutations[0]")
    shown = short.count("/spec/containers/")
    assert short.endswith(f"… and {30 - shown} more fields")


VARIABLES = """
  variables:
  - {name: team, expression: 'object.metadata.labels.app + "-team"'}
  - {name: unused, expression: '1 / 0'}
  - {name: later, expression: 'object.metadata.labels.?team.orValue("none")'}
"""


@pytest.mark.parametrize("explain", [True, False])
def test_an_explained_outcome_carries_the_variables_its_evaluation_computed(explain: bool) -> None:
    """What an explanation reads instead of evaluating again (the playground says why each pod of a
    workload was placed where it was): each variable as the admission computed it, when it was first
    used; a variable nothing used is not there (nor evaluated: ``1 / 0`` would have failed the policy)."""
    policy = mpol(
        "team",
        jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/team", value: variables.team}]')
        + jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/seen", value: variables.later}]'),
        extra=VARIABLES,
    )
    result = engine(policy).admit(AdmissionInput.from_object(pod()), explain=explain)
    (outcome,) = result.outcomes
    assert outcome.status == "applied"
    # ``later`` was first used by the second mutation, on the object the first one had changed
    assert outcome.variables == ({"team": "web-team", "later": "web-team"} if explain else None)
