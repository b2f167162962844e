"""Kyverno's gzip library (kyverno/sdk ``extensions/cel/libs/gzip``).

gzip.compress(<dyn> text) -> <bytes>

    Compresses a string (anything else is an error, as in Kyverno) into a gzip stream with a zero
    modification time and Go's header (no name, OS "unknown"), so the output is deterministic. The
    deflate data comes from zlib, not Go's compressor: it decompresses to the same text but its bytes
    may differ from Kyverno's.

        gzip.decompress(gzip.compress("kyverno")) == "kyverno"

gzip.decompress(<bytes>) -> <string>

    Decompresses a gzip stream (concatenated members too) into a string; the output is capped at
    :data:`MAX_DECOMPRESSED_BYTES` to refuse decompression bombs.

        gzip.decompress(base64.decode("H4sIADP4umkAA8uuLEstyssHAOgPnDMHAAAA")) == "kyverno"
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("kyverno.gzip")
fn = LIBRARY.function

MAX_DECOMPRESSED_BYTES = 8 * 1024 * 1024
_GO_HEADER = bytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF])  # deflate, no flags, mtime 0, xfl 0, OS unknown


def _cost(value: Any) -> int:
    return len(value) // 64 if isinstance(value, str | bytes) else 0


@fn("gzip.compress", ("dyn",), "bytes", cost=_cost)
def compress(text: Any) -> bytes:
    if not isinstance(text, str):
        raise CelEvaluationError(f"type conversion error from '{v.type_name(text)}' to 'string'")
    data = text.encode("utf-8", errors="surrogatepass")
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflate.compress(data) + deflate.flush()
    return _GO_HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


@fn("gzip.decompress", ("bytes",), "string", cost=_cost)
def decompress(data: Any) -> str:
    if not isinstance(data, bytes):
        raise no_such_overload("gzip.decompress", data)
    out = bytearray()
    rest = data
    while True:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += inflater.decompress(rest, MAX_DECOMPRESSED_BYTES + 1 - len(out))
        except zlib.error as ex:
            raise CelEvaluationError(f"gzip: invalid header or data ({ex})") from None
        if len(out) > MAX_DECOMPRESSED_BYTES:
            raise CelEvaluationError(f"gzip: decompressed data exceeds {MAX_DECOMPRESSED_BYTES} bytes")
        if not inflater.eof:
            raise CelEvaluationError("unexpected EOF")
        rest = inflater.unused_data
        if not rest:
            break
    return out.decode("utf-8", errors="replace")
