"""Cases of the official CEL conformance suite (google/cel-spec ``tests/simple/testdata``) that celmut
failed on one or both engines, pinned by file, section and case name. Each runs on both engines (see
tests/cel/helpers.py) in the kyverno profile, which has every extension library the case needs.

Kubernetes' own choices stay and are not here: homogeneous aggregate literals (a mixed list literal
such as ``[5.4, 10, 3u]`` is a compile error), the strings.format version Kubernetes pins, and the IP
library's refusal of IPv4-mapped addresses.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cel.helpers import Err, check_case

# math_ext.textproto (cel-go ext/math.go): three or more mixed int/uint/double arguments become the
# list(dyn) of math.@max/@min (mathGreatest/mathLeast).
MATH_EXT = [
    ("greatest_int_result/binary_with_decimal", "math.greatest(1, 1.0) == 1", True),
    ("greatest_int_result/binary_with_uint", "math.greatest(1, 1u) == 1", True),
    ("greatest_int_result/ternary_with_decimal", "math.greatest(1, 1.0, 1.0) == 1", True),
    ("greatest_int_result/ternary_with_uint", "math.greatest(1, 1u, 1u) == 1", True),
    (
        "greatest_int_result/quaternary_mixed",
        "math.greatest(5.4, 10, 3u, -5.0, 9223372036854775807) == 9223372036854775807",
        True,
    ),
    (
        "greatest_int_result/quaternary_mixed_dyn_array",
        "math.greatest([dyn(5.4), dyn(10), dyn(3u), dyn(-5.0), dyn(3.5)]) == 10",
        True,
    ),
    ("greatest_double_result/binary_with_int", "math.greatest(1.0, 1) == 1.0", True),
    ("greatest_double_result/binary_with_uint", "math.greatest(1.0, 1u) == 1.0", True),
    ("greatest_double_result/ternary_with_int", "math.greatest(1.0, 1, 1) == 1.0", True),
    ("greatest_double_result/ternary_with_uint", "math.greatest(1.0, 1u, 1u) == 1.0", True),
    ("greatest_double_result/quaternary_mixed", "math.greatest(5.4, 10, 3u, -5.0, 1.797693e308) == 1.797693e308", True),
    (
        "greatest_double_result/quaternary_mixed_dyn_array",
        "math.greatest([dyn(5.4), dyn(10.5), dyn(3u), dyn(-5.0), dyn(3.5)]) == 10.5",
        True,
    ),
    ("greatest_double_result/ternary_double_max", "math.greatest(1.797693e308, 1, 5) == 1.797693e308", True),
    ("greatest_double_result/ternary_double_min", "math.greatest(-1.797693e308, -1, -5) == -1", True),
    ("greatest_uint_result/binary_with_decimal", "math.greatest(1u, 1.0) == 1", True),
    ("greatest_uint_result/binary_with_int", "math.greatest(1u, 1) == 1u", True),
    ("greatest_uint_result/ternary_with_decimal", "math.greatest(1u, 1.0, 1.0) == 1u", True),
    ("greatest_uint_result/ternary_with_int", "math.greatest(1u, 1, 1) == 1u", True),
    (
        "greatest_uint_result/quaternary_mixed",
        "math.greatest(5.4, 10, 3u, -5.0, 18446744073709551615u) == 18446744073709551615u",
        True,
    ),
    (
        "greatest_uint_result/quaternary_mixed_dyn_array",
        "math.greatest([dyn(5.4), dyn(10u), dyn(3u), dyn(-5.0), dyn(3.5)]) == 10u",
        True,
    ),
    ("greatest_uint_result/binary_first_arg_greater", "math.greatest(5u, -7) == 5u", True),
    ("greatest_uint_result/binary_second_arg_greater", "math.greatest(-3, 3u) == 3u", True),
    ("least_int_result/ternary_with_decimal", "math.least(1, 1.0, 1.0) == 1", True),
    ("least_int_result/ternary_with_uint", "math.least(1, 1u, 1u) == 1", True),
    ("least_int_result/quaternary_mixed", "math.least(5.4, 10, 3u, -5.0, 9223372036854775807) == -5.0", True),
    (
        "least_int_result/quaternary_mixed_dyn_array",
        "math.least([dyn(5.4), dyn(10), dyn(3u), dyn(-5.0), dyn(3.5)]) == -5.0",
        True,
    ),
    ("least_double_result/ternary_with_int", "math.least(1.0, 1, 1) == 1.0", True),
    ("least_double_result/ternary_with_uint", "math.least(1.0, 1u, 1u) == 1", True),
    ("least_double_result/ternary_double_max", "math.least(1.797693e308, 1, 5) == 1", True),
    ("least_double_result/ternary_double_min", "math.least(-1.797693e308, -1, -5) == -1.797693e308", True),
    ("least_double_result/quaternary_mixed", "math.least(5.4, 10, 3u, -5.0, 1.797693e308) == -5.0", True),
    (
        "least_double_result/quaternary_mixed_dyn_array",
        "math.least([dyn(5.4), dyn(10.5), dyn(3u), dyn(-5.0), dyn(3.5)]) == -5.0",
        True,
    ),
    ("least_uint_result/ternary_with_decimal", "math.least(1u, 1.0, 1.0) == 1u", True),
    ("least_uint_result/ternary_with_int", "math.least(1u, 1, 1) == 1u", True),
    ("least_uint_result/quaternary_mixed", "math.least(5.4, 10, 3u, 1u, 18446744073709551615u) == 1u", True),
    (
        "least_uint_result/quaternary_mixed_dyn_array",
        "math.least([dyn(5.4), dyn(10u), dyn(3u), dyn(1u), dyn(3.5)]) == 1u",
        True,
    ),
    ("ceil/dyn_error", "math.ceil(dyn(1))", Err("evaluation", "no such overload")),
    ("round/dyn_error", "math.round(dyn(1))", Err("evaluation", "no such overload")),
    ("round/nan", "math.isNaN(math.round(0.0/0.0))", True),
    ("trunc/nan", "math.isNaN(math.trunc(0.0/0.0))", True),
    ("abs/int_overflow", "math.abs(-9223372036854775808)", Err("evaluation", "overflow")),
    ("sign/dyn_error", "math.sign(dyn(true))", Err("evaluation", "no such overload")),
    ("sign/zero_double", "math.sign(0.0)", 0.0),
    ("sign/zero_uint", "math.sign(0u)", 0),
    ("isNaN/dyn_error", "math.isNaN(dyn(true))", Err("evaluation", "no such overload")),
    ("bit_and/int_dyn_error", "math.bitAnd(2u, dyn(''))", Err("evaluation", "no such overload")),
    ("bit_or/dyn_int_error", "math.bitOr(dyn(1.2), 1)", Err("evaluation", "no such overload")),
    ("bit_xor/dyn_dyn_error", "math.bitXor(dyn([]), dyn([1]))", Err("evaluation", "no such overload")),
    ("bit_not/dyn_error", "math.bitNot(dyn(''))", Err("evaluation", "no such overload")),
    ("bit_shift_left/int_large_shift", "math.bitShiftLeft(1, 200) == 0", True),
    ("bit_shift_left/int_negative_large_shift", "math.bitShiftLeft(-1, 200) == 0", True),
    ("bit_shift_left/bad_shift", "math.bitShiftLeft(1u, -1)", Err("evaluation", "negative offset")),
    ("bit_shift_left/dyn_int_error", "math.bitShiftLeft(dyn(4.3), 1)", Err("evaluation", "no such overload")),
    # int_negative (== -128) and int_negative_large_shift (== -1) are not cel-go's: v0.26.0, which
    # Kubernetes v1.36 vendors, shifts logically (ext/math.go bitShiftRightIntInt); celmut follows cel-go
    # (tests/cel/libs/ext/test_math.py, docs/cel-divergences.md).
    ("bit_shift_right/uint_large_shift", "math.bitShiftRight(1024u, 200) == 0u", True),
    ("bit_shift_right/bad_shift", "math.bitShiftRight(1u, -1)", Err("evaluation", "negative offset")),
    ("bit_shift_right/dyn_int_error", "math.bitShiftRight(dyn(b'123'), 1)", Err("evaluation", "no such overload")),
    ("bit_not/uint_positive", "math.bitNot(1u)", 18446744073709551614),
    ("bit_xor/int_int_positive_negative", "math.bitXor(4, -2)", -6),
    ("greatest_double_result/binary_first_arg_double_max", "math.greatest(1.797693e308, 1)", 1.797693e308),
    ("least_int_result/ternary_int_min", "math.least(-9223372036854775808, -1, -5) == -9223372036854775808", True),
]

# optionals.textproto: a field selected on a value that is no map or message is a missing key (cel-go
# interpreter/attributes.go refQualify), also through an optional.
OPTIONALS = [
    (
        "optionals/map_null_entry_no_such_key",
        "{'null_key': dyn(null)}.?null_key.invalid.hasValue()",
        Err("evaluation", "no such key"),
    ),
    (
        "optionals/map_present_key_invalid_field",
        "{true: dyn(0)}[?true].absent.hasValue()",
        Err("evaluation", "no such key"),
    ),
    ("optionals/map_absent_key_absent_field_none", "{true: dyn(0)}[?false].absent.hasValue()", False),
    # Kyverno's orValue is strict in its receiver, as cel-go's (pkg/cel/compiler/env.go __orValueCompat__)
    (
        "optionals/optional_chaining_10",
        "optional.ofNonZeroValue({'c': {'dashed-index': 'goodbye'}}.a.z)"
        ".orValue({'c': {'dashed-index': 'goodbye'}}.c['dashed-index'])",
        Err("evaluation", "no such key"),
    ),
]

# Error texts: conversions.textproto and timestamps.textproto timestamp_range.
ERROR_TEXTS = [
    # a constant argument is folded at program build in both systems (tests/cel/test_program_checks.py)
    ("conversions/bytes_invalid", r"string(b'\000\xff' + b'')", Err("evaluation", "invalid UTF-8")),
    ("conversions/bytes_invalid_constant", r"string(b'\000\xff')", Err("compile", "invalid UTF-8")),
    (
        "timestamps/add_duration_under",
        "timestamp('0001-01-01T00:00:00Z') + duration('-1s')",
        Err("evaluation", "range"),
    ),
    ("timestamps/add_duration_over", "timestamp('9999-12-31T23:59:59Z') + duration('1s')", Err("evaluation", "range")),
    (
        "timestamps/sub_time_duration_over",
        "timestamp('9999-12-31T23:59:59Z') - timestamp('0001-01-01T00:00:00Z')",
        Err("evaluation", "range"),
    ),
    (
        "timestamps/sub_time_duration_under",
        "timestamp('0001-01-01T00:00:00Z') - timestamp('9999-12-31T23:59:59Z')",
        Err("evaluation", "range"),
    ),
]

# fields.textproto: a double key finds the int or uint of the same value in a map (heterogeneous
# equality); the cases' mixed key literals are wrapped in dyn() (homogeneous literals, Kubernetes).
FIELDS = [
    ("map_fields/map_key_mixed_numbers_double_key", "{dyn(1u): 1.0, dyn(2): 2.0, dyn(3u): 3.0}[3.0]", 3.0),
    (
        "map_fields/map_key_mixed_numbers_lossy_double_key",
        "{dyn(1u): 1.0, dyn(2): 2.0, dyn(3u): 3.0}[3.1]",
        Err("evaluation", "no such key"),
    ),
    ("map_fields/map_key_mixed_numbers_uint_key", "{dyn(1u): 1.0, dyn(2): 2.0, dyn(3u): 3.0}[2u]", 2.0),
    ("map_fields/map_key_mixed_numbers_int_key", "{dyn(1u): 1.0, dyn(2): 2.0, dyn(3u): 3.0}[1]", 1.0),
    ("map_fields/double_key_optional_index", "{dyn(1u): 'a'}[?1.0].orValue('none')", "a"),
    (
        "in/mixed_numbers_and_keys_present",
        "3.0 in {dyn(1): 1, dyn(2): 2, dyn(3u): 3} && 2u in {dyn(1u): 1, dyn(2): 2} && 1 in {dyn(1u): 1, dyn(2): 2}",
        True,
    ),
    ("in/mixed_numbers_and_keys_absent", "3.1 in {dyn(1): 1, dyn(2): 2, dyn(3u): 3}", False),
]

# timestamps.textproto timestamp_range: a year past 9999 is out of range (cel-spec wants "range"; a
# five-digit year is not RFC 3339 either, which cel-go's time.Parse reports as a conversion error).
# A literal argument is refused at compile time by Kubernetes' ValidateTimestampLiterals, in both profiles.
TIMESTAMP_RANGE = [
    ("timestamp_range/from_string_over", "timestamp('10000-01-01T00:00:00Z' + '')", Err("evaluation", "out of range")),
    ("timestamp_range/from_string_under", "timestamp('0000-01-01T00:00:00Z' + '')", Err("evaluation", "out of range")),
    (
        "timestamp_range/from_string_over_literal",
        "timestamp('10000-01-01T00:00:00Z')",
        Err("compile", "invalid timestamp"),
    ),
    # the range's first instant is valid (cel-go minUnixTime)
    ("timestamp_range/min_is_valid", "string(timestamp('0001-01-01T00:00:00Z'))", "0001-01-01T00:00:00Z"),
    ("timestamp_range/max_micros_is_valid", "timestamp('9999-12-31T23:59:59.999999Z') > timestamp(0)", True),
]

CASES = (
    [("math_ext", *row) for row in MATH_EXT]
    + [("optionals", *row) for row in OPTIONALS]
    + [("errors", *row) for row in ERROR_TEXTS]
    + [("fields", *row) for row in FIELDS]
    + [("timestamps", *row) for row in TIMESTAMP_RANGE]
)


@pytest.mark.parametrize(
    ("case", "expression", "expected"), [row[1:] for row in CASES], ids=[f"{r[0]}/{r[1]}" for r in CASES]
)
def test_cel_spec_case(case: str, expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kyverno")
