"""Small helpers for JSON-shaped data (dicts, lists, scalars) shared across layers."""

from __future__ import annotations

from typing import Any, TypeVar, overload

_T = TypeVar("_T")


# A copy has the type of the original; the implementation is typed loosely to stay a tight loop.
@overload
def json_copy(value: dict[str, Any]) -> dict[str, Any]: ...
@overload
def json_copy(value: _T) -> _T: ...
def json_copy(value: Any) -> Any:
    """A deep copy of JSON-shaped data, ~4× faster than copy.deepcopy."""
    kind = type(value)
    if kind is dict:
        return {k: json_copy(v) for k, v in value.items()}
    if kind is list:
        return [json_copy(v) for v in value]
    return value


def escape_pointer(token: str) -> str:
    """RFC 6901 escaping of one JSON Pointer segment (``~`` → ``~0``, ``/`` → ``~1``)."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape_pointer(token: str) -> str:
    """The key one RFC 6901 JSON Pointer segment names (``~1`` → ``/``, then ``~0`` → ``~``)."""
    return token.replace("~1", "/").replace("~0", "~") if "~" in token else token


def json_equal(left: Any, right: Any) -> bool:
    """JSON structural equality: numbers by value (``1`` equals ``1.0``), but a boolean is not a number."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(json_equal(a, b) for a, b in zip(left, right, strict=True))
    return type(left) is type(right) and bool(left == right)


class PointerTokens:
    """JSON pointers split into their unescaped tokens, remembered by whoever made this (an admission
    engine): a policy set writes the same pointers request after request, and a walk down one needs
    its tokens each time.

    :meth:`tokens` is json-patch v4's ``findObject`` split (everything after the first ``/``, each
    token decoded, ``~1`` then ``~0``) and RFC 6901's alike. At most ``size`` pointers of at most
    ``max_length`` characters are remembered; past that, it starts over rather than grow.
    """

    __slots__ = ("_known", "_max_length", "_size")

    def __init__(self, size: int = 4096, max_length: int = 512) -> None:
        self._known: dict[str, tuple[str, ...] | None] = {}
        self._size = size
        self._max_length = max_length

    def tokens(self, pointer: str) -> tuple[str, ...] | None:
        """The tokens after the first ``/``; None when there is no ``/`` (the root ``""``)."""
        try:
            return self._known[pointer]
        except KeyError:  # not yet seen (or forgotten meanwhile by another thread's start over)
            pass
        return self._remember(pointer, split_pointer(pointer))

    def _remember(self, pointer: str, tokens: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if len(pointer) <= self._max_length:
            if len(self._known) >= self._size:
                self._known.clear()
            self._known[pointer] = tokens
        return tokens


def split_pointer(pointer: str) -> tuple[str, ...] | None:
    """:meth:`PointerTokens.tokens` without remembering."""
    split = pointer.split("/")
    if len(split) < 2:
        return None
    if "~" not in pointer:
        return tuple(split[1:])
    return tuple(unescape_pointer(token) for token in split[1:])
