"""Kyverno's hash library (kyverno/sdk ``extensions/cel/libs/hash``): hex digests of strings.

sha1(<string>) -> <string>      (alias ``hash.sha1``)
sha256(<string>) -> <string>    (alias ``hash.sha256``)
md5(<string>) -> <string>       (alias ``hash.md5``)

    The lower-case hexadecimal digest of the string's UTF-8 bytes.

        sha256("ghcr.io/kyverno/kyverno:latest").size() == 64
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Protocol

from celmut.cel.declarations import Library
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("kyverno.hash")
fn = LIBRARY.function


class _Hash(Protocol):
    def hexdigest(self) -> str: ...


def _cost(text: Any) -> int:
    return len(text) // 64 if isinstance(text, str) else 0


def _declare(algorithm: str) -> None:
    digest: Callable[[bytes], _Hash] = getattr(hashlib, algorithm)

    @fn(algorithm, ("string",), "string", cost=_cost)
    @fn(f"hash.{algorithm}", ("string",), "string", cost=_cost)
    def hex_digest(text: Any) -> str:
        if not isinstance(text, str):
            raise no_such_overload(algorithm, text)
        return digest(text.encode("utf-8", errors="surrogatepass")).hexdigest()


for _algorithm in ("sha1", "sha256", "md5"):
    _declare(_algorithm)
