"""``--authorizer allow|deny|FILE`` on apply, test and eval (issue 25, item 6): the offline answer to
the CEL ``authorizer`` of MutatingAdmissionPolicies. Without the flag a check is an error that names
the flag — never silently allowed. The requesting user is the request's userInfo (``-u`` on apply)."""

from __future__ import annotations

from pathlib import Path

import pytest

from celmut.main import main

MAP = """apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: mark-creators}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >-
        Object{metadata: Object.metadata{labels: {"may-delete":
        authorizer.requestResource.check('delete').allowed() ? "yes" : "no"}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: mark-creators-binding}
spec: {policyName: mark-creators}
"""
POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec: {containers: [{name: c, image: nginx}]}\n"
)
USER = "apiVersion: cli.kyverno.io/v1alpha1\nkind: UserInfo\nuserInfo: {username: alice, groups: [dev]}\n"
RULES = """rules:
- users: [alice]
  verbs: [delete]
  apiGroups: [""]
  resources: [pods]
  namespaces: [shop]
- groups: [ops]
  verbs: ["*"]
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name, text in {"map.yaml": MAP, "pod.yaml": POD, "user.yaml": USER, "rules.yaml": RULES}.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "bad-rules.yaml").write_text("rules: [{verbz: [get]}]\n")
    return tmp_path


CASES = [
    # (what it proves, --authorizer value ('' for none), userinfo file, exit code, expected in stdout/stderr)
    ("allow answers every check allowed", "allow", "user.yaml", 0, "may-delete: 'yes'"),
    ("deny answers every check denied", "deny", "user.yaml", 0, "may-delete: 'no'"),
    ("a rule for the requesting user allows", "{dir}/rules.yaml", "user.yaml", 0, "may-delete: 'yes'"),
    ("no rule for another user: no opinion, not allowed", "{dir}/rules.yaml", "", 0, "may-delete: 'no'"),
    ("without the flag the check fails and names it", "", "user.yaml", 1, "pass --authorizer allow|deny|FILE"),
    (
        "a rules file with an unknown field is bad input",
        "{dir}/bad-rules.yaml",
        "user.yaml",
        2,
        "unknown field 'verbz'",
    ),
]


@pytest.mark.parametrize(("name", "flag", "user", "code", "expected"), CASES, ids=[c[0] for c in CASES])
def test_apply_answers_the_authorizer_from_the_flag(
    name: str, flag: str, user: str, code: int, expected: str, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["apply", str(files / "map.yaml"), "-r", str(files / "pod.yaml")]
    argv += ["--authorizer", flag.format(dir=files)] if flag else []
    argv += ["-u", str(files / user)] if user else []
    result = main(argv)
    out, err = capsys.readouterr()
    assert result == code, out + err
    assert expected in out + err


def test_eval_answers_the_authorizer_from_the_flag(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    request = files / "request.yaml"
    request.write_text(
        "namespace: shop\nresource: {group: '', version: v1, resource: pods}\nuserInfo: {username: alice}\n"
    )
    expression = "authorizer.requestResource.check('delete').allowed()"
    argv = ["eval", "--profile", "kubernetes", "--request", str(request), expression]
    assert main([*argv, "--authorizer", str(files / "rules.yaml")]) == 0
    assert capsys.readouterr().out.strip() == "true"
    assert main([*argv, "--authorizer", "deny"]) == 0
    assert capsys.readouterr().out.strip() == "false"
    assert main(argv) == 1
    assert "pass --authorizer" in capsys.readouterr().err


def test_test_command_accepts_the_flag(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``celmut test --authorizer``: a Kyverno CLI test of a MAP that checks the authorizer."""
    suite = files / "suite"
    suite.mkdir()
    (suite / "kyverno-test.yaml").write_text(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: t}\n"
        "policies: [../map.yaml]\nresources: [../pod.yaml]\n"
        "results: [{policy: mark-creators, resources: [web], kind: Pod, result: pass, patchedResources: patched.yaml}]\n"
    )
    (suite / "patched.yaml").write_text(
        POD.replace("namespace: shop}", "namespace: shop, labels: {may-delete: 'yes'}}")
    )
    assert main(["test", str(suite)]) != 0  # the check fails without an authorizer: failurePolicy Fail
    assert main(["test", str(suite), "--authorizer", "allow"]) == 0, capsys.readouterr()
