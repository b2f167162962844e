"""Objects celmut leaves alone because of their owners: a controller's ReplicaSets (Kyverno's default
resourceFilters `[ReplicaSet,*,*]`; pkg/controller/deployment/util/deployment_util.go EqualIgnoreHash
would see a changed template as a new revision) and objects opted out through their owners."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.runtime import AdmissionInput
from celmut.runtime.mutate_existing import mutate_existing
from tests.runtime.helpers import admit, applyconfig, engine, pod

LABEL_TEMPLATE = applyconfig(
    "Object{spec: Object.spec{template: Object.spec.template{metadata: Object.spec.template.metadata{labels: "
    '{"team": "payments"}}}}}'
)


def replicaset(owner: str | None = "web") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web-5d8f", "namespace": "shop", "labels": {"app": "web"}}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": owner, "uid": "u1", "controller": True}
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta,
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }


def pods_policy(expression: str) -> str:
    """A MutatingPolicy ``pods`` on pod CREATE (default autogen) with one ApplyConfiguration."""
    return """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: pods}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  mutations:
""" + applyconfig(expression)


def rs_policy(kind: str = "MutatingPolicy", extra: str = "") -> str:
    api = "policies.kyverno.io/v1" if kind == "MutatingPolicy" else "admissionregistration.k8s.io/v1"
    binding = (
        "---\napiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicyBinding\n"
        "metadata: {name: rs}\nspec: {policyName: rs}\n"
        if kind == "MutatingAdmissionPolicy"
        else ""
    )
    return f"""
apiVersion: {api}
kind: {kind}
metadata: {{name: rs}}
spec:
{extra}
  matchConstraints:
    resourceRules: [{{apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [replicasets]}}]
  mutations:
{LABEL_TEMPLATE}
{binding}"""


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_a_mutating_policy_never_mutates_a_replicaset_a_deployment_controls(operation: str) -> None:
    rs = replicaset()
    result = admit(rs_policy(), rs, operation, old_object=rs if operation == "UPDATE" else None)
    assert result.patch == []
    (outcome,) = result.outcomes
    assert outcome.status == "skipped" and "controlled by Deployment web" in outcome.reason


def test_a_replicaset_without_a_controller_is_mutated_as_its_rules_say() -> None:
    result = admit(rs_policy(), replicaset(owner=None))
    assert result.object["spec"]["template"]["metadata"]["labels"]["team"] == "payments"


def test_autogen_variants_leave_a_controllers_replicasets_alone() -> None:
    """Kyverno's autogen `defaults` group includes replicasets (pkg/cel/autogen/config.go); the variant must
    still skip a Deployment's ReplicaSet, or every rollout loops."""
    policy = pods_policy("Object{spec: Object.spec{terminationGracePeriodSeconds: 5}}")
    owned, bare = admit(policy, replicaset()), admit(policy, replicaset(owner=None))
    assert owned.patch == [] and {o.status for o in owned.outcomes} == {"skipped"}
    (variant,) = [o for o in owned.outcomes if "(autogen defaults)" in o.policy]
    assert "controlled by Deployment web" in variant.reason
    assert bare.object["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 5


def test_a_mutating_admission_policy_keeps_the_api_servers_semantics() -> None:
    """kube-apiserver's MAP plugin has no ReplicaSet filter; celmut evaluates a MAP as the API server does."""
    result = admit(rs_policy("MutatingAdmissionPolicy", extra="  reinvocationPolicy: Never"), replicaset())
    assert result.object["spec"]["template"]["metadata"]["labels"]["team"] == "payments"


def test_mutate_existing_skips_a_controllers_replicasets() -> None:
    policy = rs_policy(extra="  evaluation: {mutateExisting: {enabled: true}, admission: {enabled: false}}")
    results = mutate_existing(
        engine(policy, [replicaset(), {**replicaset(owner=None), "metadata": {"name": "bare", "namespace": "shop"}}])
    )
    by_name = {r.target["metadata"]["name"]: r for r in results}
    assert by_name["web-5d8f"].outcome.status == "skipped" and not by_name["web-5d8f"].changed
    assert by_name["bare"].changed


def test_an_opted_out_object_is_left_alone_by_every_policy() -> None:
    checked: list[str] = []

    def opt_out(obj: dict[str, Any]) -> str:
        checked.append(obj["metadata"]["name"])
        return "its owner Deployment shop/quiet is labelled celmut.io/ignore" if obj["metadata"]["name"] == "q" else ""

    policy = pods_policy('Object{metadata: Object.metadata{labels: {"team": "payments"}}}')
    eng = engine(policy, opt_out=opt_out)
    quiet = eng.admit(AdmissionInput.from_object(pod("q")))
    busy = eng.admit(AdmissionInput.from_object(pod("b")))
    assert quiet.allowed and quiet.patch == [] and quiet.object == pod("q")
    assert busy.object["metadata"]["labels"]["team"] == "payments"
    assert checked == ["q", "b"]
