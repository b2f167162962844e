"""Kyverno's json library: rows from kyverno/sdk ``extensions/cel/libs/json/impl_test.go``; the
expected texts are what Go's ``encoding/json`` prints."""

from __future__ import annotations

from typing import Any

from tests.cel.helpers import Err, cases, check_case

MARSHAL = [
    ('json.marshal({"key": "value"})', '{"key":"value"}'),
    ("json.marshal([1, 2, 3])", "[1,2,3]"),
    ('json.marshal("hello")', '"hello"'),
    ("json.marshal(42)", "42"),
    ("json.marshal(3.14)", "3.14"),
    ("json.marshal(true)", "true"),
    ("json.marshal(null)", "null"),
    ("json.marshal({})", "{}"),
    ("json.marshal([])", "[]"),
    ('json.marshal({"outer": {"inner": "value"}})', '{"outer":{"inner":"value"}}'),
    ('json.marshal(b"foo")', '"Zm9v"'),  # bytes are base64
    (
        'json.marshal(dyn({"str": dyn("foo"), "nested": dyn({"arr": dyn([]), "bol": dyn(true), "nil": dyn(null),'
        ' "num": dyn(1), "str": dyn("bar")})}))',
        '{"nested":{"arr":[],"bol":true,"nil":null,"num":1,"str":"bar"},"str":"foo"}',
    ),
    ('json.marshal([dyn({"str": dyn("foo")})])', '[{"str":"foo"}]'),
    ('json.marshal(json.unmarshal("{\\"a\\":\\"b\\"}"))', '{"a":"b"}'),
    # Go's details: keys sorted, HTML escaped, shortest floats, exponents from 1e21 and below 1e-6
    ('json.marshal({"b": 1, "a": 2, "B": 3})', '{"B":3,"a":2,"b":1}'),
    ("json.marshal(\"<a href='x'>&</a>\")", "\"\\u003ca href='x'\\u003e\\u0026\\u003c/a\\u003e\""),
    (
        'json.marshal("tab\\tnew\\nline \\"quoted\\" \\\\ \\u0001 \\u2028")',
        '"tab\\tnew\\nline \\"quoted\\" \\\\ \\u0001 \\u2028"',
    ),
    ('json.marshal("é✓")', '"é✓"'),
    ("json.marshal(1.0)", "1"),
    ("json.marshal(-0.0)", "-0"),
    ("json.marshal(1e20)", "100000000000000000000"),
    ("json.marshal(1e21)", "1e+21"),
    ("json.marshal(0.000001)", "0.000001"),
    ("json.marshal(0.0000001)", "1e-7"),
    ("json.marshal(123456789.125)", "123456789.125"),
    ("json.marshal(18446744073709551615u)", "18446744073709551615"),
    ("json.marshal(-9223372036854775808)", "-9223372036854775808"),
    ('json.marshal(timestamp("2024-01-02T03:04:05.5Z"))', '"2024-01-02T03:04:05.5Z"'),
    ('json.marshal(duration("1.5s"))', "1500000000"),  # Go's time.Duration: nanoseconds
    ("json.marshal(1.0 / 0.0)", Err("evaluation", "json: unsupported value: +Inf")),
    ("json.marshal({1: 'a'})", Err("evaluation", "unsupported map key type int")),
    ("json.marshal(int)", Err("evaluation", "unsupported type")),
]

UNMARSHAL = [
    ('json.unmarshal("{\\"foo\\":\\"bar\\"}")', {"foo": "bar"}),
    ('json.unmarshal("{\\"a\\": [1, true, null, 2.5]}")', {"a": [1.0, True, None, 2.5]}),  # numbers are doubles
    ('type(json.unmarshal("1"))', "double"),
    ('json.unmarshal(" [\\"x\\"] ")', ["x"]),
    ('json.unmarshal("\\"text\\"")', "text"),
    ('json.unmarshal("null")', None),
    ('json.unmarshal("")', Err("evaluation", "unexpected end of JSON input")),
    ('json.unmarshal("bad json")', Err("evaluation", "invalid JSON")),
    ('json.unmarshal("{} {}")', Err("evaluation", "after top-level value")),
    ('json.unmarshal("NaN")', Err("evaluation", "invalid JSON")),
    ("json.unmarshal(12345)", Err("evaluation", "type conversion error from 'int' to 'string'")),
    ('json.unmarshal(b"{}")', Err("evaluation", "type conversion error from 'bytes' to 'string'")),
    ("json.unmarshal(null)", Err("evaluation", "type conversion error")),
    ("json.unmarshal(variables.doc).spec.replicas", 3.0),
]


@cases(MARSHAL)
def test_marshal(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(UNMARSHAL)
def test_unmarshal(expression: str, expected: Any) -> None:
    check_case(expression, expected, variables={"doc": '{"spec": {"replicas": 3}}'})


def test_kubernetes_profile_has_no_json_library() -> None:
    check_case('json.marshal("x")', Err("compile", "undeclared reference to 'json.marshal'"), profile="kubernetes")
    check_case('json.unmarshal("1")', Err("compile", "undeclared reference"), profile="kubernetes")
