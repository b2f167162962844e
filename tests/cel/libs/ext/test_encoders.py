"""cel-go ext Encoders: rows ported from cel-go's ext/encoders_test.go and the library's doc examples,
plus rows for Go's base64 decoder (padding fallback, line breaks, error offsets)."""

from __future__ import annotations

from typing import Any

from tests.cel.helpers import Err, cases, check_case

ENCODERS = [
    ("base64.decode('aGVsbG8=') == b'hello'", True),
    ("base64.decode('aGVsbG8') == b'hello'", True),  # unpadded input: Go's RawStdEncoding fallback
    ("base64.decode(b'aGVsbG8=') == b'hello'", Err("compile", "no matching overload")),
    ("base64.encode(b'hello') == 'aGVsbG8='", True),
    ("base64.encode('hello') == b'aGVsbG8='", Err("compile", "no matching overload")),
    ("base64.decode(dyn(b'aGVsbG8=')) == b'hello'", Err("evaluation", "no such overload")),
    ("base64.encode(dyn('hello'))", Err("evaluation", "no such overload")),
    ("base64.encode(b'hello')", "aGVsbG8="),
    ("base64.encode(b'')", ""),
    ("base64.encode(b'\\xff\\xfe')", "//4="),  # the standard alphabet, not the URL-safe one
    ("base64.decode('')", ""),
    ("base64.decode('aGk=') == b'hi'", True),
    ("base64.decode('aGk') == b'hi'", True),
    ("base64.decode('aA==') == b'h'", True),
    ("base64.decode('aA') == b'h'", True),
    ("base64.decode('//4=') == b'\\xff\\xfe'", True),
    ("base64.decode('aGVs\\nbG8=') == b'hello'", True),  # Go skips line breaks
    ("base64.decode('aGVs\\r\\nbG8') == b'hello'", True),
    ("string(base64.decode(base64.encode(b'round trip')))", "round trip"),
    ("base64.decode('aGVsbG8=!')", Err("evaluation", "illegal base64 data at input byte 7")),
    ("base64.decode('a')", Err("evaluation", "illegal base64 data at input byte 0")),
    ("base64.decode('aGVsb')", Err("evaluation", "illegal base64 data at input byte 4")),
    ("base64.decode('aG k=')", Err("evaluation", "illegal base64 data at input byte 2")),
    ("base64.decode('-_8=')", Err("evaluation", "illegal base64 data at input byte 0")),  # URL-safe alphabet
    ("base64.decode('aGk=aGk=')", Err("evaluation", "illegal base64 data")),  # data after the padding
]

# The Kubernetes API server has no encoders library.
KUBERNETES = [
    ("base64.encode(b'a')", Err("compile", "undeclared reference to 'base64.encode'")),
    ("base64.decode('YQ==')", Err("compile", "undeclared reference to 'base64.decode'")),
]


@cases(ENCODERS)
def test_encoders(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(KUBERNETES)
def test_encoders_in_the_kubernetes_profile(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes")
