"""Compile one CEL expression of a policy, recording failures as field errors."""

from __future__ import annotations

from collections.abc import Callable

from celmut import cel
from celmut.cel import ast
from celmut.cel import types as t
from celmut.cel.backends.base import Program
from celmut.cel.checker import CheckResult
from celmut.policy.errors import FieldError

ResultCheck = Callable[[CheckResult], str | None]


def compile_expression(
    env: cel.Environment,
    source: str,
    path: str,
    errors: list[FieldError],
    expect: ResultCheck | None = None,
    kyverno: str = "",
) -> Program | None:
    """The program for ``source``, or None with a :class:`FieldError` per issue (path, message, line,
    column). Parsed and checked once: ``expect`` inspects the program's checked AST, as cel-go builds
    the program from the AST it checked and reports every issue of one check. ``kyverno``: how Kyverno
    words a refusal by ``expect`` (:attr:`FieldError.kyverno_detail`)."""
    try:
        program = env.compile(source)
    except cel.CelCompileError as ex:
        errors += [
            FieldError(path, f"compilation failed: {i.message}", i.line, i.column, source, issue=i.message)
            for i in ex.issues
        ]
        return None
    if expect is not None:
        problem = expect(program.checked)
        if problem is not None:
            errors.append(FieldError(path, problem, expression=source, kyverno_detail=kyverno))
            return None
    return program


def expect_bool(checked: CheckResult) -> str | None:
    if checked.type.kind in ("bool", "dyn", "error"):
        return None
    return f"must evaluate to bool, but the expression has type {checked.type}"


def expect_string(checked: CheckResult) -> str | None:
    if checked.type.kind in ("string", "dyn", "null_type", "error"):
        return None
    return f"must evaluate to string, but the expression has type {checked.type}"


def expect_map(checked: CheckResult) -> str | None:
    if checked.type.kind in ("map", "dyn", "error", "struct"):
        return None
    return f"must evaluate to map(string, dyn), but the expression has type {checked.type}"


def expect_json_patches(strict_empty_list: bool) -> ResultCheck:
    """JSONPatch mutations must return list(JSONPatch). Kubernetes also refuses a bare ``[]``."""

    def check(checked: CheckResult) -> str | None:
        result = checked.type
        if strict_empty_list and isinstance(checked.expr, ast.CreateList) and not checked.expr.elements:
            return "must evaluate to list(JSONPatch), but a bare [] has type list(dyn)"
        if result.kind == "dyn":
            return None
        if result.kind == "list" and result.element.kind in ("dyn", "param", "error", "null_type"):
            return None
        if result.kind == "list" and result.element == t.struct("JSONPatch"):
            return None
        return f"must evaluate to list(JSONPatch), but the expression has type {result}"

    return check


def expect_object(checked: CheckResult) -> str | None:
    """An ApplyConfiguration must type as exactly ``Object``: ``Object.spec.template{…}``, a string,
    a map or ``dyn`` are refused, as ``k8s.io/apiserver/pkg/admission/plugin/cel/compile.go``
    ``CompileCELExpression`` does (``ast.OutputType().IsExactType(returnType)``; the return type of
    ``patch.ApplyConfigurationCondition`` is ``Object``), for MAPs and for Kyverno's MutatingPolicy
    compiler, which calls the same ``CompileMutatingEvaluator``."""
    result = checked.type
    if result == APPLY_CONFIGURATION_TYPE or result.kind == "error":
        return None
    return f"must evaluate to Object but got {result}"


APPLY_CONFIGURATION_TYPE = t.struct("Object")


# Kyverno's words for an expression of the wrong type in a MutatingPolicy (pkg/cel/compiler/compiler.go:
# ``output is expected to be of type %s`` with cel-go's TypeName; pkg/cel/policies/mpol/compiler/compiler.go
# for targetMatchConstraints.expression).
KYVERNO_BOOL = "output is expected to be of type bool"
KYVERNO_JSON_PATCHES = "output is expected to be of type list"  # TypeName() of list(JSONPatch)
KYVERNO_OBJECT = "output is expected to be of type Object"
KYVERNO_STRING_OR_NULL = "output is expected to be either of type string or null_type"
KYVERNO_MAP = "output type must be a map"
