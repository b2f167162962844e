"""Kubernetes' regex library (``kubernetes.regex``, k8s.io/apiserver/pkg/cel/library/regex.go).

Patterns are RE2 (as Go's ``regexp``). ``find`` is Go's ``FindString`` (the leftmost match, which
may be empty) and ``findAll`` is ``FindAllString``: successive non-overlapping matches, where an
empty match right after a previous match is skipped. Kubernetes' doc comments show
``"abc 123".find('[0-9]*') == '123'``, but the leftmost match of ``[0-9]*`` there is the empty
string at offset 0, which is what Kubernetes actually returns (and so does this library).

<string>.find(<string>) -> string
    "abc 123".find('[0-9]+') // '123';  "abc 123".find('xyz') // ''
<string>.findAll(<string>) -> list(string)
    "123 abc 456".findAll('[0-9]+') // ['123', '456']
<string>.findAll(<string>, <int>) -> list(string)
    "123 abc 456".findAll('[0-9]+', 1) // ['123'];  a negative limit means no limit
"""

from __future__ import annotations

from typing import Any

import re2

from celmut.cel import regex
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.libs.k8s.support import regex_cost
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("kubernetes.regex")
fn, method = LIBRARY.function, LIBRARY.method

_UNANCHORED = re2._Anchor.UNANCHORED


def _compile(pattern: str) -> Any:
    try:
        return regex.compile_pattern(pattern)._regexp
    except CelEvaluationError as ex:
        raise CelEvaluationError(f"Illegal regex: {ex.message}") from None


def _cost(text: Any, pattern: Any, *_: Any) -> int:
    return regex_cost(text, len(pattern)) if isinstance(pattern, str) else 0


def _utf8_width(lead: int) -> int:
    if lead < 0x80:
        return 1
    if lead >= 0xF0:
        return 4
    if lead >= 0xE0:
        return 3
    return 2


def find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    """Go's ``Regexp.FindAllString(text, limit)``."""
    compiled = _compile(pattern)
    data = text.encode("utf-8")
    end = len(data)
    if limit < 0:
        limit = end + 1
    out: list[str] = []
    pos, prev_end = 0, -1
    while len(out) < limit and pos <= end:
        span = compiled.Match(_UNANCHORED, data, pos, end)[0]
        if span[0] == -1:
            break
        start, stop = span
        accept = True
        if stop == pos:  # an empty match: step over one character
            if start == prev_end:
                accept = False
            pos = pos + _utf8_width(data[pos]) if pos < end else end + 1
        else:
            pos = stop
        prev_end = stop
        if accept:
            out.append(data[start:stop].decode("utf-8"))
    return out


@method("find", "string", ("string",), "string", cost=_cost)
def find(text: str, pattern: str) -> str:
    if not isinstance(text, str) or not isinstance(pattern, str):
        raise no_such_overload("find", text, pattern)
    data = text.encode("utf-8")
    start, stop = _compile(pattern).Match(_UNANCHORED, data, 0, len(data))[0]
    return "" if start == -1 else data[start:stop].decode("utf-8")


@method("findAll", "string", ("string",), "list(string)", cost=_cost)
@method("findAll", "string", ("string", "int"), "list(string)", cost=_cost)
def find_all_method(text: str, pattern: str, limit: int = -1) -> list[str]:
    if not isinstance(text, str) or not isinstance(pattern, str) or type(limit) is not int:
        raise no_such_overload("findAll", text, pattern, limit)
    return find_all(text, pattern, limit)
