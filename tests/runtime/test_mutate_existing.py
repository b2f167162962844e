"""mutateExisting as a pure function: targets from rules or from an expression, admission triggers
versus policy events, targetMatchConditions, namespaced policies, and no-op targets."""

from __future__ import annotations

from typing import Any

from celmut.runtime import AdmissionInput
from celmut.runtime.mutate_existing import mutate_existing
from tests.runtime.helpers import engine

LABEL = """  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"touched": "yes"}}}'"""


def configmap(name: str, namespace: str = "team-a", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
    }


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def policy(spec_extra: str, kind: str = "MutatingPolicy", meta_extra: str = "") -> str:
    return f"""
apiVersion: policies.kyverno.io/v1
kind: {kind}
metadata: {{name: p{meta_extra}}}
spec:
  evaluation: {{mutateExisting: {{enabled: true}}}}
{spec_extra}
  mutations:
{LABEL}
"""


TRIGGER_NAMESPACES = """  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}]"""
TARGET_CONFIGMAPS = """  targetMatchConstraints:
    namespaceSelector: {matchLabels: {team: a}}
    resourceRules: [{apiGroups: [''], apiVersions: [v1], resources: [configmaps]}]"""
CLUSTER = [
    namespace("team-a", team="a"),
    namespace("team-b", team="b"),
    configmap("one"),
    configmap("two"),
    configmap("other", "team-b"),
]


def test_an_admission_trigger_mutates_every_target_selected_by_target_constraints() -> None:
    eng = engine(policy(TRIGGER_NAMESPACES + "\n" + TARGET_CONFIGMAPS), CLUSTER)
    results = mutate_existing(eng, trigger=AdmissionInput.from_object(namespace("new")))
    assert sorted(r.reference for r in results) == ["ConfigMap team-a/one", "ConfigMap team-a/two"]
    assert all(r.mutated["metadata"]["labels"] == {"touched": "yes"} for r in results)


def test_a_trigger_that_does_not_match_queues_nothing_and_dry_run_queues_nothing() -> None:
    eng = engine(policy(TRIGGER_NAMESPACES + "\n" + TARGET_CONFIGMAPS), CLUSTER)
    assert mutate_existing(eng, trigger=AdmissionInput.from_object(configmap("x"))) == []
    dry = AdmissionInput.from_object(namespace("new"), dry_run=True)
    assert mutate_existing(eng, trigger=dry) == []


def test_a_policy_event_without_targets_mutates_existing_objects_matching_match_constraints() -> None:
    constraints = """  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps], resourceNames: [one, other]}]"""
    results = mutate_existing(engine(policy(constraints), CLUSTER))
    assert sorted(r.reference for r in results) == ["ConfigMap team-a/one", "ConfigMap team-b/other"]


def test_expression_targets_run_with_the_trigger_as_object() -> None:
    spec = (
        TRIGGER_NAMESPACES
        + """
  targetMatchConstraints:
    expression: 'resource.List("v1", "configmaps", object.metadata.name)'"""
    )
    eng = engine(policy(spec), CLUSTER)
    results = mutate_existing(eng, trigger=AdmissionInput.from_object(namespace("team-b")))
    assert [r.reference for r in results] == ["ConfigMap team-b/other"]


def test_target_match_conditions_see_the_target_as_object() -> None:
    spec = (
        TRIGGER_NAMESPACES
        + "\n"
        + TARGET_CONFIGMAPS
        + """
  targetMatchConditions: [{name: only-one, expression: 'object.metadata.name == "one"'}]"""
    )
    results = mutate_existing(engine(policy(spec), CLUSTER), trigger=AdmissionInput.from_object(namespace("x")))
    changed = [r.reference for r in results if r.changed]
    assert changed == ["ConfigMap team-a/one"]
    assert "targetMatchCondition 'only-one' is false" in next(r.outcome.reason for r in results if not r.changed)


def test_a_namespaced_policy_only_sees_its_namespace() -> None:
    constraints = """  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]"""
    text = policy(constraints, kind="NamespacedMutatingPolicy", meta_extra=", namespace: team-b")
    results = mutate_existing(engine(text, CLUSTER))
    assert [r.reference for r in results] == ["ConfigMap team-b/other"]


def test_targets_that_would_not_change_are_reported_unchanged() -> None:
    cluster = [configmap("done", touched="yes")]
    constraints = """  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]"""
    results = mutate_existing(engine(policy(constraints), cluster))
    assert [(r.changed, r.outcome.status) for r in results] == [(False, "unchanged")]


DELETED_NAMESPACES = """  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [DELETE], resources: [namespaces]}]
  targetMatchConstraints:
    expression: 'resource.List("v1", "configmaps", object.metadata.name)'"""


def test_a_delete_trigger_gives_the_target_expression_the_old_object() -> None:
    """Kyverno builds a DELETE trigger from request.oldObject (pkg/background/common/resource.go GetResource:
    `if request.Operation == admissionv1.Delete { raw = request.OldObject.Raw }`)."""
    eng = engine(policy(DELETED_NAMESPACES), CLUSTER)
    deleted = AdmissionInput.from_object(None, "DELETE", old_object=namespace("team-b"))
    results = mutate_existing(eng, trigger=deleted)
    assert [(r.reference, r.outcome.status) for r in results] == [("ConfigMap team-b/other", "applied")]


def test_a_failing_target_expression_is_reported_not_swallowed() -> None:
    spec = (
        TRIGGER_NAMESPACES
        + """
  targetMatchConstraints:
    expression: 'resource.List("v1", "configmaps", object.metadata.labels.team)'"""
    )
    eng = engine(policy(spec), CLUSTER)
    (result,) = mutate_existing(eng, trigger=AdmissionInput.from_object(namespace("unlabelled")))
    assert result.outcome.status == "error" and not result.changed
    assert result.outcome.path == "spec.targetMatchConstraints.expression"
    assert "no such key: team" in result.outcome.reason
    assert result.reference == "Namespace unlabelled"  # named by its trigger


STORAGE_CLASSES = [
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name}, "provisioner": "x"}
    for name in ("standard", "fast", "slow")
]
STANDARD_ONLY = """  matchConstraints:
    resourceRules: [{apiGroups: [storage.k8s.io], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [storageclasses]}]
  matchConditions: [{name: is-standard, expression: 'object.metadata.name in ["standard"]'}]"""


def test_the_policy_creation_pass_applies_match_conditions_to_the_targets_it_lists() -> None:
    """A deliberate difference from Kyverno (kyverno/kyverno#17411, open; the reproduction of #16254):
    Kyverno's pass on policy creation labels every StorageClass, ignoring the policy's matchConditions;
    celmut evaluates them on each target its own matchConstraints listed, so only ``standard`` changes
    and the others are skipped, naming the condition."""
    results = mutate_existing(engine(policy(STANDARD_ONLY), STORAGE_CLASSES))
    by_name = {r.target["metadata"]["name"]: r for r in results}
    assert [name for name, r in sorted(by_name.items()) if r.changed] == ["standard"]
    for name in ("fast", "slow"):
        assert (by_name[name].outcome.status, by_name[name].outcome.reason) == (
            "skipped",
            "matchCondition 'is-standard' is false",
        )


def test_match_conditions_gate_listed_targets_only_when_the_policy_lists_its_own_kind() -> None:
    """With targetMatchConstraints the targets are another kind: the policy's matchConditions speak of
    triggers (checked on an admission), and a pass without a trigger does not apply them to targets."""
    spec = (
        TARGET_CONFIGMAPS.replace("targetMatchConstraints", "matchConstraints").replace(
            "resources: [configmaps]", "operations: [CREATE], resources: [namespaces]"
        )
        + "\n"
        + TARGET_CONFIGMAPS
        + """
  matchConditions: [{name: never, expression: 'object.metadata.name == "no-such-namespace"'}]"""
    )
    results = mutate_existing(engine(policy(spec), CLUSTER))
    assert sorted(r.reference for r in results if r.changed) == ["ConfigMap team-a/one", "ConfigMap team-a/two"]
