"""The webhook's answer to a no-op MutatingAdmissionPolicy carries no patch (issue 13 A).

Objects arrive as kube-apiserver encodes its Go structs: ``status: {}``, ``securityContext: {}``,
``resources: {}``, ``creationTimestamp: null``. A policy that changes nothing must not send
``remove`` operations for them back to the API server.
"""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path

import pytest

from tests.runtime.test_go_round_trip import AS_SENT, RESOURCES
from tests.server.support import admission_request, decoded_patch, running_server

POLICY = """
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: no-op}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: ['', apps], apiVersions: [v1], operations: [CREATE], resources: [pods, services, deployments]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{op: "test", path: "/metadata/name", value: object.metadata.name}]'
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"app": "web"}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: no-op}
spec: {policyName: no-op}
"""


@pytest.mark.parametrize("kind", ["Pod", "Deployment", "Service"])
def test_a_no_op_admission_policy_answers_without_a_patch(tmp_path: Path, kind: str) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "no-op.yaml").write_text(textwrap.dedent(POLICY))
    group, version, resource = RESOURCES[kind]
    obj = copy.deepcopy(AS_SENT[kind])
    request = admission_request(
        obj,
        kind={"group": group, "version": version, "kind": kind},
        resource={"group": group, "version": version, "resource": resource},
        requestKind={"group": group, "version": version, "kind": kind},
        requestResource={"group": group, "version": version, "resource": resource},
    )
    with running_server(tmp_path, [str(policies)]) as server:
        review = server.review(request)
    assert review["response"]["allowed"] is True
    assert decoded_patch(review) == []
