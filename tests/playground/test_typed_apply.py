"""The playground's run endpoint goes through the API server's typed conversion: an ill-typed
ApplyConfiguration is denied with kube-apiserver's message (not shown applied), a Go-typed one is
shown as the API server stores it."""

from __future__ import annotations

from tests.cli.test_typed_apply_cli import DEPLOYMENT
from tests.playground.support import Playground
from tests.playground.test_api import run

POLICY = """apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: limits}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >-
        Object{spec: Object.spec{replicas: REPLICAS, template: Object.spec.template{spec:
        Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "web",
        resources: Object.spec.template.spec.containers.resources{limits: {"cpu": 1.5}}}]}}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: limits-binding}
spec: {policyName: limits}
"""


def test_a_run_denies_an_ill_typed_configuration_with_the_api_servers_message(served: Playground) -> None:
    (deployment,) = run(served, {"policies": POLICY.replace("REPLICAS", '"three"'), "resources": DEPLOYMENT})["objects"]
    assert not deployment["allowed"] and not deployment["patch"]
    assert (
        "error applying patch: failed to convert patch object to typed object: "
        ".spec.replicas: expected numeric (int or float), got string"
    ) in deployment["message"]


def test_a_run_shows_the_configuration_as_the_api_server_stores_it(served: Playground) -> None:
    (deployment,) = run(served, {"policies": POLICY.replace("REPLICAS", "3.0"), "resources": DEPLOYMENT})["objects"]
    assert deployment["allowed"], deployment["message"]
    by_path = {op["path"]: op.get("value") for op in deployment["patch"]}
    assert by_path["/spec/replicas"] == 3  # an int32 from the double 3.0
    assert by_path["/spec/template/spec/containers/0/resources"] == {"limits": {"cpu": "1500m"}}  # Quantity's form
