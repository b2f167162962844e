"""cel-go's Encoders extension (``ext.Encoders()``): base64 with the standard alphabet.

``base64.encode(<bytes>) -> <string>``  ``base64.encode(b'hello') == 'aGVsbG8='``
``base64.decode(<string>) -> <bytes>``  ``base64.decode('aGVsbG8=') == b'hello'``; unpadded input is
accepted too (``base64.decode('aGVsbG8') == b'hello'``), as Go's RawStdEncoding fallback does, and
line breaks are ignored. Bad input is "illegal base64 data at input byte N".
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("cel.lib.ext.encoders")
fn = LIBRARY.function

_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_PADDED = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_UNPADDED = re.compile(rb"[A-Za-z0-9+/]*")


def _size_cost(value: Any) -> int:
    return len(value) // 10 if isinstance(value, str | bytes) else 0


@fn("base64.encode", ("bytes",), "string", cost=_size_cost)
def encode(data: bytes) -> str:
    if not isinstance(data, bytes):
        raise no_such_overload("base64.encode", data)
    return base64.b64encode(data).decode("ascii")


@fn("base64.decode", ("string",), "bytes", cost=_size_cost)
def decode(text: str) -> bytes:
    """Go's StdEncoding.DecodeString, then RawStdEncoding when the padded form is corrupt."""
    if not isinstance(text, str):
        raise no_such_overload("base64.decode", text)
    raw = text.encode("utf-8")
    data = raw.replace(b"\r", b"").replace(b"\n", b"")  # Go skips line breaks
    if _PADDED.fullmatch(data):
        return binascii.a2b_base64(data)
    if _UNPADDED.fullmatch(data) and len(data) % 4 != 1:
        return binascii.a2b_base64(data + b"=" * (-len(data) % 4))
    raise CelEvaluationError(f"illegal base64 data at input byte {_bad_offset(raw)}")


def _bad_offset(raw: bytes) -> int:
    """The input offset RawStdEncoding reports: the first byte outside the alphabet, or the dangling
    final character of a 4n+1-long input."""
    last = 0
    for offset, byte in enumerate(raw):
        if byte in (0x0A, 0x0D):
            continue
        if byte not in _ALPHABET:
            return offset
        last = offset
    return last
