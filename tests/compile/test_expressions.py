"""Each policy expression is parsed and type-checked once, and every issue of that one check is
reported with its field path, line and column (cel-go returns all issues from one Check and builds
the program from the AST it checked: cel-go ``cel/env.go`` Compile)."""

from __future__ import annotations

import pytest

from celmut.cel import parser
from celmut.compile.policies import compile_policy_set
from celmut.policy.errors import PolicyError
from tests.runtime.helpers import parse

POLICY = """
apiVersion: policies.kyverno.io/v1
kind: NamespacedMutatingPolicy
metadata: {{name: p, namespace: shop}}
spec:
  matchConstraints:
    resourceRules: [{{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}}]
  mutations:
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: '{expression}'
"""


def errors_of(expression: str) -> list[tuple[str, str, int, int]]:
    compiled = compile_policy_set(parse(POLICY.format(expression=expression)))
    assert len(compiled.errors) == 1
    error = compiled.errors[0]
    assert isinstance(error, PolicyError)
    return [(e.path, e.message, e.line, e.column) for e in error.errors]


def test_every_issue_of_one_expression_is_reported_with_its_position() -> None:
    path = "spec.mutations[0].applyConfiguration.expression"
    assert errors_of("Object{metadata: Object.metadata{labels: {objec.a: nam}}}") == [
        (path, "compilation failed: undeclared reference to 'objec' (in container '')", 1, 43),
        (path, "compilation failed: undeclared reference to 'nam' (in container '')", 1, 52),
    ]


def test_checks_after_compilation_reuse_the_checked_program() -> None:
    """The namespaced-policy http ban reads the checked AST; a misnamed construction is not a load
    error (Kyverno's mpol/compiler/applyconfig.go checks type names when the mutation runs)."""
    path = "spec.mutations[0].applyConfiguration.expression"
    found = errors_of('Object{spec: Object.wrong{x: http.Get("https://example.com").x}}')
    assert [(p, m) for p, m, *_ in found] == [(path, "http.* is not allowed in a NamespacedMutatingPolicy")]


def test_an_expression_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = parser.parse

    def counting(source: str, *args: object, **kwargs: object) -> object:
        calls.append(source)
        return real(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(parser, "parse", counting)
    expression = 'Object{spec: Object.spec{replicas: 7, note: "parsed-once-check"}}'
    compile_policy_set(parse(POLICY.format(expression=expression)))
    assert calls.count(expression) == 1
