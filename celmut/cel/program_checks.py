"""What the API server refuses when it builds a program, beyond type checking (both profiles).

Kubernetes refuses at compile time exactly what two cel-go mechanisms reject, and nothing else —
a constant call that fails in any other function (``ip("192.168.0.1.0")``, ``quantity("1.5Gi.")``,
``[].min()``) is a runtime error there, handled by the failurePolicy:

- the AST validators of ``k8s.io/apiserver/pkg/cel/environment/base.go`` (cel-go ``cel/validator.go``):
  ``ValidateDurationLiterals`` and ``ValidateTimestampLiterals`` evaluate ``duration``/``timestamp`` of a
  literal ("invalid duration argument"), ``ValidateRegexLiterals`` compiles the literal pattern of
  ``matches`` ("invalid matches argument"). (``ValidateHomogeneousAggregateLiterals`` is the checker's.)
- ``cel.EvalOptions(cel.OptOptimize)`` in the same file: cel-go's ``interpreter/decorators.go``
  ``decOptimize`` folds every type conversion (``int``, ``uint``, ``double``, ``bool``, ``string``,
  ``bytes``, ``timestamp``, ``duration``, ``dyn``, ``type``) of one constant argument — a literal, a
  folded conversion, or a list/map literal of constants (``maybeBuildListLiteral``) — and an error
  there fails ``env.Program``; the regex optimizations (cel-go ``matches``, Kubernetes'
  ``library/regex.go`` ``find``/``findAll``) compile a constant pattern the same way. The API server
  reports ``program instantiation failed: …`` (``plugin/cel/compile.go``).

Kyverno compiles a MutatingPolicy with the same compiler on the same base environment
(``pkg/cel/policies/mpol/compiler/compiler.go``: ``environment.MustBaseEnvSet`` extended with its
libraries, then ``plugincel.NewCompositedCompiler``; every ``CompilationErrors()`` of a variable,
match condition or mutation is a policy error), so the kyverno profile refuses the same.
"""

from __future__ import annotations

from collections.abc import Callable

from celmut.cel import ast
from celmut.cel.errors import CelEvaluationError, Issue
from celmut.cel.regex import compile_pattern

# overloads.IsTypeConversionFunction (cel-go common/overloads/overloads.go)
CONVERSIONS = frozenset({"int", "uint", "double", "bool", "string", "bytes", "timestamp", "duration", "dyn", "type"})
# cel-go MatchesRegexOptimization; k8s library/regex.go FindRegexOptimization, FindAllRegexOptimization
REGEX_FUNCTIONS = frozenset({"matches", "find", "findAll"})
_VALIDATED_LITERALS = frozenset({"duration", "timestamp"})  # ValidateDurationLiterals, ValidateTimestampLiterals

Evaluate = Callable[[ast.Node], None]  # evaluates a constant sub-expression; raises CelEvaluationError


def program_issues(expr: ast.Node, evaluate: Evaluate) -> list[Issue]:
    """The issues the API server's validators and program planner find in a checked tree."""
    issues: list[Issue] = []
    _validate_literals(expr, evaluate, issues)
    if not issues:
        _fold(expr, evaluate, issues)
    return issues


def _validate_literals(expr: ast.Node, evaluate: Evaluate, issues: list[Issue]) -> None:
    """cel-go ``formatValidator.Validate``: the first argument of the call, when it is a literal."""
    for node in expr.walk():
        if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Literal):
            continue
        literal = node.args[0]
        if node.function in _VALIDATED_LITERALS and node.target is None and len(node.args) == 1:
            try:
                evaluate(node)
            except CelEvaluationError:
                issues.append(Issue(f"invalid {node.function} argument", literal.line, literal.column))
        elif node.function == "matches" and isinstance(literal.value, str):
            try:
                compile_pattern(literal.value)
            except CelEvaluationError:
                issues.append(Issue("invalid matches argument", literal.line, literal.column))


def _fold(node: ast.Node, evaluate: Evaluate, issues: list[Issue]) -> bool:
    """Plan ``node`` bottom up as cel-go does with OptOptimize; True when it folds to a constant."""
    folded = [_fold(child, evaluate, issues) for child in node.children()]
    if issues:
        return False
    if isinstance(node, ast.Literal):
        return True
    if isinstance(node, ast.CreateList):
        return all(folded) and not any(e.optional for e in node.elements)
    if isinstance(node, ast.CreateMap):
        return all(folded) and not any(e.optional for e in node.entries)
    if not isinstance(node, ast.Call):
        return False
    if node.function in REGEX_FUNCTIONS:
        pattern = _pattern_argument(node)
        if isinstance(pattern, ast.Literal) and isinstance(pattern.value, str):
            try:
                compile_pattern(pattern.value)
            except CelEvaluationError as ex:
                issues.append(Issue(f"program instantiation failed: {ex.message}", pattern.line, pattern.column))
        return False
    if node.function in CONVERSIONS and node.target is None and len(node.args) == 1 and folded[0]:
        try:
            evaluate(node)
        except CelEvaluationError as ex:
            issues.append(Issue(f"program instantiation failed: {ex.message}", node.line, node.column))
            return False
        return True
    return False


def _pattern_argument(node: ast.Call) -> ast.Node | None:
    """The interpreter's ``RegexIndex`` 1: the first argument of a member call, the second of a global one."""
    if node.target is not None:
        return node.args[0] if node.args else None
    return node.args[1] if len(node.args) > 1 else None
