"""cel-go ext Math (version 2): rows ported from cel-go's ext/math_test.go (TestMath, TestMathStaticErrors,
TestMathRuntimeErrors, TestMathVersions) and the library's doc examples.

cel-go's greatest/least macros turn three or more arguments into a list literal, which Kubernetes' and
Kyverno's homogeneous-literal rule then checks; celmut declares the same shapes (one number or list, two
numbers of any numeric types, three or more of one type), so mixed literals need dyn() here as there."""

from __future__ import annotations

from typing import Any

from tests.cel.helpers import Err, cases, check_case

GREATEST_LEAST = [
    ("math.least(-0.5) == -0.5", True),
    ("math.least(-1) == -1", True),
    ("math.least(1u) == 1u", True),
    ("math.least(42.0, -0.5) == -0.5", True),
    ("math.least(-1, 0) == -1", True),
    ("math.least(-1, -1) == -1", True),
    ("math.least(1u, 42u) == 1u", True),
    ("math.least(42.0, -0.5, -0.25) == -0.5", True),
    ("math.least(-1, 0, 1) == -1", True),
    ("math.least(-1, -1, -1) == -1", True),
    ("math.least(1u, 42u, 0u) == 0u", True),
    ("math.least(1, 1.0) == 1", True),
    ("math.least(1, -2.0) == -2.0", True),
    ("math.least(2, 1u) == 1u", True),
    ("math.least(1.5, 2) == 1.5", True),
    ("math.least(1.5, -2) == -2", True),
    ("math.least(2.5, 1u) == 1u", True),
    ("math.least(1u, 2) == 1u", True),
    ("math.least(1u, -2) == -2", True),
    ("math.least(2u, 2.5) == 2u", True),
    ("math.least(1u, dyn(42)) == 1", True),
    ("math.least(1u, dyn(42), dyn(0.0)) == 0u", True),
    ("math.least([1u, 42u, 0u]) == 0u", True),
    ("math.least(2.1, -1.0) == -1.0", True),
    ("math.least(0, 1, 2) == 0", True),
    ("math.least(-42.0, -21.5, -100.0)", -100.0),
    ("math.least([-42.0, -21.5, -100.0])", -100.0),
    ("math.greatest(-0.5) == -0.5", True),
    ("math.greatest(-1) == -1", True),
    ("math.greatest(1u) == 1u", True),
    ("math.greatest(42.0, -0.5) == 42.0", True),
    ("math.greatest(-1, 0) == 0", True),
    ("math.greatest(-1, -1) == -1", True),
    ("math.greatest(1u, 42u) == 42u", True),
    ("math.greatest(42.0, -0.5, -0.25) == 42.0", True),
    ("math.greatest(-1, 0, 1) == 1", True),
    ("math.greatest(-1, -1, -1) == -1", True),
    ("math.greatest(1u, 42u, 0u) == 42u", True),
    ("math.greatest(1, 1.0) == 1", True),
    ("math.greatest(1, -2.0) == 1", True),
    ("math.greatest(2, 1u) == 2", True),
    ("math.greatest(1.5, 2) == 2", True),
    ("math.greatest(1.5, -2) == 1.5", True),
    ("math.greatest(2.5, 1u) == 2.5", True),
    ("math.greatest(1u, 2) == 2", True),
    ("math.greatest(1u, -2) == 1u", True),
    ("math.greatest(2u, 2.5) == 2.5", True),
    ("math.greatest(1u, dyn(42)) == 42.0", True),
    ("math.greatest(1u, dyn(0.0), 0u) == 1", True),
    ("math.greatest([1u, dyn(0.0), 0u]) == 1", True),
    ("math.greatest(1, 2) == 2", True),
    ("math.greatest(1)", 1),
    ("math.greatest(1u, 2u)", 2),
    ("math.greatest(-42.0, -21.5, -100.0)", -21.5),
    ("math.greatest([-42.0, -21.5, -100.0])", -21.5),
    ("type(math.greatest(1, 2.0))", "double"),  # the larger value keeps its own type
    ("type(math.greatest(1u, 2u))", "uint"),
    ("math.greatest(1, 1.0)", 1),  # ties keep the first argument
    ("math.least(1.0, 1)", 1.0),
    ("math.greatest(2u, 2.0)", 2),
    ("math.greatest(1, dyn(2.5), 3)", 3),
    ("math.greatest(dyn(1), 2.5, dyn(3u))", 3),
    ("math.greatest(9223372036854775807, 18446744073709551615u)", 18446744073709551615),
    ("math.greatest(dyn([1, 5, 3]))", 5),
    # Static errors: cel-go's macro reports some of these with its own wording.
    ("math.least()", Err("compile", "found no matching overload for 'math.least' applied to '()'")),
    ("math.least('hello')", Err("compile", "no matching overload")),
    ("math.least({})", Err("compile", "no matching overload")),
    ("math.least(1, true)", Err("compile", "no matching overload")),
    ("math.least(1, 2, true)", Err("compile", "no matching overload")),
    ("math.greatest()", Err("compile", "found no matching overload for 'math.greatest' applied to '()'")),
    ("math.greatest(true)", Err("compile", "no matching overload")),
    ("math.greatest([1, true])", Err("compile", "list literal")),
    ("math.greatest(1, true)", Err("compile", "no matching overload")),
    ("math.greatest(1, 2, true)", Err("compile", "no matching overload")),
    # cel-go's macro makes mixed arguments a list(dyn) (cel-spec math_ext.textproto "quaternary_mixed")
    ("math.greatest(1, 2.5, 3u)", 3),
    ("math.greatest(['a'])", Err("compile", "no matching overload")),
    # Runtime errors.
    ("math.greatest([])", Err("evaluation", "math.@max(list) argument must not be empty")),  # cel-go: macro error
    ("math.least(dyn([]))", Err("evaluation", "math.@min(list) argument must not be empty")),
    ("math.least(dyn(['hello']))", Err("evaluation", "no such overload: math.@min")),
    ("math.least(dyn([[], []]))", Err("evaluation", "no such overload: math.@min")),
    ("math.least([dyn(1), true, 2])", Err("evaluation", "no such overload: math.@min")),
    ("math.least(dyn('string'))", Err("evaluation", "no such overload: math.@min")),
    ("math.greatest(dyn([true]))", Err("evaluation", "no such overload: math.@max")),
    ("math.greatest([dyn(1), true, 2])", Err("evaluation", "no such overload: math.@max")),
    ("math.greatest(dyn('string'))", Err("evaluation", "no such overload: math.@max")),
    ("math.greatest(dyn([]), 1)", Err("evaluation", "no such overload: math.@max")),
    ("math.greatest(1, dyn([]))", Err("evaluation", "no such overload: math.@max")),
    ("math.least(dyn([]), 1)", Err("evaluation", "no such overload: math.@min")),
    ("math.greatest(1.0, 0.0/0.0)", Err("evaluation", "NaN values cannot be ordered")),
]

ROUNDING_AND_FLOATS = [
    ("math.ceil(1.2) == 2.0", True),
    ("math.ceil(-1.2) == -1.0", True),
    ("math.floor(1.2) == 1.0", True),
    ("math.floor(-1.2) == -2.0", True),
    ("math.round(1.2) == 1.0", True),
    ("math.round(1.5) == 2.0", True),
    ("math.round(-1.5) == -2.0", True),
    ("math.isNaN(math.round(0.0/0.0))", True),
    ("math.round(-1.2) == -1.0", True),
    ("math.trunc(-1.3) == -1.0", True),
    ("math.trunc(1.3) == 1.0", True),
    ("math.ceil(1.5) == 2.0", True),
    ("math.ceil(42.01) == 43.0", True),
    ("math.floor(42.01) == 42.0", True),
    ("math.round(42.5) == 43.0", True),
    ("math.round(2.5)", 3.0),  # ties away from zero, not to even
    ("math.round(0.49999999999999994)", 0.0),
    ("math.round(4503599627370497.0)", 4503599627370497.0),
    ("math.trunc(42.0) == 42.0", True),
    ("math.isInf(math.ceil(1.0/0.0))", True),
    ("string(math.ceil(-0.5))", "-0"),  # Go's math.Ceil keeps the sign of zero
    ("string(math.trunc(-0.5))", "-0"),
    ("string(math.round(-0.4))", "-0"),
    ("math.isNaN(0.0/0.0)", True),
    ("!math.isNaN(1.0/0.0)", True),
    ("math.isFinite(1.0/1.5)", True),
    ("!math.isFinite(1.0/0.0)", True),
    ("math.isInf(1.0/0.0)", True),
    ("math.isInf(-1.0/0.0)", True),
    ("math.isInf(1.2)", False),
    ("math.isNaN(1.2)", False),
    ("math.isFinite(0.0/0.0)", False),
    ("math.isInf(42.0 / 0.0) == true", True),
    ("math.isNaN(double('nan')) == true", True),
    ("math.isFinite(42.1) == true", True),
    ("math.isInf(1)", Err("compile", "no matching overload")),
    ("math.isInf(dyn(1u))", Err("evaluation", "no such overload: math.isInf(uint)")),
    ("math.isFinite(dyn(1u))", Err("evaluation", "no such overload: math.isFinite(uint)")),
    ("math.isNaN(dyn(1u))", Err("evaluation", "no such overload: math.isNaN(uint)")),
    ("math.ceil(dyn(''))", Err("evaluation", "no such overload: math.ceil(string)")),
    ("math.floor(dyn(''))", Err("evaluation", "no such overload: math.floor(string)")),
    ("math.round(dyn(1))", Err("evaluation", "no such overload: math.round(int)")),
    ("math.trunc(dyn(1u))", Err("evaluation", "no such overload: math.trunc(uint)")),
]

SIGN_ABS_SQRT = [
    ("math.sign(-42) == -1", True),
    ("math.sign(0) == 0", True),
    ("math.sign(42) == 1", True),
    ("math.sign(0u) == 0u", True),
    ("math.sign(42u) == 1u", True),
    ("math.sign(-0.3) == -1.0", True),
    ("math.sign(0.0) == 0.0", True),
    ("math.isNaN(math.sign(0.0/0.0))", True),
    ("math.sign(1.0/0.0) == 1.0", True),
    ("math.sign(-1.0/0.0) == -1.0", True),
    ("math.sign(0.3) == 1.0", True),
    ("math.sign(-12) == -1", True),
    ("math.sign(42.01) == 1.0", True),
    ("type(math.sign(42u)) == uint", True),
    ("math.abs(-1) == 1", True),
    ("math.abs(1) == 1", True),
    ("math.abs(-234.5) == 234.5", True),
    ("math.abs(234.5) == 234.5", True),
    ("math.abs(-12) == 12", True),
    ("math.abs(0u) == 0u", True),
    ("math.abs(42.01) == 42.01", True),
    ("math.abs(-9223372036854775807)", 9223372036854775807),
    ("math.abs(-9223372036854775808)", Err("evaluation", "integer overflow")),
    ("math.sign(dyn(''))", Err("evaluation", "no such overload: math.sign(string)")),
    ("math.abs(dyn(''))", Err("evaluation", "no such overload: math.abs(string)")),
    ("math.sqrt(49.0) == 7.0", True),
    ("math.sqrt(0) == 0.0", True),
    ("math.sqrt(1) == 1.0", True),
    ("math.sqrt(25u) == 5.0", True),
    ("math.sqrt(82) == 9.055385138137417", True),
    ("math.sqrt(985.25) == 31.388692231439016", True),
    ("math.sqrt(38.44) == 6.2", True),
    ("math.isNaN(math.sqrt(-15.34))", True),
    ("math.isNaN(math.sqrt(-15)) == true", True),
    ("math.isInf(math.sqrt(1.0/0.0))", True),
    ("math.sqrt(dyn(''))", Err("evaluation", "no such overload: math.sqrt(string)")),
    ("math.sqrt('4')", Err("compile", "no matching overload")),
]

BITWISE = [
    ("math.bitAnd(1, 2) == 0", True),
    ("math.bitAnd(1, -1) == 1", True),
    ("math.bitAnd(1, 3) == 1", True),
    ("math.bitOr(1, 2) == 3", True),
    ("math.bitXor(1, 3) == 2", True),
    ("math.bitXor(3, 5) == 6", True),
    ("math.bitNot(1) == -2", True),
    ("math.bitNot(0) == -1", True),
    ("math.bitNot(-1) == 0", True),
    ("math.bitShiftLeft(1, 2) == 4", True),
    ("math.bitShiftLeft(1, 200) == 0", True),
    ("math.bitShiftLeft(-1, 200) == 0", True),
    ("math.bitShiftRight(1024, 2) == 256", True),
    ("math.bitShiftRight(1024, 64) == 0", True),
    # logical, as cel-go v0.26.0 ext/math.go bitShiftRightIntInt: types.Int(types.Uint(v) >> bs) (issue 38;
    # cel-spec's math_ext.textproto "int_negative" says -128: see docs/cel-divergences.md)
    ("math.bitShiftRight(-1024, 3)", 2305843009213693824),
    ("math.bitShiftRight(-1024, 64)", 0),
    ("math.bitShiftRight(-1, 1)", 9223372036854775807),
    ("math.bitShiftRight(-9223372036854775808, 63)", 1),
    ("math.bitAnd(1u, 2u) == 0u", True),
    ("math.bitAnd(1u, 3u) == 1u", True),
    ("math.bitOr(1u, 2u) == 3u", True),
    ("math.bitXor(1u, 3u) == 2u", True),
    ("math.bitXor(3u, 5u) == 6u", True),
    ("math.bitNot(1u) == 18446744073709551614u", True),
    ("math.bitNot(0u) == 18446744073709551615u", True),
    ("math.bitShiftLeft(1u, 2) == 4u", True),
    ("math.bitShiftLeft(1u, 200) == 0u", True),
    ("math.bitShiftRight(1024u, 2) == 256u", True),
    ("math.bitShiftRight(1024u, 64) == 0u", True),
    ("math.bitAnd(3, 1) == 1", True),
    ("math.bitAnd(3u, 1u) == 1u", True),
    ("math.bitOr(2, 1) == 3", True),
    ("math.bitOr(2u, 1u) == 3u", True),
    ("math.bitXor(3, 1) == 2", True),
    ("math.bitXor(3u, 1u) == 2u", True),
    ("math.bitNot(2) == -3", True),
    ("math.bitAnd(math.bitNot(0x3u), 0xFFu) == 0xFCu", True),
    ("math.bitShiftLeft(1, 1) == 2", True),
    ("math.bitShiftLeft(1u, 1) == 2u", True),
    ("math.bitShiftRight(4, 1) == 2", True),
    ("math.bitShiftRight(4u, 1) == 2u", True),
    ("math.bitOr(-2, -4)", -2),
    ("math.bitAnd(-3, -5)", -7),
    ("math.bitShiftLeft(-1, 2)", -4),
    ("math.bitShiftLeft(1, 63)", -9223372036854775808),  # wraps like Go's int64
    ("math.bitShiftLeft(3u, 63)", 9223372036854775808),
    ("math.bitShiftRight(-1, 0)", -1),
    ("math.bitShiftLeft(1, -2) == 4", Err("evaluation", "math.bitShiftLeft() negative offset")),
    ("math.bitShiftLeft(1u, -2) == 0u", Err("evaluation", "math.bitShiftLeft() negative offset")),
    ("math.bitShiftRight(-1024, -3) == -128", Err("evaluation", "math.bitShiftRight() negative offset")),
    ("math.bitShiftRight(1024u, -4) == 1u", Err("evaluation", "math.bitShiftRight() negative offset: -4")),
    ("math.bitOr(dyn(1.2), 1)", Err("evaluation", "no such overload: math.bitOr(double, int)")),
    ("math.bitAnd(2u, dyn(''))", Err("evaluation", "no such overload: math.bitAnd(uint, string)")),
    ("math.bitXor(dyn(1), dyn(1u))", Err("evaluation", "no such overload: math.bitXor(int, uint)")),
    ("math.bitXor(dyn([]), dyn([1]))", Err("evaluation", "no such overload: math.bitXor(list, list)")),
    ("math.bitNot(dyn([1]))", Err("evaluation", "no such overload: math.bitNot(list)")),
    ("math.bitShiftLeft(dyn([1]), 1)", Err("evaluation", "no such overload: math.bitShiftLeft(list, int)")),
    ("math.bitShiftRight(dyn({}), 1)", Err("evaluation", "no such overload: math.bitShiftRight(map, int)")),
    ("math.bitAnd(1, 2u)", Err("compile", "no matching overload")),
    ("math.bitShiftLeft(1, 2u)", Err("compile", "no matching overload")),
]

# Not a macro call: a method named greatest on a non-math target is just an undeclared function.
NON_MATCH = [
    ("(100).greatest(42)", Err("compile", "undeclared reference to 'greatest'")),
]

# The Kubernetes API server has no math library.
KUBERNETES = [
    ("math.greatest(1, 2)", Err("compile", "undeclared reference to 'math.greatest'")),
    ("math.least([1, 2])", Err("compile", "undeclared reference to 'math.least'")),
    ("math.ceil(1.2)", Err("compile", "undeclared reference to 'math.ceil'")),
    ("math.abs(-1)", Err("compile", "undeclared reference to 'math.abs'")),
    ("math.bitAnd(1, 2)", Err("compile", "undeclared reference to 'math.bitAnd'")),
    ("math.sqrt(4.0)", Err("compile", "undeclared reference to 'math.sqrt'")),
    ("math.isNaN(1.0)", Err("compile", "available only in the Kyverno")),
]


@cases(GREATEST_LEAST + ROUNDING_AND_FLOATS + SIGN_ABS_SQRT + BITWISE + NON_MATCH)
def test_math(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(KUBERNETES)
def test_math_in_the_kubernetes_profile(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes")


def test_math_over_variables() -> None:
    check_case("math.least(variables.a, variables.b) == variables.a", True, variables={"a": 1, "b": 2})
    check_case("math.greatest(variables.a, variables.b) == variables.b", True, variables={"a": 1, "b": 2})
    numbers = {"a": -21, "numbers": [-21.0, -10.5, 1.0]}
    check_case("math.least(variables.numbers) == dyn(variables.a)", True, variables=numbers)
    check_case("math.greatest(variables.numbers)", 1.0, variables=numbers)
    check_case(
        "math.least(variables.a, variables.b)",
        Err("evaluation", "no such overload: math.@min"),
        variables={"a": [], "b": 1},
    )
    check_case("math.greatest(variables.a)", Err("evaluation", "must not be empty"), variables={"a": []})
