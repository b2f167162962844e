"""No path from a policy's text to arbitrary Python (docs/security.md, "CEL compiled to Python").

The compiled engine writes Python source for each expression. Its rule: every value of the
expression (literals, field, function and type names) is a constant the generated function closes
over, never text in the source. These tests parse the generated source of hostile expressions and
of generated ones and check that it is made of nothing else: names the generator makes, the helpers
and safe builtins of its namespace, integers, True/False/None, and the attributes its own objects
have. And each hostile expression means what CEL says: ``object.__import__`` is a map key.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from celmut import cel
from celmut.cel import types
from celmut.cel.backends.pycode_runtime import NAMESPACE, SAFE_BUILTINS
from celmut.cel.backends.pycode_source import GENERATED_NAME
from celmut.cel.backends.runners import CompiledRunner
from tests.cel.test_pycode_differential import expressions

cel.Environment("kyverno")  # raises the recursion limit (environment.py) before hypothesis records it

FIXED_NAMES = {"ctx", "_make", "_cel", "_K", "_V", "_B", "_S", "_x"} | set(NAMESPACE) | set(SAFE_BUILTINS)
# attributes of EvalContext, Budget, lists, dicts, OptionalValue, LazyVariables, StructValue and str
ATTRIBUTES = {
    "cost", "limit", "next_clock_check", "charge", "allocated", "max_bytes", "allocate",
    "vars", "budget", "slots", "append", "items", "present", "value", "cel_select", "type_name",
    "startswith", "endswith",
}  # fmt: skip


def check_source(source: str) -> None:
    """The generated module holds only generated names, fixed names, ints and True/False/None."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            assert GENERATED_NAME.fullmatch(node.id) or node.id in FIXED_NAMES, node.id
        elif isinstance(node, ast.arg):
            assert node.arg in FIXED_NAMES, node.arg
        elif isinstance(node, ast.Constant):
            assert node.value is None or type(node.value) in (int, bool), repr(node.value)
        elif isinstance(node, ast.Attribute):
            assert node.attr in ATTRIBUTES, node.attr
        elif isinstance(node, ast.FunctionDef):
            assert node.name in FIXED_NAMES, node.name
        else:
            assert not isinstance(node, ast.Import | ast.ImportFrom | ast.Lambda | ast.Global | ast.ClassDef)


def compiled(expression: str, **variables: Any) -> CompiledRunner:
    program = cel.Environment("kyverno", variables=dict.fromkeys(variables, types.DYN)).compile(expression)
    assert isinstance(program, CompiledRunner) and program.python_source is not None, expression
    check_source(program.python_source)
    return program


HOSTILE: list[tuple[str, str, dict[str, Any], Any]] = [
    # (what, expression, object, result)
    ("quotes closing a string", """object["'); __import__('os').system('id'); ('"]""", {"'); __import__('os').system('id'); ('": 1}, 1),
    ("triple quotes", '''object["\\"\\"\\"x"] + object['\\'\\'\\'']''', {'"""x': "a", "'''": "b"}, "ab"),
    ("backslashes", r"object['\\'] + 'x\\n'", {"\\": "b"}, "bx\\n"),
    ("a newline and a line separator", "object['a\\nb'] + '\\u2028' + '\\u0085'", {"a\nb": "q"}, "q\u2028\u0085"),
    ("NUL and surrogate-free unicode", "object['\\x00'] + '€𝄞'", {"\x00": "z"}, "z€𝄞"),
    ("__import__ as a field name", "object.__import__", {"__import__": "just a key"}, "just a key"),
    ("__class__ and __globals__", "has(object.__class__) || has(object.__globals__)", {}, False),
    ("__builtins__ as a map key", "{'__builtins__': 1}.__builtins__ + {'__import__': 2}['__import__']", {}, 3),
    ("a dunder comprehension variable", "[1, 2].map(__import__, __import__ + 1)", {}, [2, 3]),
    ("a dunder bound variable", "cel.bind(__builtins__, 40, __builtins__ + 2)", {}, 42),
    ("a dunder function name on a value", "object.exists(_cel, _cel == 'ctx')", {"ctx": 1}, True),
    ("names of the generated code as fields", "object._V + object.ctx + object._k0", {"_V": 1, "ctx": 2, "_k0": 3}, 6),
    ("a huge string literal", "size('" + "x" * 50_000 + "' + object.s)", {"s": "y"}, 50_001),
    ("the largest integers", "9223372036854775807 - object.n - int(18446744073709551615u / 4294967296u)", {"n": 7}, 9223372036854775807 - 7 - 4294967295),
    ("python keywords as fields", "object.lambda + object['import'] + object.True", {"lambda": 1, "import": 2, "True": 3}, 6),
]  # fmt: skip


@pytest.mark.parametrize(
    ("expression", "obj", "expected"), [row[1:] for row in HOSTILE], ids=[row[0] for row in HOSTILE]
)
def test_a_hostile_expression_is_data_in_the_generated_code(expression: str, obj: Any, expected: Any) -> None:
    program = compiled(expression)
    assert cel.to_plain(program.evaluate(cel.Activation(object=obj, budget=cel.Budget()))) == expected


def test_a_variable_name_is_data_too() -> None:
    program = compiled("variables.zqzq + 1", zqzq=None)
    assert "zqzq" not in (program.python_source or "")  # the name is a cell, not source


def test_nesting_past_the_parser_limit_is_a_clear_compile_error() -> None:
    with pytest.raises(cel.CelCompileError, match="recursion limit exceeded: 250"):
        cel.Environment("kyverno").compile("(" * 300 + "object.n" + ")" * 300)


@pytest.mark.parametrize(
    "expression",
    [
        "-" * 120 + "object.n",
        "!" * 240 + "object.b",
        " && ".join(["object.b"] * 240),
        "[" * 120 + "object.n" + "]" * 120,
        "object.n" + " + object.n" * 240,
        "[1]" + ".map(x, [x]" * 60 + ")" * 60,
    ],
    ids=["negations", "nots", "a flat &&", "nested lists", "a long sum", "nested maps"],
)
def test_nesting_up_to_the_parser_limit_compiles_without_a_recursion_error(expression: str) -> None:
    program = cel.Environment("kyverno").compile(expression)  # not a RecursionError from Python's compiler
    if isinstance(program, CompiledRunner) and program.python_source is not None:
        check_source(program.python_source)
    program.evaluate(cel.Activation(object={"n": 1, "b": True}, budget=cel.Budget()))


def test_the_namespace_offers_no_way_out() -> None:
    assert set(SAFE_BUILTINS) <= {"type", "len", "isinstance", "enumerate", "str", "int", "list", "tuple", "dict"} | {
        "KeyError",
        "TypeError",
    }
    assert NAMESPACE["__builtins__"] is SAFE_BUILTINS
    for dangerous in ("__import__", "eval", "exec", "open", "getattr", "compile", "globals", "vars"):
        assert dangerous not in SAFE_BUILTINS and dangerous not in NAMESPACE
        assert hasattr(builtins, dangerous)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(expression=expressions())
def test_generated_expressions_generate_only_safe_source(expression: str) -> None:
    try:
        program = cel.Environment("kyverno").compile(expression)
    except cel.CelCompileError:
        return
    if isinstance(program, CompiledRunner) and program.python_source is not None:
        check_source(program.python_source)
