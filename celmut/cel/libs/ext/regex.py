"""cel-go's Regex extension (``ext.Regex()``), on RE2 with Go's rules for successive matches (an empty
match right after a previous match is skipped).

``regex.replace(<string>, <string>, <string>[, <int>]) -> <string>``  replace the first ``count`` matches
(all when omitted or negative, none when 0); ``\\N`` in the replacement inserts group N (``\\0`` the
whole match), ``\\\\`` a backslash: ``regex.replace('foo bar', '(fo)o (ba)r', r'\\2 \\1') == 'ba fo'``
``regex.extract(<string>, <string>) -> <optional_type(string)>``  the first match, or its single capture
group: ``regex.extract('item-A, item-B', r'item-(\\w+)') == optional.of('A')``; none when nothing
matches or the group is empty; more than one capture group is an error
``regex.extractAll(<string>, <string>) -> <list(string)>``  every match (or non-empty capture group):
``regex.extractAll('id:123, id:456', r'id:\\d+') == ['id:123', 'id:456']``
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import re2

from celmut.cel import regex
from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.libs import golang
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("cel.lib.ext.regex")
fn = LIBRARY.function

_UNANCHORED = re2._Anchor.UNANCHORED
_INT32_MAX = 2**31 - 1

Spans = list[tuple[int, int]]


def _matches(compiled: Any, data: bytes) -> Iterator[Spans]:
    """Go's regexp allMatches over UTF-8 ``data``: leftmost-first matches, each search resuming at the
    previous end, an empty match abutting the previous match skipped and the position advanced one rune."""
    low = compiled._regexp
    pos, end, previous_end = 0, len(data), -1
    while pos <= end:
        spans = low.Match(_UNANCHORED, data, pos, end)
        if spans[0][0] == -1:
            return
        start, stop = spans[0]
        accept = True
        if stop == pos:  # an empty match at the search position
            accept = start != previous_end
            pos += _rune_width(data, pos) if pos < end else 1
        else:
            pos = stop
        previous_end = stop
        if accept:
            yield spans


def _rune_width(data: bytes, pos: int) -> int:
    lead = data[pos]
    return 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def _cost(target: Any, pattern: Any, *rest: Any) -> int:
    """cel-go's search cost, (target + 1) × 0.1 × (pattern + 1) × 0.25, plus a tenth of the target for
    the result (cel-go adds the actual result size afterwards; celmut charges before the work)."""
    if isinstance(target, str) and isinstance(pattern, str):
        return (len(target) + 1) * (len(pattern) + 1) // 40 + len(target) // 10
    return 0


def _expand(replacement: str, data: bytes, spans: Spans, groups: int) -> bytes:
    out = bytearray()
    i = 0
    while i < len(replacement):
        ch = replacement[i]
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
            continue
        if i + 1 >= len(replacement):
            raise CelEvaluationError(f"invalid replacement string: '{replacement}' \\ not allowed at end")
        following = replacement[i + 1]
        i += 2
        if following == "\\":
            out += b"\\"
            continue
        if following not in "0123456789":
            raise CelEvaluationError(
                f"invalid replacement string: '{replacement}' \\ must be followed by a digit or \\"
            )
        group = int(following)
        if group > groups:
            raise CelEvaluationError(
                f"replacement string references group {group} but regex has only {groups} group(s)"
            )
        start, stop = spans[group]
        if start != -1:
            out += data[start:stop]
    return bytes(out)


@fn("regex.replace", ("string", "string", "string"), "string", cost=_cost)
@fn("regex.replace", ("string", "string", "string", "int"), "string", cost=_cost)
def replace(target: str, pattern: str, replacement: str, *count: int) -> str:
    if not all(isinstance(a, str) for a in (target, pattern, replacement)) or any(type(c) is not int for c in count):
        raise no_such_overload("regex.replace", target, pattern, replacement, *count)
    limit = count[0] if count else -1
    if limit == 0:
        return target
    if limit > _INT32_MAX:
        raise CelEvaluationError("integer overflow")
    compiled = regex.compile_pattern(pattern)
    data = target.encode("utf-8")
    out = bytearray()
    last = 0
    for done, spans in enumerate(_matches(compiled, data)):
        if 0 <= limit <= done:
            break
        start, stop = spans[0]
        out += data[last:start]
        out += _expand(replacement, data, spans, compiled.groups)
        last = stop
    out += data[last:]
    return out.decode("utf-8")


def _single_group(name: str, target: Any, pattern: Any) -> Any:
    if not isinstance(target, str) or not isinstance(pattern, str):
        raise no_such_overload(name, target, pattern)
    compiled = regex.compile_pattern(pattern)
    if compiled.groups > 1:
        raise CelEvaluationError(f"regular expression has more than one capturing group: {golang.quote(pattern)}")
    return compiled


@fn("regex.extract", ("string", "string"), "optional_type(string)", cost=_cost)
def extract(target: str, pattern: str) -> v.OptionalValue:
    compiled = _single_group("regex.extract", target, pattern)
    data = target.encode("utf-8")
    spans = compiled._regexp.Match(_UNANCHORED, data, 0, len(data))
    if spans[0][0] == -1:
        return v.NONE
    start, stop = spans[1] if compiled.groups == 1 else spans[0]
    if compiled.groups == 1 and stop - start <= 0:
        return v.NONE  # the group did not take part in the match, or matched nothing
    return v.OptionalValue(data[start:stop].decode("utf-8"))


@fn("regex.extractAll", ("string", "string"), "list(string)", cost=_cost)
def extract_all(target: str, pattern: str) -> list[str]:
    compiled = _single_group("regex.extractAll", target, pattern)
    data = target.encode("utf-8")
    out = []
    for spans in _matches(compiled, data):
        if compiled.groups == 1:
            start, stop = spans[1]
            if stop - start <= 0:
                continue
        else:
            start, stop = spans[0]
        out.append(data[start:stop].decode("utf-8"))
    return out
