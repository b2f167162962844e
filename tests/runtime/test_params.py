"""MutatingAdmissionPolicy parameters: paramKind + paramRef by name or selector, and the
parameterNotFoundAction."""

from __future__ import annotations

from typing import Any

from tests.runtime.helpers import admit, engine, pod

POLICY = """
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: labeller}
spec:
  reinvocationPolicy: Never
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {params.data.key: params.data.value}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: labeller-binding}
spec:
  policyName: labeller
  paramRef: {paramRef}
"""


def params(name: str, key: str, value: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "data": {"key": key, "value": value},
    }


def test_params_by_name_reach_cel() -> None:
    text = POLICY.replace("{paramRef}", "{name: settings, parameterNotFoundAction: Deny}")
    result = admit(engine(text, [params("settings", "tier", "gold")]), pod())
    assert result.object["metadata"]["labels"]["tier"] == "gold"


def test_a_selector_runs_the_policy_once_per_parameter_object() -> None:
    text = POLICY.replace("{paramRef}", "{selector: {matchLabels: {use: 'yes'}}, parameterNotFoundAction: Deny}")
    cluster = [params("a", "one", "1", use="yes"), params("b", "two", "2", use="yes"), params("c", "three", "3")]
    labels = admit(engine(text, cluster), pod()).object["metadata"]["labels"]
    assert labels == {"app": "web", "one": "1", "two": "2"}


def test_missing_params_deny_or_allow_as_the_binding_says() -> None:
    deny = admit(engine(POLICY.replace("{paramRef}", "{name: nope, parameterNotFoundAction: Deny}")), pod())
    assert not deny.allowed and "no params found for policy binding with `Deny` parameterNotFoundAction" in deny.message
    allow = admit(engine(POLICY.replace("{paramRef}", "{name: nope, parameterNotFoundAction: Allow}")), pod())
    assert allow.allowed and allow.patch == [] and allow.outcomes[0].status == "skipped"
