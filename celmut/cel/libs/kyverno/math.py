"""Kyverno's math library (kyverno/sdk ``extensions/cel/libs/math``).

cel-go's ``math`` extension (declared elsewhere) has ``math.round(double)``; Kyverno adds a
two-argument form.

math.round(<double> value, <int> precision) -> <double>

    Rounds to ``precision`` decimal places, halves away from zero (Go's ``math.Round(v*10^p)/10^p``);
    a negative precision rounds to tens, hundreds, …

        math.round(10.125, 2) == 10.13
        math.round(12345.6789, -2) == 12300.0
"""

from __future__ import annotations

import math
from typing import Any

from celmut.cel.declarations import Library
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("kyverno.math")
fn = LIBRARY.function


def go_round(value: float) -> float:
    """Go's ``math.Round``: the nearest integer, halves away from zero; NaN and ±Inf unchanged."""
    if math.isnan(value) or math.isinf(value):
        return value
    whole: float = math.trunc(value)
    if abs(value - whole) >= 0.5:
        whole += math.copysign(1.0, value)
    return math.copysign(float(whole), value)


@fn("math.round", ("double", "int"), "double")
def round_to(value: Any, precision: Any) -> float:
    if type(value) is not float or type(precision) is not int:
        raise no_such_overload("math.round", value, precision)
    try:
        shift = math.pow(10.0, float(precision))
    except OverflowError:
        shift = math.inf
    rounded = go_round(value * shift)
    if shift == 0.0:  # IEEE division by zero, as Go computes it
        return math.nan if rounded == 0.0 or math.isnan(rounded) else math.copysign(math.inf, rounded)
    return rounded / shift
