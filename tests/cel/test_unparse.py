"""Unparsing: the CEL text of a checked tree parses back to a tree with the same meaning, for every
row of the language tables and for literals that are easy to get wrong."""

from __future__ import annotations

from typing import Any

import pytest

from celmut import cel
from celmut.cel import unparse
from tests.cel import test_language

TRICKY = [
    r"'quote \" and backslash \\ and \n\t\r controls \x01 and é ✓ 😀'",
    r"b'\x00\xff\"\\ bytes'",
    "-9223372036854775808",
    "-(1)",
    "1 - -1",
    "18446744073709551615u",
    "1e300 * 10.0",
    "-0.0",
    "0.1 + 0.2",
    "5e-324",
    "1.0e16",
    "[1, 2, 3].map(x, x * 2).filter(y, y > 2)",
    "[1, 2].all(i, v, i < v)",
    "[1, 2].exists_one(x, x == 2) && [1, 2].existsOne(i, x, x == 2)",
    "[1, 2].map(x, x > 1, x * 10)",
    "[1, 2].transformList(i, v, i > 0, v)",
    "{'a': 1}.transformMap(k, v, v + 1)",
    "cel.bind(x, 2, x * x)",
    "optional.of(1).optMap(v, v + 1).value()",
    "{'a': {'b': 1}}.?a.?b.orValue(0)",
    "[?optional.none(), ?optional.of(1)]",
    "{?'a': optional.none(), 'b': 2}",
    "{'in': 1}.`in`",
    "has({'a-b': 1}.`a-b`)",
    "JSONPatch{op: 'add', path: '/a', value: 1}",
    "Object.spec{replicas: 1, ?paused: optional.none()}",
    "type(1) == int && type(timestamp('2024-01-01T00:00:00Z')) == google.protobuf.Timestamp",
    "!true || (false ? 1 : 2) == 2",
    "'a' in ['a'] && !('b' in {'a': 1})",
]


def _rows() -> list[str]:
    rows = [
        row[0]
        for value in vars(test_language).values()
        if isinstance(value, list) and value and isinstance(value[0], tuple)
        for row in value
        if isinstance(row[0], str)
    ]
    env = cel.Environment("kyverno", backend="compiled")
    return [source for source in [*rows, *TRICKY] if _compiles(env, source)]  # the tables hold refusals too


def _compiles(env: cel.Environment, source: str) -> bool:
    try:
        env.check(source)
    except cel.CelCompileError:
        return False
    return True


def _run(source: str, bindings: dict[str, Any]) -> Any:
    env = cel.Environment("kyverno", backend="compiled")
    try:
        return cel.to_plain(env.compile(source).evaluate(cel.Activation(**bindings)))
    except cel.CelError as ex:
        return (ex.kind, type(ex).__name__)


@pytest.mark.parametrize("source", _rows())
def test_unparsed_text_means_the_same(source: str) -> None:
    env = cel.Environment("kyverno", backend="compiled")
    checked = env.check(source)
    text = unparse.unparse(checked.expr)
    again = env.check(text)  # it parses and type-checks
    assert again.type == checked.type or again.type.is_dyn or checked.type.is_dyn, text
    bindings = {"object": {"a": 1}}
    assert repr(_run(text, bindings)) == repr(_run(source, bindings)), text


def test_library_constants_have_no_text_form() -> None:
    checked = cel.Environment("kyverno").check("type(ip('1.2.3.4')) == net.IP")
    with pytest.raises(unparse.Unrepresentable):
        unparse.unparse(checked.expr)
