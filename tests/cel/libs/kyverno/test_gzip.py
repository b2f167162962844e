"""Kyverno's gzip library: rows from kyverno/sdk ``extensions/cel/libs/gzip/impl_test.go`` (the
expected bytes are shown base64-encoded, as ``to_plain`` renders bytes)."""

from __future__ import annotations

import base64
import gzip
from typing import Any

from tests.cel.helpers import Err, cases, check_case

KYVERNO_GO_OUTPUT = "H4sIAAAAAAAA/8quLEstyssHBAAA///oD5wzBwAAAA=="  # Go's gzip.compress("kyverno")

ROWS = [
    ("gzip.decompress(variables.kyverno)", "kyverno"),  # Kyverno's decompress_base64 row
    ("gzip.decompress(variables.go_output)", "kyverno"),  # Go's own compressor output reads back
    ('gzip.decompress(gzip.compress("kyverno"))', "kyverno"),
    ('gzip.decompress(gzip.compress(""))', ""),
    ('gzip.decompress(gzip.compress("héllo ✓"))', "héllo ✓"),
    ('gzip.compress("kyverno")', "H4sIAAAAAAAA/8uuLEstyssHAOgPnDMHAAAA"),  # deterministic: mtime 0, Go's header
    ('size(gzip.compress("kyverno")) > 10', True),
    ("gzip.decompress(variables.two_members)", "ab"),
    ('gzip.decompress(b"not gzip")', Err("evaluation", "invalid header")),
    ('gzip.decompress(b"")', Err("evaluation", "unexpected EOF")),
    ("gzip.decompress(variables.truncated)", Err("evaluation", "unexpected EOF")),
    ("gzip.decompress(variables.bomb)", Err("evaluation", "decompressed data exceeds")),
    ('gzip.compress(b"kyverno")', Err("evaluation", "type conversion error from 'bytes' to 'string'")),
    ("gzip.compress(1)", Err("evaluation", "type conversion error from 'int' to 'string'")),
    ('gzip.decompress("text")', Err("compile", "no matching overload")),
]


@cases(ROWS)
def test_gzip(expression: str, expected: Any) -> None:
    variables = {
        "kyverno": base64.b64decode("H4sIADP4umkAA8uuLEstyssHAOgPnDMHAAAA"),
        "go_output": base64.b64decode(KYVERNO_GO_OUTPUT),
        "two_members": gzip.compress(b"a") + gzip.compress(b"b"),
        "truncated": gzip.compress(b"kyverno" * 100)[:20],
        "bomb": gzip.compress(b"\0" * (9 * 1024 * 1024)),
    }
    check_case(expression, expected, variables=variables)


def test_compress_header_is_gos() -> None:
    data = gzip.compress(b"")  # Python's own header differs in XFL; celmut writes Go's
    assert data[:4] == b"\x1f\x8b\x08\x00"
    check_case(
        'gzip.compress("x")',
        base64.b64encode(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + gzip.compress(b"x")[10:]).decode(),
    )


def test_kubernetes_profile_has_no_gzip_library() -> None:
    check_case('gzip.compress("x")', Err("compile", "undeclared reference to 'gzip.compress'"), profile="kubernetes")
