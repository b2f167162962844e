"""The webhook answers an ill-typed ApplyConfiguration as kube-apiserver would (the runtime's typed
conversion, patch/smd.go): with ``failurePolicy: Fail`` the request is denied with the API server's
message, instead of a patch the API server would then fail to apply far from the policy."""

from __future__ import annotations

from pathlib import Path

from tests.server.support import admission_request, pod, running_server
from tests.server.test_webhook import write

POLICY = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: pull}
spec:
  failurePolicy: Fail
  autogen: {podControllers: {controllers: []}}
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >-
        Object{spec: Object.spec{containers: object.spec.containers.map(c,
        Object.spec.containers{name: c.name, imagePullPolicy: 42})}}
"""


def test_the_webhook_denies_an_int_where_the_schema_says_string(tmp_path: Path) -> None:
    write(tmp_path, "pull", POLICY)
    with running_server(tmp_path, [str(tmp_path / "policies")]) as server:
        answer = server.review(admission_request(pod()))["response"]
    assert answer["allowed"] is False
    assert "patch" not in answer
    message = answer["status"]["message"]
    assert "failed to convert patch object to typed object: " in message
    assert "imagePullPolicy: expected string, got &value.valueUnstructured{Value:42}" in message
