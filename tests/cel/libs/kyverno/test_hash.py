"""Kyverno's hash library: rows from kyverno/sdk ``extensions/cel/libs/hash/impl_test.go``."""

from __future__ import annotations

from typing import Any

from tests.cel.helpers import Err, cases, check_case

IMAGE = "ghcr.io/kyverno/kyverno:latest"

ROWS = [
    (f'hash.sha1("{IMAGE}")', "98f68a84cd3ada3a25bc42bf69ed8e0297e13022"),
    (f'hash.sha256("{IMAGE}")', "e98de8e3a54bcb921de9cc72741522823cb30ef9dda17cfd228416ead4ce3760"),
    (f'hash.md5("{IMAGE}")', "16dc16f633974d1015cad2ffe81e7365"),
    (f'sha1("{IMAGE}")', "98f68a84cd3ada3a25bc42bf69ed8e0297e13022"),
    (f'sha256("{IMAGE}")', "e98de8e3a54bcb921de9cc72741522823cb30ef9dda17cfd228416ead4ce3760"),
    (f'md5("{IMAGE}")', "16dc16f633974d1015cad2ffe81e7365"),
    ('sha256("")', "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ('md5("é")', "66ddcd97cfdeabb2f6fb8a999b4bc76f"),  # the UTF-8 bytes are hashed
    ("sha256(1)", Err("compile", "no matching overload")),
    ('hash.sha256(b"x")', Err("compile", "no matching overload")),
    ("sha1(dyn(1))", Err("evaluation", "no such overload")),
]


@cases(ROWS)
def test_hash(expression: str, expected: Any) -> None:
    check_case(expression, expected)


def test_kubernetes_profile_has_no_hash_library() -> None:
    check_case('sha256("x")', Err("compile", "undeclared reference to 'sha256'"), profile="kubernetes")
    check_case('hash.md5("x")', Err("compile", "undeclared reference"), profile="kubernetes")
