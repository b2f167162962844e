"""An ApplyConfiguration must type as exactly ``Object`` (issue 25, items 2 and 7).

Upstream: ``k8s.io/apiserver/pkg/admission/plugin/cel/compile.go`` ``CompileCELExpression`` accepts
only ``ast.OutputType().IsExactType(Object)`` and otherwise answers ``must evaluate to Object but got
<type>``; its cases ``apply configuration with invalid return type`` / ``… invalid initializer return
type`` are in ``k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch/smd_test.go``
``TestApplyConfiguration``. Kyverno's MutatingPolicy compiler (``pkg/cel/policies/mpol/compiler/
compiler.go``) calls the same ``CompileMutatingEvaluator``, so both kinds refuse the same expressions,
on either CEL backend, when the policy is compiled (never written at the object's root)."""

from __future__ import annotations

from pathlib import Path

import pytest

from celmut.compile.policies import compile_policy_set
from celmut.main import main
from tests.runtime.helpers import applyconfig, map_policy, mpol, parse

CASES = [
    # (what it proves, expression, expected error or None when accepted)
    ("smd_test.go: a string is not an Object", '"I\'m a teapot!"', "must evaluate to Object but got string"),
    ("smd_test.go: an initializer of a nested type", "Object.spec.metadata{}", "but got Object.spec.metadata"),
    (
        "issue 25 item 2: a template initializer is not written at the root",
        'Object.spec.template{metadata: Object.spec.template.metadata{labels: {"x": "y"}}}',
        "must evaluate to Object but got Object.spec.template",
    ),
    ("validation_test.go: a comparison", "1 < 2", "must evaluate to Object but got bool"),
    ("a map literal is not an Object", "{'a': 1}", "must evaluate to Object but got map(string, int)"),
    ("a list is not an Object", "[Object{}]", "must evaluate to Object but got list(Object)"),
    ("IsExactType: dyn is not Object either", "object.spec", "must evaluate to Object but got dyn"),
    ("IsExactType: dyn(Object{}) is dyn", "dyn(Object{})", "must evaluate to Object but got dyn"),
    ("Object is accepted", 'Object{metadata: Object.metadata{labels: {"a": "b"}}}', None),
    ("a conditional of Objects is an Object", "true ? Object{} : Object{}", None),
]


def _errors(text: str, backend: str) -> list[str]:
    return [str(e) for e in compile_policy_set(parse(text), backend=backend).errors]


@pytest.mark.parametrize("backend", ["compiled", "interpreted"])
@pytest.mark.parametrize("kind", ["MutatingPolicy", "MutatingAdmissionPolicy"])
@pytest.mark.parametrize(("name", "expression", "expected"), CASES, ids=[c[0] for c in CASES])
def test_apply_configuration_must_type_as_exactly_object(
    name: str, expression: str, expected: str | None, kind: str, backend: str
) -> None:
    text = mpol("p", applyconfig(expression)) if kind == "MutatingPolicy" else map_policy(applyconfig(expression))
    errors = _errors(text, backend)
    if expected is None:
        assert errors == []
    else:
        assert len(errors) == 1, errors
        assert "spec.mutations[0].applyConfiguration.expression" in errors[0]
        assert expected in errors[0], errors[0]


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
"""


def test_celmut_apply_refuses_the_issue_repro_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 25 item 2: this used to add ``metadata.labels.x`` to the Deployment itself and exit 0."""
    expression = 'Object.spec.template{metadata: Object.spec.template.metadata{labels: {"x": "y"}}}'
    policy = mpol("p", applyconfig(expression), resources="deployments").replace("apiGroups: ['']", "apiGroups: [apps]")
    (tmp_path / "policy.yaml").write_text(policy)
    (tmp_path / "deploy.yaml").write_text(DEPLOYMENT)
    code = main(["apply", str(tmp_path / "policy.yaml"), "-r", str(tmp_path / "deploy.yaml")])
    out, err = capsys.readouterr()
    assert code == 2, out + err
    assert "must evaluate to Object but got Object.spec.template" in err
    assert "policy.yaml" in err
    assert "x: y" not in out
