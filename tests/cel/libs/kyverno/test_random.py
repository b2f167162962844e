"""Kyverno's random library: rows from kyverno/sdk ``extensions/cel/libs/random/impl_test.go``
(the output must match the pattern) and goregen's handling of Go regexp syntax with default flags.
``Services.rng`` is seeded so each row is reproducible."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from celmut.cel.lookups import Services
from tests.cel.helpers import Err, cases, check_case, evaluate

MATCHING = [
    ("random()", r"[0-9a-z]{8}"),
    ("random.random()", r"[0-9a-z]{8}"),
    (
        'random("[A-Z0-9]{8}-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{12}")',
        r"[A-Z0-9]{8}-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{12}",
    ),
    ('random.random("[a-z]{5}")', r"[a-z]{5}"),
    ('random("prefix-[0-9]{2,4}")', r"prefix-[0-9]{2,4}"),
    ('random("(foo|bar|baz)-[a-f]+")', r"(foo|bar|baz)-[a-f]+"),
    ('random("^a?b*c{3}$")', r"a?b*c{3}"),  # anchors generate nothing
    ('random("[[:upper:]][[:digit:]][[:xdigit:]]")', r"[A-Z][0-9][0-9A-Fa-f]"),
    ('random("[^a-z]{20}")', r"[^a-z\n]{20}"),  # a negated class never yields a newline
    ('random("x{0}y{1}z{2,}")', r"yzz+"),
    (r'random("\\.\\*\\x41\\x{263A}\\t")', "\\.\\*A\u263a\t"),
    ('random("[-a][a-]")', r"[-a][a-]"),
    ('random("(a|)")', r"a?"),
    ('random("")', r""),
    ('random("()")', r""),
]


@pytest.mark.parametrize(("expression", "pattern"), MATCHING, ids=[row[0][:60] for row in MATCHING])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_output_matches_the_pattern(expression: str, pattern: str, seed: int) -> None:
    result = evaluate(expression, services=Services(rng=random.Random(seed)))
    assert isinstance(result, str)
    assert re.fullmatch(pattern, result, re.S), f"{expression} -> {result!r}"


def test_seeded_rng_is_reproducible() -> None:
    first = evaluate('random("[a-z]{16}")', services=Services(rng=random.Random(42)))
    second = evaluate('random("[a-z]{16}")', services=Services(rng=random.Random(42)))
    other = evaluate('random("[a-z]{16}")', services=Services(rng=random.Random(43)))
    assert first == second != other


def test_dot_generates_any_rune() -> None:
    result = evaluate('random(".{200}")', services=Services(rng=random.Random(7)))
    assert len(result) == 200  # goregen draws runes up to 2^31; invalid ones become U+FFFD


ERRORS = [
    (r'random("\\d{4}")', Err("evaluation", "error parsing regexp: invalid escape sequence: `\\d`")),
    (r'random("\\w")', Err("evaluation", "invalid escape sequence")),
    ('random("(?i)abc")', Err("evaluation", "missing argument to repetition operator: `?`")),
    ('random("a**")', Err("evaluation", "invalid nested repetition operator: `**`")),
    ('random("a*?")', Err("evaluation", "invalid nested repetition operator: `*?`")),
    ('random("*a")', Err("evaluation", "missing argument to repetition operator: `*`")),
    ('random("a{1001}")', Err("evaluation", "invalid repeat count")),
    ('random("a{3,2}")', Err("evaluation", "invalid repeat count")),
    ('random("(ab")', Err("evaluation", "missing closing )")),
    ('random("ab)")', Err("evaluation", "unexpected )")),
    ('random("[abc")', Err("evaluation", "missing closing ]")),
    ('random("[z-a]")', Err("evaluation", "invalid character class range")),
    ('random("[[:nope:]]")', Err("evaluation", "invalid character class range")),
    ('random("abc\\\\")', Err("evaluation", "trailing backslash")),
    ('random("(a*)*(b*)*(c*)*")', Err("evaluation", "generates more than")),
    ("random(1)", Err("compile", "no matching overload")),
    ("random(dyn(1))", Err("evaluation", "no such overload")),
]


@cases(ERRORS)
def test_errors(expression: str, expected: Any) -> None:
    check_case(expression, expected, services=Services(rng=random.Random(0)))


def test_literal_brace_is_not_a_repeat() -> None:
    check_case('random("a{,2}")', "a{,2}")
    check_case('random("{x}")', "{x}")


def test_kubernetes_profile_has_no_random() -> None:
    check_case("random()", Err("compile", "undeclared reference to 'random'"), profile="kubernetes")
