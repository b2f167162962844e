"""The webhook answers a MutatingAdmissionPolicy's ``authorizer`` with SubjectAccessReviews for the
requesting user (issue 25, item 6), against the fake API server through the real client: the same
answer the API server's own authorizer gives (RBAC, tests/fakekube/authorization.py)."""

from __future__ import annotations

from pathlib import Path

from tests.fakekube import FakeApiServer

from .support import admission_request, decoded_patch, pod, running_server

MAP = """apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: mark-deleters}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        [JSONPatch{op: "add", path: "/metadata/labels/may-delete",
        value: string(authorizer.requestResource.check('delete').allowed())}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: mark-deleters-binding}
spec: {policyName: mark-deleters}
"""


def test_the_webhook_asks_the_cluster_for_the_requesting_user(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    fake_apiserver.store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "pod-deleter", "namespace": "shop"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}],
        }
    )
    fake_apiserver.store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "alice-deletes", "namespace": "shop"},
            "subjects": [{"kind": "User", "name": "alice"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-deleter"},
        }
    )
    (tmp_path / "map.yaml").write_text(MAP)
    kubeconfig = str(fake_apiserver.kubeconfig(tmp_path / "kubeconfig"))
    with running_server(tmp_path, [str(tmp_path / "map.yaml")], from_cluster=True, kubeconfig=kubeconfig) as server:
        alice = decoded_patch(server.review(admission_request(pod())))
        bob = admission_request(pod(), userInfo={"username": "bob", "groups": ["system:authenticated"]})
        other = decoded_patch(server.review(bob))
    assert {"op": "add", "path": "/metadata/labels/may-delete", "value": "true"} in alice
    assert {"op": "add", "path": "/metadata/labels/may-delete", "value": "false"} in other
