"""Autogen for pod controllers, as Kyverno does it: eligibility, controller groups, rewriting of
match conditions and ApplyConfiguration expressions only, and the resulting mutations."""

from __future__ import annotations

import pytest

from celmut.compile.autogen import autogen_variants, can_autogen
from celmut.compile.autogen_rewrite import convert_expression
from tests.runtime.helpers import admit, applyconfig, jsonpatch, parse

POLICY = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {{name: p}}
spec:
{autogen}
  matchConstraints:
    resourceRules: [{{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}}]
{match_extra}
  matchConditions: [{{name: labelled, expression: 'object.metadata.labels["app"] == "web"'}}]
  mutations:
{mutations}
"""
SECURITY = applyconfig(
    "Object{spec: Object.spec{containers: object.spec.containers.map(c, Object.spec.containers{name: c.name, "
    "securityContext: Object.spec.containers.securityContext{allowPrivilegeEscalation: false}})}}"
)


def policy_text(autogen: str = "", match_extra: str = "", mutations: str = SECURITY) -> str:
    return POLICY.format(autogen=autogen, match_extra=match_extra, mutations=mutations)


def deployment(kind: str = "Deployment", api_version: str = "apps/v1") -> dict:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}
    spec = {"jobTemplate": {"spec": {"template": template}}} if kind == "CronJob" else {"template": template}
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "d", "namespace": "default"}, "spec": spec}


@pytest.mark.parametrize(
    ("kind", "api_version"),
    [
        ("Deployment", "apps/v1"),
        ("StatefulSet", "apps/v1"),
        ("DaemonSet", "apps/v1"),
        ("Job", "batch/v1"),
        ("CronJob", "batch/v1"),
    ],
)
def test_every_controller_gets_the_pod_mutation_in_its_template(kind: str, api_version: str) -> None:
    result = admit(policy_text(), deployment(kind, api_version))
    spec = result.object["spec"]
    template = spec["jobTemplate"]["spec"]["template"] if kind == "CronJob" else spec["template"]
    assert template["spec"]["containers"][0]["securityContext"] == {"allowPrivilegeEscalation": False}


def test_controllers_list_limits_the_variants_and_empty_disables_autogen() -> None:
    only_deployments = policy_text(autogen="  autogen: {podControllers: {controllers: [deployments]}}")
    assert admit(only_deployments, deployment("StatefulSet")).patch == []
    assert admit(only_deployments, deployment()).patch != []
    disabled = policy_text(autogen="  autogen: {podControllers: {controllers: []}}")
    assert admit(disabled, deployment()).patch == []


def test_an_object_selector_makes_a_policy_ineligible() -> None:
    policy = parse(policy_text(match_extra="    objectSelector: {matchLabels: {a: b}}")).mutating_policies[0]
    assert not can_autogen(policy.match_constraints) and autogen_variants(policy) == {}


def test_variants_match_the_controllers_in_sorted_rules() -> None:
    policy = parse(policy_text()).mutating_policies[0]
    variants = autogen_variants(policy)
    assert list(variants) == ["cronjobs", "defaults"]
    rules = variants["defaults"].match_constraints.resource_rules
    assert [(r.api_groups, r.resources) for r in rules] == [
        (("apps",), ("daemonsets", "deployments", "replicasets", "statefulsets")),
        (("batch",), ("jobs",)),
    ]
    assert variants["defaults"].match_conditions[0].expression == (
        'object.spec.template.metadata.labels["app"] == "web"'
    )


def test_json_patch_expressions_are_not_rewritten_and_run_unchanged_on_controllers() -> None:
    add_label = jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/x", value: "y"}]')
    text = policy_text(autogen="  autogen: {podControllers: {controllers: [deployments]}}", mutations=add_label)
    obj = deployment()
    obj["metadata"]["labels"] = {}
    result = admit(text, obj)
    assert result.object["metadata"]["labels"] == {"x": "y"}  # the Deployment's own labels, as in Kyverno


@pytest.mark.parametrize(
    ("expression", "variant", "converted"),
    [
        ("object.spec.containers", "defaults", "object.spec.template.spec.containers"),
        ("oldObject.spec.x", "defaults", "oldObject.spec.template.spec.x"),
        ("object.metadata.name", "defaults", "object.metadata.name"),
        ("object.metadata.labels.a", "cronjobs", "object.spec.jobTemplate.spec.template.metadata.labels.a"),
        (
            "Object{metadata: Object.metadata{labels: Object.metadata.labels{a: 'b'}}}",
            "defaults",
            # kyverno/kyverno#17438: Kyverno leaves "Object.metadata" here; celmut renames it
            "Object{spec: Object.spec{template: Object.spec.template{metadata: Object.spec.template.metadata{labels: "
            "Object.spec.template.metadata.labels{a: 'b'}}}}}",
        ),
        ("c ? Object{} : Object{}", "defaults", "c ? Object{} : Object{}"),
    ],
)
def test_expression_rewriting_matches_kyverno_except_for_type_names(
    expression: str, variant: str, converted: str
) -> None:
    assert convert_expression(expression, variant) == converted
