"""Kubernetes' regex library (k8s.io/apiserver/pkg/cel/library/regex.go): ``find``/``findAll`` with
Go's ``FindString``/``FindAllString`` semantics (leftmost match; successive non-overlapping
matches where an empty match right after a previous match is skipped)."""

from __future__ import annotations

from typing import Any

import pytest

from celmut import cel
from tests.cel.helpers import Err, cases, check_case

FIND = [
    ("'abc 123'.find('[0-9]+')", "123"),
    # Kubernetes' doc comment says '123', but the leftmost match of [0-9]* is the empty string at 0.
    ("'abc 123'.find('[0-9]*')", ""),
    ("'abc 123'.find('xyz')", ""),
    ("'abc 123'.find('[a-z]+ [0-9]')", "abc 1"),
    ("'héllo'.find('l+')", "ll"),
    ("'日本語'.find('本.')", "本語"),
    (r"'a1b22'.find('\\d{2}')", "22"),
    ("'ABC'.find('(?i)b')", "B"),
    ("''.find('x*')", ""),
    # a constant pattern is compiled when the program is built (library/regex.go FindRegexOptimization),
    # in both profiles; a computed one fails when it runs
    ("'abc'.find('[' + '')", Err("evaluation", "Illegal regex")),
    ("'abc'.find('(?P<x' + '')", Err("evaluation", "Illegal regex")),
    ("'abc'.find('[')", Err("compile", "program instantiation failed")),
    ("'abc'.find(1)", Err("compile", "no matching overload")),
    ("(1).find('a')", Err("compile", "no matching overload")),
    ("dyn(1).find('a')", Err("evaluation", "no such overload")),
]

FIND_ALL = [
    ("'123 abc 456'.findAll('[0-9]+')", ["123", "456"]),
    ("'123 abc 456'.findAll('[0-9]+', 1)", ["123"]),
    ("'123 abc 456'.findAll('[0-9]+', 0)", []),
    ("'123 abc 456'.findAll('[0-9]+', -1)", ["123", "456"]),
    ("'123 abc 456'.findAll('[0-9]+', 5)", ["123", "456"]),
    ("'123 abc 456'.findAll('xyz')", []),
    # Go's FindAllString: the empty match right after "123" is skipped, the later ones are kept.
    ("'123 abc 456'.findAll('[0-9]*')", ["123", "", "", "", "", "456"]),
    ("'ab'.findAll('')", ["", "", ""]),
    ("'日本'.findAll('')", ["", "", ""]),
    ("'héllo wörld'.findAll('[éö]')", ["é", "ö"]),
    # Matching from a later position keeps the context: ^ only matches at the start.
    ("'aaa'.findAll('^a')", ["a"]),
    (r"'a b  c'.findAll('\\b\\w')", ["a", "b", "c"]),
    ("'aaaa'.findAll('aa')", ["aa", "aa"]),
    ("'abc'.findAll('(' + '')", Err("evaluation", "Illegal regex")),
    ("'abc'.findAll('(')", Err("compile", "program instantiation failed")),
    ("'abc'.findAll('a', 1u)", Err("compile", "no matching overload")),
    ("'abc'.findAll('a', dyn(1.0))", Err("evaluation", "no such overload")),
    ("dyn(['a']).findAll('a')", Err("evaluation", "no such overload")),
]

KUBERNETES_PROFILE = [
    ("'abc 123'.find('[0-9]+')", "123"),
    ("'123 abc 456'.findAll('[0-9]+', 1)", ["123"]),
    # a constant pattern is compiled when the program is built (library/regex.go FindRegexOptimization)
    ("'abc'.find('[')", Err("compile", "program instantiation failed")),
]


@cases(FIND + FIND_ALL)
def test_regex(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(KUBERNETES_PROFILE)
def test_regex_kubernetes_profile(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes")


def test_find_all_cost_grows_with_the_input_and_the_pattern() -> None:
    program = cel.Environment("kyverno").compile("object.text.findAll(object.pattern).size()")
    activation = cel.Activation(
        object={"text": "ab" * 50_000, "pattern": "a" * 80}, budget=cel.Budget(per_call_limit=50_000)
    )
    with pytest.raises(cel.CelCostError):
        program.evaluate(activation)
    assert program.evaluate(cel.Activation(object={"text": "ab" * 50, "pattern": "b"})) == 50
