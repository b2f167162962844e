"""Which library overloads cel-cpp runs natively, and which run on the Python implementation.

A call runs natively when every overload the checker's types leave belongs to
:data:`NATIVE_LIBRARIES` and none is listed in :data:`NOT_NATIVE`; otherwise cel-cpp calls the
Python implementation through the bridge (:mod:`celmut.cel.backends.cpp_bridge`). Each entry of
:data:`NOT_NATIVE` was found by the differential tests (``tests/cel``) or by measurement.
"""

from __future__ import annotations

from functools import cache

# Libraries cel-cpp implements natively with cel-go's semantics (cel-expr-python 0.1.3), by celmut
# library name. The cel-go extensions cel-cpp also ships (lists, math, regex, encoders) differ in
# error messages and edge cases (math.greatest with NaN, regex replacement syntax and empty matches,
# base64 padding and whitespace, sort errors) and do not charge their cost, so they run in Python.
NATIVE_LIBRARIES = frozenset(
    {"cel.lib.std", "cel.lib.std.time", "cel.lib.optional", "cel.lib.ext.strings", "cel.lib.ext.sets"}
)
_UNCHARGED = "cel-cpp does not charge the comparisons it makes (the Python implementation charges what it walks)"
_STRINGS_ERRORS = "cel-cpp's errors and edge cases differ (cel-go: 'index out of range: N', ''.split('') == [])"
# Overloads of those libraries that still run on the Python implementation, and why (each found by
# the differential tests: cel-cpp lacks them or behaves differently).
NOT_NATIVE: dict[str, str] = {
    "string_matches_string": "cel-expr-python compiles the pattern at every call; celmut's cached RE2 is ~2x faster",
    "matches_string_string": "cel-expr-python compiles the pattern at every call; celmut's cached RE2 is ~2x faster",
    "bool_string": "cel-go also accepts 1, t, T, TRUE, True, … (cel-cpp only true and false)",
    "int_string": "error messages name the input in cel-go ('cannot convert string 'x' to int')",
    "uint_string": "error messages name the input in cel-go",
    "double_string": "error messages name the input in cel-go",
    "timestamp_string": "error messages name the input and RFC 3339 in cel-go",
    "duration_string": "error messages name the input and Go's syntax in cel-go",
    "duration_getMilliseconds": "cel-cpp returns the millisecond component, cel-go the whole duration in ms",
    "string_duration": "cel-cpp prints 1.500s, cel-go 1.5s",
    "string_charAt_int": _STRINGS_ERRORS,
    "string_indexOf_string_int": _STRINGS_ERRORS,
    "string_lastIndexOf_string_int": _STRINGS_ERRORS,
    "string_lastIndexOf_string": _STRINGS_ERRORS,
    "string_substring_int_int": _STRINGS_ERRORS,
    "string_substring_int": _STRINGS_ERRORS,
    "string_split_string_int": _STRINGS_ERRORS,
    "string_split_string": _STRINGS_ERRORS,
    "list_string_join_string": "join of mixed dyn lists: cel-go's error message",
    "list_string_join": "join of mixed dyn lists: cel-go's error message",
    "string_replace_string_string_int": "its output can grow: the Python implementation charges it to the budget",
    "string_replace_string_string": "its output can grow: the Python implementation charges it to the budget",
    "strings_quote_string": "cel-go's quoting of invalid UTF-8 and control characters",
    "string_format_list_dyn": "cel-cpp implements the strings v4 formatter; Kubernetes and Kyverno use cel-go's v1-v3",
    "sets_contains_list_T_list_T": _UNCHARGED,
    "sets_equivalent_list_T_list_T": _UNCHARGED,
    "sets_intersects_list_T_list_T": _UNCHARGED,
}


@cache
def native_overloads(profile_name: str) -> frozenset[str]:
    from celmut.cel.profiles import profile

    return frozenset(
        o.id
        for library in profile(profile_name).libraries
        if library.name in NATIVE_LIBRARIES
        for o in library.overloads
        if o.id not in NOT_NATIVE
    )
