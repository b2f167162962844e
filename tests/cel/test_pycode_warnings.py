"""No Python warning from the code the compiled engine generates ever reaches a user.

Python's compiler warns about a subscript, a call or a membership test on a literal it can see
(``None[k]``: "SyntaxWarning: 'NoneType' object is not subscriptable; perhaps you missed a comma?").
``celmut eval 'dyn(null).?metadata.hasValue()'`` printed that to stderr, and ``serve`` wrote it as a
non-JSON line into its JSON log. Each row below puts ``null``, ``true`` or ``false`` — the literals the
generator writes as Python keywords — where the generated code subscripts, calls or tests it; the
generated module must compile with every warning an error, and mean what CEL says.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
from hypothesis import HealthCheck, given, settings

from celmut import cel
from celmut.cel.backends.runners import CompiledRunner
from tests.cel.test_pycode_differential import expressions

LITERAL_OPERANDS = [
    ("optional field of null (the reported one)", "dyn(null).?metadata.hasValue()"),
    ("optional field of true", "dyn(true).?a.hasValue()"),
    ("field of null", "dyn(null).a"),
    ("fields of false", "dyn(false).a.b"),
    ("has() on null", "has(dyn(null).a)"),
    ("has() on true", "has(dyn(true).a)"),
    ("string key of null", "dyn(null)['a']"),
    ("optional string key of null", "dyn(null)[?'a'].hasValue()"),
    ("int index of null", "dyn(null)[0]"),
    ("optional index of false", "dyn(false)[?0].hasValue()"),
    ("a key of an optional of null", "optional.of(dyn(null)).?a.hasValue()"),
    ("an optional chain from null", "dyn(null).?a.?b.orValue(1)"),
    ("membership in null", "1 in dyn(null)"),
    ("membership of null", "dyn(null) in [1]"),
    ("size of null", "size(dyn(null))"),
    ("a method on null", "dyn(null).startsWith('a')"),
    ("a macro over null", "dyn(null).map(x, x)"),
    ("exists over true", "dyn(true).exists(x, x)"),
    ("all over false", "dyn(false).all(x, x)"),
    ("a comprehension over null, with an index", "dyn(null).all(i, v, v)"),
    ("null in a list, then selected", "dyn([null][0]).a"),
    ("null in a map, then selected", "dyn({'k': null}.k).a"),
    ("null compared", "dyn(null) == null && null != dyn(true)"),
    ("arithmetic on null", "dyn(null) + 1"),
    ("a bound null selected", "cel.bind(n, null, dyn(n).a)"),
    ("a conditional of literals selected", "(true ? dyn(null) : dyn(false)).a"),
    ("a typed construction from null", "Object{spec: dyn(null)}.spec.a"),
]


def _generated_source(expression: str) -> str | None:
    program = cel.Environment("kyverno", backend="compiled").compile(expression)
    return program.python_source if isinstance(program, CompiledRunner) else None


def _compiles_without_warnings(source: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a SyntaxWarning becomes a SyntaxError here
        compile(source, "<generated>", "exec")


@pytest.mark.parametrize(("what", "expression"), LITERAL_OPERANDS, ids=[w for w, _ in LITERAL_OPERANDS])
def test_generated_code_compiles_without_a_warning(what: str, expression: str) -> None:
    source = _generated_source(expression)
    assert source is not None, f"{what}: not compiled to Python"
    _compiles_without_warnings(source)


@pytest.mark.parametrize(("what", "expression"), LITERAL_OPERANDS, ids=[w for w, _ in LITERAL_OPERANDS])
def test_the_compiled_engine_means_what_the_planner_means(what: str, expression: str) -> None:
    """The change that removes the warning changes no answer: the same value, or the same error."""
    answers = []
    for backend in ("compiled", "interpreted"):
        try:
            program = cel.Environment("kyverno", backend=backend).compile(expression)
            answers.append(("value", program.evaluate(cel.Activation())))
        except cel.CelError as ex:
            answers.append(("error", str(ex)))
    assert answers[0] == answers[1], what


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions())
def test_generated_expressions_compile_without_a_warning(expression: str) -> None:
    try:
        source = _generated_source(expression)
    except cel.CelCompileError:  # the strategy also writes expressions that do not type-check
        return
    if source is not None:
        _compiles_without_warnings(source)


def test_celmut_eval_prints_no_python_warning() -> None:
    """The reported command, in a fresh process with every warning an error: the answer and nothing else."""
    done = subprocess.run(
        [sys.executable, "-W", "error", "-m", "celmut", "eval", "dyn(null).?metadata.hasValue()"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "false", "")
