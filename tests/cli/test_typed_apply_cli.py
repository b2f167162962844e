"""``celmut apply`` refuses what kube-apiserver refuses in an ApplyConfiguration (the runtime's typed
conversion, patch/smd.go ``ApplyStructuredMergeDiff``) instead of printing an object the cluster
would never store; a well-typed one is applied."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_cli import run

POLICY = """apiVersion: {api}
kind: {kind}
metadata: {{name: replicas}}
spec:
  failurePolicy: Fail
{reinvocation}
  matchConstraints:
    resourceRules: [{{apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}}]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{{spec: Object.spec{{replicas: {replicas}}}}}'
{binding}"""
BINDING = """---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: replicas-binding}
spec: {policyName: replicas}
"""
DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
"""
KINDS = {
    "MutatingPolicy": ("policies.kyverno.io/v1", ""),
    "MutatingAdmissionPolicy": ("admissionregistration.k8s.io/v1", BINDING),
}
REINVOCATION = {"MutatingPolicy": "", "MutatingAdmissionPolicy": "  reinvocationPolicy: Never"}


def files(tmp_path: Path, kind: str, replicas: str) -> tuple[str, str]:
    api, binding = KINDS[kind]
    policy = tmp_path / "policy.yaml"
    text = POLICY.format(api=api, kind=kind, replicas=replicas, binding=binding, reinvocation=REINVOCATION[kind])
    policy.write_text(text.replace("\n\n", "\n"))
    resource = tmp_path / "deployment.yaml"
    resource.write_text(DEPLOYMENT)
    return str(policy), str(resource)


@pytest.mark.parametrize("kind", KINDS)
def test_apply_refuses_a_string_where_the_schema_says_integer(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy, resource = files(tmp_path, kind, '"three"')
    code, out, err = run(capsys, "apply", policy, "-r", resource)
    assert code == 1
    assert "replicas: three" not in out
    assert (
        "error applying patch: failed to convert patch object to typed object: "
        ".spec.replicas: expected numeric (int or float), got string"
    ) in err


@pytest.mark.parametrize("kind", KINDS)
def test_apply_applies_a_well_typed_configuration(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy, resource = files(tmp_path, kind, "3")
    code, out, _ = run(capsys, "apply", policy, "-r", resource)
    assert code == 0 and "replicas: 3" in out


TEST_FILE = """apiVersion: cli.kyverno.io/v1alpha1
kind: Test
metadata: {name: replicas}
policies: [policy.yaml]
resources: [deployment.yaml]
results:
- {policy: replicas, resources: [web], kind: Deployment, result: pass, patchedResources: patched.yaml}
"""


def kyverno_test(tmp_path: Path, kind: str, replicas: str, expected: str) -> str:
    """A kyverno-test.yaml whose policy sets ``replicas`` and whose patched resource expects ``expected``."""
    files(tmp_path, kind, replicas)
    (tmp_path / "patched.yaml").write_text(DEPLOYMENT.replace("replicas: 1", f"replicas: {expected}"))
    (tmp_path / "kyverno-test.yaml").write_text(TEST_FILE)
    return str(tmp_path)


@pytest.mark.parametrize("kind", KINDS)
def test_a_kyverno_test_expecting_an_ill_typed_value_fails_with_the_api_servers_message(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``celmut test``: the patched resource the test expects (``replicas: three``) is one the API server
    never stores; the result fails (a Resource diff, as kyverno test reports it) and says why the
    policy left the resource unpatched."""
    code, out, _ = run(capsys, "test", kyverno_test(tmp_path, kind, '"three"', "three"))
    assert code == 1
    assert "Resource diff" in out and "0 tests passed and 1 tests failed" in out
    assert (
        "(the policy failed, so the resource is not patched: error applying patch: failed to convert patch object "
        "to typed object: .spec.replicas: expected numeric (int or float), got string)"
    ) in out


@pytest.mark.parametrize("kind", KINDS)
def test_a_kyverno_test_expecting_the_go_typed_value_passes(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An integral double in an int32 field is well typed (numeric), so the test expecting it passes."""
    code, out, _ = run(capsys, "test", kyverno_test(tmp_path, kind, "3.0", "3"))
    assert code == 0, out
