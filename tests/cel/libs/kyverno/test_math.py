"""Kyverno's ``math.round(double, int)``: rows from kyverno/sdk ``extensions/cel/libs/math/impl_test.go``
and Go's ``math.Round`` (halves away from zero)."""

from __future__ import annotations

from typing import Any

from tests.cel.helpers import Err, cases, check_case

ROWS = [
    ("math.round(10.125, 2)", 10.13),
    ("math.round(10.125, 0)", 10.0),
    ("math.round(12345.6789, -2)", 12300.0),
    ("math.round(2.5, 0)", 3.0),  # away from zero, not to even
    ("math.round(-2.5, 0)", -3.0),
    ("math.round(0.49999999999999994, 0)", 0.0),
    ("math.round(-0.4, 0) == 0.0", True),
    ("math.round(1.005, 2)", 1.0),  # 1.005 is 1.00499999999999989... in binary
    ("math.round(3.14159, 3)", 3.142),
    ("math.round(1.0 / 0.0, 2) > 1e308", True),
    ("math.round(1.5, 400) != math.round(1.5, 400)", True),  # Go: Round(1.5*Inf)/Inf is NaN
    ("math.round(1.5, -400) != math.round(1.5, -400)", True),  # 0/0: NaN, as in Go
    ("math.round(10, 2)", Err("compile", "no matching overload")),
    ("math.round(10.5, 2.0)", Err("compile", "no matching overload")),
    ("math.round(dyn(10), 2)", Err("evaluation", "no such overload")),
]


@cases(ROWS)
def test_round(expression: str, expected: Any) -> None:
    check_case(expression, expected)


def test_kubernetes_profile_has_no_kyverno_math() -> None:
    check_case("math.round(1.5, 1)", Err("compile", "undeclared reference to 'math.round'"), profile="kubernetes")
