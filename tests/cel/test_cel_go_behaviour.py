"""CEL as cel-go evaluates it, where celmut used to differ (issue 13 D).

Each row names the cel-go (or Kubernetes) behaviour it pins and the upstream file it comes from.
Every row runs on both engines (compiled, and the planner it is checked against); the kubernetes profile
is what kube-apiserver offers a MutatingAdmissionPolicy.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cel.helpers import Err, check_case

OBJECT = {"spec": {"replicas": 1}, "status": {}}


def row(expression: str, expected: Any, pins: str) -> Any:
    return pytest.param(expression, expected, id=f"{pins}: {expression[:50]}")


# checker/checker.go checkSelectField: the operand of a field selection is unwrapped from optional, so
# has(x.?y.z) is bool; interpreter/interpretable.go evalTestOnly: an empty optional is false.
HAS_ON_OPTIONALS = [
    row("has(object.?spec.replicas)", True, "has() on a present optional field"),
    row("has(object.?status.replicas)", False, "has() on a missing field of a present optional"),
    row("has(object.?metadata.name)", False, "has() on an empty optional is false, not 'no such key'"),
    row(
        "has(object.?spec.?replicas)", Err("compile", "invalid argument to has() macro"), "x.?y is a call, not a select"
    ),
]

# parser/parser.go: maxRecursionDepth 250, counted per nesting (the recursion listener per rule and
# checkAndIncrementRecursionDepth after unnest), never per precedence level.
NESTING = [
    row("(" * 249 + "1" + ")" * 249, 1, "249 nested parentheses parse"),
    row("(" * 250 + "1" + ")" * 250, Err("compile", "expression recursion limit exceeded: 250"), "250 do not"),
    row("int(" * 200 + "1" + ")" * 200, 1, "200 nested calls"),
    row("size(" + "[" * 200 + "1" + "]" * 200 + ")", 1, "200 nested lists"),
    row("+".join(["1"] * 240), 240, "a chain of 239 additions"),
    row("false ? 0 : " * 200 + "7", 7, "200 nested conditionals"),
]

# parser/unescape.go and CEL.g4 ESC_BYTE_SEQ: BACKSLASH ('x' | 'X') HEXDIGIT HEXDIGIT.
ESCAPES = [
    row("'\\X41\\x42\\X6a'", "ABj", "upper-case \\X in a string"),
    row("b'\\X41' == b'A'", True, "upper-case \\X in bytes"),
    row("'\\X4'", Err("compile", "invalid"), "\\X needs two hex digits"),
]

# checker/types.go internalIsAssignable: TypeKind is assignable to TypeKind whatever its parameter;
# type values compare by name at run time.
TYPE_VALUES = [
    row("type(7) == type(7u)", False, "int and uint are different types"),
    row("type(7) != type(7u)", True, "so != holds"),
    row("type(1) == type(2)", True, "same type"),
    row("type([1]) == type(['x'])", True, "list type values erase their element type"),
    row("type(1u) == uint", True, "a type value against a type identifier"),
]

# checker/checker.go checkCreateList/joinTypes: an empty literal's element is a fresh type variable
# that takes the type it meets; optional elements are unwrapped. Checked by what the result accepts.
LIST_TYPES = [
    row("[[], [1]][0] + [2] == [2]", True, "[[], [1]] is list(list(int))"),
    row("[[1], []][1] + [2] == [2]", True, "[[1], []] is list(list(int))"),
    row("[?optional.none(), 1][0] + 1", 2, "[?optional.none(), 1] is list(int)"),
    row("[optional.none(), optional.of(1)][1].value() + 1", 2, "list(optional_type(int))"),
    row("[[], ['a']][0] + [1]", Err("compile", "no matching overload"), "so list(int) + list(string) is refused"),
]

# common/types/compare.go compareDoubleInt/compareDoubleUint: a double and an int compare through
# double (the int rounded to float64) after a range check; Equal is Compare == 0.
NUMBERS = [
    row("9007199254740993 == 9007199254740992.0", True, "2^53+1 rounds to 2^53"),
    row("9223372036854775807 < 9223372036854775808.0", False, "MaxInt64 becomes 2^63"),
    row("9223372036854775807 == 9223372036854775808.0", True, "so they are equal"),
    row("18446744073709551615u == 18446744073709551616.0", True, "MaxUint64 becomes 2^64"),
    row("-1 < 0u", True, "int and uint compare exactly"),
    row("9223372036854775807 > 9223372036854775806", True, "ints compare exactly"),
    row("1.5 > 1", True, "an ordinary mixed comparison"),
    row("9007199254740993 in [9007199254740992.0]", True, "in uses the same equality"),
]

# cel-go keeps Go's time.Time and time.Duration: nanoseconds (common/types/timestamp.go, duration.go;
# time.ParseDuration truncates digits beyond the nanosecond).
NANOSECONDS = [
    row("duration('1.000000001s') > duration('1s')", True, "a nanosecond counts"),
    row("duration('1.000000001s') - duration('1s') == duration('1ns')", True, "exact subtraction"),
    row("string(duration('1.000000001s'))", "1.000000001s", "string(duration) keeps 9 digits"),
    row("string(duration('1.0000000019s'))", "1.000000001s", "digits beyond ns are truncated"),
    row(
        "string(timestamp('2024-01-01T00:00:00.123456789Z') + duration('1ns'))",
        "2024-01-01T00:00:00.12345679Z",
        "RFC 3339 with nanoseconds, trailing zeros trimmed",
    ),
    row(
        "timestamp('2024-01-01T00:00:00.000000001Z') > timestamp('2024-01-01T00:00:00Z')",
        True,
        "timestamps compare to the nanosecond",
    ),
    row("timestamp('2024-01-01T00:00:00.999999999Z').getMilliseconds()", 999, "accessors still work"),
    row("int(timestamp('1969-12-31T23:59:59.5Z'))", -1, "int(timestamp) is Go's Unix(): floor"),
    row(
        "timestamp('9999-12-31T23:59:59.999999999Z') + duration('1ns')",
        Err("evaluation", "timestamp out of range"),  # `+` is not folded when the program is built
        "the valid range ends at 9999-12-31T23:59:59.999999999Z",
    ),
    row("[duration('2ns'), duration('1ns')].sort()[0] == duration('1ns')", True, "lists order by ns"),
]


# ext/strings.go lastIndexOf after cel-go PR #1173 (v0.25, Kubernetes 1.34+).
LAST_INDEX_OF = [
    row("''.lastIndexOf('@@')", -1, "a needle longer than the text is not found"),
    row("'a'.lastIndexOf('@@')", -1, "also when the text is not empty"),
    row("'abc'.lastIndexOf('')", 3, "the empty needle is found at the end"),
]


# interpreter/attributes.go applyQualifiers: an optional step qualifies with its presence test on
# (QualifyIfPresent → refQualify), so on a value that is no container it is absent, not an error
# (a cluster-scoped object's namespaceObject is null); a plain step after it stays strict.
OPTIONAL_STEPS_ON_NO_CONTAINER = [
    row("dyn(null).?metadata.hasValue()", False, "x.?f on null"),
    row("dyn(1).?a.orValue('none')", "none", "x.?f on an int"),
    row("dyn('s')[?0].hasValue()", False, "x[?k] on a string"),
    row("object.?spec.?replicas.?x.hasValue()", False, "a chain reaching a number"),
    row("{'k': dyn(null)}.?k.x.hasValue()", Err("evaluation", "no such key"), "a plain step after it"),
]


@pytest.mark.parametrize(
    ("expression", "expected"),
    OPTIONAL_STEPS_ON_NO_CONTAINER
    + LAST_INDEX_OF
    + HAS_ON_OPTIONALS
    + NESTING
    + ESCAPES
    + TYPE_VALUES
    + LIST_TYPES
    + NUMBERS
    + NANOSECONDS,
)
def test_kubernetes_profile_evaluates_as_cel_go(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes", object=OBJECT)


# ext/math.go (Kyverno's ext.Math()): maxPair/minPair keep the first of equal values and order mixed
# numbers with Compare, which goes through double for a double against an integer.
MATH = [
    row("math.greatest(1, 1.0)", 1, "a tie keeps the first, with its type"),
    row("math.greatest(1, 2u)", 2, "int and uint"),
    row("math.least(2.5, 1u) == 1u", True, "double and uint"),
    row("math.greatest(9007199254740992.0, 9007199254740993)", 9007199254740992.0, "equal through double"),
    row("math.greatest([1.5, 2.5])", 2.5, "a list of doubles"),
    row("math.greatest(double('NaN'), 1)", Err("evaluation", "NaN values cannot be ordered"), "NaN"),
]


@pytest.mark.parametrize(("expression", "expected"), MATH)
def test_kyverno_math_evaluates_as_cel_go(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kyverno")


# docs/cel-divergences.md "Intended divergences": what Kubernetes and Kyverno configure on purpose.
INTENDED = [
    # base.go: HomogeneousAggregateLiterals + ValidateHomogeneousAggregateLiterals (format() exempt)
    ("kubernetes", "[1, 'a']", Err("compile", "expected type 'int' but found 'string'")),
    ("kyverno", "{'a': 1, 'b': 'x'}", Err("compile", "wrap mixed values in dyn()")),
    ("kubernetes", "[dyn(1), 'a'].size()", 2),
    ("kubernetes", "'%s'.format([[1, 'a']])", '[1, "a"]'),
    # library/ip.go parseIPAddr, cidr.go parseCIDR
    ("kubernetes", "isIP('::ffff:1.2.3.4')", False),
    (
        "kyverno",
        "ip('::ffff:' + '1.2.3.4')",
        Err("evaluation", 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
    ),
    # Kyverno's orValue on a value that is not optional returns it (pkg/cel/compiler/env.go
    # OrValueCompatEnvOptions: the macro calls the strict __orValueCompat__); an error in either
    # argument is the error (tests/cel/test_kyverno_or_value.py)
    ("kyverno", "object.spec.replicas.orValue(2)", 1),
    ("kyverno", "object.missing.orValue(2)", Err("evaluation", "no such key: missing")),
    ("kubernetes", "object.missing.orValue(2)", Err("evaluation", "no such key: missing")),
]


@pytest.mark.parametrize(("profile", "expression", "expected"), INTENDED, ids=[f"{r[0]}: {r[1]}" for r in INTENDED])
def test_intended_divergences(profile: str, expression: str, expected: Any) -> None:
    check_case(expression, expected, profile=profile, object=OBJECT)
