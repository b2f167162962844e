"""Issue 27: each webhook of the managed configuration calls /mutate/<fail|ignore>/<default|timeout-N> and
is served only the policies of its group, so a request two webhooks match (the same resource in a policy
with its own timeoutSeconds and in one without) is mutated once by each policy, never twice."""

from __future__ import annotations

from pathlib import Path

import jsonpatch
import pytest

from tests.server.support import admission_request, decoded_patch, pod, running_server

POLICY = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {{name: {name}}}
spec:
  failurePolicy: {failure}
  {timeout}
  autogen: {{podControllers: {{controllers: []}}}}
  matchConstraints:
    resourceRules: [{{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}}]
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{{op: "add", path: "/metadata/labels", value: {{"{name}": "x"}}}}]'
"""


def write(tmp_path: Path, name: str, failure: str, timeout: int | None = None) -> None:
    folder = tmp_path / "policies"
    folder.mkdir(exist_ok=True)
    setting = f"webhookConfiguration: {{timeoutSeconds: {timeout}}}" if timeout else ""
    (folder / f"{name}.yaml").write_text(POLICY.format(name=name, failure=failure, timeout=setting))


def labels(server: object, path: str) -> dict[str, str] | None:
    review = server.review(admission_request(pod()), path=path)  # type: ignore[attr-defined]
    response = review["response"]
    assert response["allowed"] is True
    if "patch" not in response:
        return None
    return dict(jsonpatch.apply_patch(pod(), decoded_patch(review))["metadata"].get("labels") or {})


def test_each_group_path_runs_only_its_policies(tmp_path: Path) -> None:
    write(tmp_path, "plain", "Fail")
    write(tmp_path, "timed", "Fail", timeout=3)
    write(tmp_path, "lenient", "Ignore")
    with running_server(tmp_path, [str(tmp_path / "policies")]) as server:
        assert labels(server, "/mutate/fail/default") == {"plain": "x"}
        assert labels(server, "/mutate/fail/timeout-3") == {"timed": "x"}
        assert labels(server, "/mutate/fail/timeout-5") is None
        assert labels(server, "/mutate/ignore/default") == {"lenient": "x"}
        both = labels(server, "/mutate/fail")  # static rules: every Fail policy, in order
        assert both is not None and set(both) <= {"plain", "timed"}


@pytest.mark.parametrize(
    "path", ["/mutate/fail/timeout-0", "/mutate/fail/timeout-31", "/mutate/fail/x", "/mutate/default"]
)
def test_an_unknown_group_path_is_a_404(tmp_path: Path, path: str) -> None:
    write(tmp_path, "plain", "Fail")
    with running_server(tmp_path, [str(tmp_path / "policies")]) as server, server.client() as client:
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": admission_request(pod())}
        answer = client.post(path, json=body)
        assert answer.status_code == 404 and "unknown path" in answer.text
