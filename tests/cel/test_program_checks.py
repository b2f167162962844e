"""What the kubernetes and kyverno profiles refuse at compile time, and what they leave to run time, as the API
server does (celmut/cel/program_checks.py). Each row names the upstream mechanism it follows:
cel-go ``cel/validator.go`` (the AST validators k8s.io/apiserver/pkg/cel/environment/base.go turns on)
and ``interpreter/decorators.go`` ``decOptimize`` / ``decRegexOptimizer`` (base.go's
``cel.EvalOptions(cel.OptOptimize)``). Every other constant failure is a runtime error: the
failurePolicy decides in admission, and the offline CLI exits 1, not 2.
"""

from __future__ import annotations

from typing import Any

import pytest

from celmut.main import main
from tests.cel.helpers import Err, cases, check_case

REFUSED = [
    # ValidateDurationLiterals / ValidateTimestampLiterals: the literal argument, anywhere
    ("duration('1x')", Err("compile", "invalid duration argument")),
    ("object.spec.x + duration('bad')", Err("compile", "invalid duration argument")),
    ("timestamp('yesterday')", Err("compile", "invalid timestamp argument")),
    # ValidateRegexLiterals: the literal pattern of matches, even on a non-constant receiver
    ("object.metadata.name.matches('(')", Err("compile", "invalid matches argument")),
    # decOptimize / maybeOptimizeConstUnary: a conversion of a constant fails env.Program
    ("int('twelve')", Err("compile", "program instantiation failed: cannot convert string 'twelve' to int")),
    ("int(string('x'))", Err("compile", "program instantiation failed")),  # nested conversions fold
    ("true ? 1 : int('q')", Err("compile", "program instantiation failed")),  # planned, never run
    ("[1, 2].map(x, uint(-1))", Err("compile", "program instantiation failed")),
    ("duration(string('1x'))", Err("compile", "program instantiation failed")),
    # decRegexOptimizer: k8s library/regex.go FindRegexOptimization / FindAllRegexOptimization
    ("object.metadata.name.find(')')", Err("compile", "program instantiation failed")),
    ("'abc'.findAll('[', 1)", Err("compile", "program instantiation failed")),
]

AT_RUN_TIME = [
    # No validator and no folding covers a library call or an operator: runtime errors there.
    ("ip('192.168.0.1.0')", Err("evaluation")),
    ("cidr('10.0.0.0/33')", Err("evaluation", "prefix length out of range")),
    ("quantity('1.5Gi.')", Err("evaluation")),
    ("semver('v1.0')", Err("evaluation", "No Major.Minor.Patch elements found")),
    ("url('../relative-path')", Err("evaluation", "invalid URI for request")),
    ("[].min()", Err("evaluation", "min called on empty list")),
    ("'tacocat'.charAt(30)", Err("evaluation", "index out of range: 30")),
    ("1 / 0", Err("evaluation", "division by zero")),
    ("timestamp('9999-12-31T23:59:59.999999999Z') + duration('1ns')", Err("evaluation", "out of range")),
    ("int(object.spec.replicas) > 0", Err("evaluation")),  # not a constant: not folded
    # a valid constant still folds and works, also one with no CEL text form
    ("int('12') + duration('1s').getSeconds()", 13),
    ("type(net.IP) == type(type(ip('1.2.3.4')))", True),
]


@cases(REFUSED + AT_RUN_TIME)
def test_kubernetes_refuses_what_the_api_server_refuses_and_no_more(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes", object={"spec": {"x": "y"}, "metadata": {"name": "n"}})


@cases(REFUSED + AT_RUN_TIME)
def test_kyverno_refuses_what_its_mutating_policy_compiler_refuses_and_no_more(expression: str, expected: Any) -> None:
    """Kyverno compiles a MutatingPolicy with the API server's compiler on its base environment
    (kyverno pkg/cel/policies/mpol/compiler/compiler.go: environment.MustBaseEnvSet,
    plugincel.NewCompositedCompiler; each CompilationErrors() is a policy error)."""
    check_case(expression, expected, profile="kyverno", object={"spec": {"x": "y"}, "metadata": {"name": "n"}})


@pytest.mark.parametrize(
    ("expression", "exit_code"),
    [("ip('192.168.0.1.0')", 1), ("quantity('1.5Gi.')", 1), ("int('twelve')", 2), ("duration('1x')", 2)],
)
def test_celmut_eval_exits_1_for_a_runtime_error_and_2_for_a_refusal(
    expression: str, exit_code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "--profile", "kubernetes", expression]) == exit_code, capsys.readouterr()
