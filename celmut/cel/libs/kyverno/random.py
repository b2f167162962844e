"""Kyverno's random library (kyverno/sdk ``extensions/cel/libs/random``): random strings from a
regular expression, as ``github.com/zach-klippenstein/goregen`` generates them.

random() -> <string>                 (alias ``random.random``)

    Eight characters of ``[0-9a-z]``.

random(<string> pattern) -> <string> (alias ``random.random``)

    A random string matching ``pattern``, written in Go's regexp syntax with goregen's default
    (POSIX) flags: literals, ``.``, classes (``[a-z]``, ``[^…]``, ``[[:alpha:]]``), groups,
    ``|``, ``* + ?`` and ``{n}``/``{n,}``/``{n,m}`` (counts up to 1000). Perl escapes such as ``\\d``
    and ``\\w``, ``(?…)`` groups and non-greedy operators are errors, as in Kyverno. Unbounded
    repetitions generate up to 4096 copies; ``.`` and negated classes may produce any Unicode
    character. Anchors generate nothing. Randomness comes from ``Services.rng``.

        random("[a-z]{5}").matches("^[a-z]{5}$")
"""

from __future__ import annotations

import random as _random
from typing import Any

from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("kyverno.random")
fn = LIBRARY.function

DEFAULT_PATTERN = "[0-9a-z]{8}"
MAX_UNBOUNDED = 4096
MAX_OUTPUT = 1 << 20
_MAX_RUNE = 0x10FFFF
_POSIX = {
    "alnum": [(48, 57), (65, 90), (97, 122)],
    "alpha": [(65, 90), (97, 122)],
    "ascii": [(0, 127)],
    "blank": [(9, 9), (32, 32)],
    "cntrl": [(0, 31), (127, 127)],
    "digit": [(48, 57)],
    "graph": [(33, 126)],
    "lower": [(97, 122)],
    "print": [(32, 126)],
    "punct": [(33, 47), (58, 64), (91, 96), (123, 126)],
    "space": [(9, 13), (32, 32)],
    "upper": [(65, 90)],
    "word": [(48, 57), (65, 90), (95, 95), (97, 122)],
    "xdigit": [(48, 57), (65, 70), (97, 102)],
}
_CONTROL_ESCAPES = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}

Node = tuple[Any, ...]


class PatternError(CelEvaluationError):
    pass


def _negate(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, low = [], 0
    for lo, hi in sorted(ranges):
        if lo > low:
            out.append((low, lo - 1))
        low = max(low, hi + 1)
    if low <= _MAX_RUNE:
        out.append((low, _MAX_RUNE))
    return out


class _Parser:
    """Go's ``regexp/syntax`` parser for the flags goregen uses by default (0: no Perl extensions)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.pos = 0

    def error(self, code: str, text: str) -> PatternError:
        return PatternError(f"error parsing regexp: {code}: `{text}`")

    def parse(self) -> Node:
        node = self.alternation()
        if self.pos < len(self.pattern):  # a stray ')'
            raise self.error("unexpected )", self.pattern)
        return node

    def alternation(self) -> Node:
        branches = [self.concatenation()]
        while self.pos < len(self.pattern) and self.pattern[self.pos] == "|":
            self.pos += 1
            branches.append(self.concatenation())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def concatenation(self) -> Node:
        items: list[Node] = []
        last_repeat = ""
        while self.pos < len(self.pattern) and self.pattern[self.pos] not in "|)":
            start = self.pos
            ch = self.pattern[self.pos]
            if ch in "*+?{":
                bounds = self.repeat_bounds()
                if bounds is not None:
                    operator = self.pattern[start : self.pos]
                    if not items:
                        raise self.error("missing argument to repetition operator", operator)
                    if last_repeat:
                        raise self.error("invalid nested repetition operator", last_repeat + operator)
                    items[-1] = ("repeat", items[-1], *bounds)
                    last_repeat = operator
                    continue
                self.pos = start + 1
                items.append(("lit", "{"))
            else:
                items.append(self.atom())
            last_repeat = ""
        return items[0] if len(items) == 1 else ("concat", items)  # () and "" are empty concatenations

    def repeat_bounds(self) -> tuple[int, int] | None:
        ch = self.pattern[self.pos]
        self.pos += 1
        if ch != "{":
            return {"*": (0, -1), "+": (1, -1), "?": (0, 1)}[ch]
        close = self.pattern.find("}", self.pos)
        body = self.pattern[self.pos : close] if close != -1 else ""
        low_text, comma, high_text = body.partition(",")
        if close == -1 or not low_text.isdigit() or (high_text and not high_text.isdigit()) or not body.isascii():
            return None
        self.pos = close + 1
        low = int(low_text)
        high = low if not comma else (int(high_text) if high_text else -1)
        if low > 1000 or high > 1000 or (high != -1 and high < low):
            raise self.error("invalid repeat count", "{" + body + "}")
        return low, high

    def atom(self) -> Node:
        ch = self.pattern[self.pos]
        self.pos += 1
        if ch == "(":
            if self.pos < len(self.pattern) and self.pattern[self.pos] == "?":
                raise self.error("missing argument to repetition operator", "?")
            inner = self.alternation()
            if self.pos >= len(self.pattern) or self.pattern[self.pos] != ")":
                raise self.error("missing closing )", self.pattern)
            self.pos += 1
            return inner
        if ch == ".":
            return ("class", [(1, 0x7FFFFFFF)])  # goregen: any rune 1..MaxInt32 (newline included)
        if ch in "^$":
            return ("anchor",)
        if ch == "[":
            return ("class", self.char_class())
        if ch == "\\":
            return ("lit", chr(self.escape()))
        return ("lit", ch)

    def escape(self) -> int:
        start = self.pos - 1
        if self.pos >= len(self.pattern):
            raise self.error("trailing backslash at end of expression", "")
        ch = self.pattern[self.pos]
        self.pos += 1
        if ch in "1234567" and (self.pos >= len(self.pattern) or self.pattern[self.pos] not in "01234567"):
            raise self.error("invalid escape sequence", self.pattern[start : self.pos])
        if ch in "01234567":
            digits = ch
            while len(digits) < 3 and self.pos < len(self.pattern) and self.pattern[self.pos] in "01234567":
                digits += self.pattern[self.pos]
                self.pos += 1
            return int(digits, 8)
        if ch == "x":
            if self.pattern.startswith("{", self.pos):
                close = self.pattern.find("}", self.pos)
                digits = self.pattern[self.pos + 1 : close] if close != -1 else ""
                self.pos = close + 1 if close != -1 else len(self.pattern)
            else:
                digits = self.pattern[self.pos : self.pos + 2]
                self.pos += 2
            try:
                value = int(digits, 16) if digits and all(c in "0123456789abcdefABCDEF" for c in digits) else -1
            except ValueError:
                value = -1
            if not 0 <= value <= _MAX_RUNE:
                raise self.error("invalid escape sequence", self.pattern[start : self.pos])
            return value
        if ch in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[ch]
        if ord(ch) < 128 and not ch.isalnum():
            return ord(ch)
        raise self.error("invalid escape sequence", self.pattern[start : self.pos])

    def char_class(self) -> list[tuple[int, int]]:
        start = self.pos - 1
        negate = self.pattern.startswith("^", self.pos)
        if negate:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            if self.pos >= len(self.pattern):
                raise self.error("missing closing ]", self.pattern[start:])
            ch = self.pattern[self.pos]
            if ch == "]" and not first:
                self.pos += 1
                break
            first = False
            if self.pattern.startswith("[:", self.pos):
                close = self.pattern.find(":]", self.pos + 2)
                name = self.pattern[self.pos + 2 : close] if close != -1 else ""
                negated = name.startswith("^")
                if close != -1 and name.lstrip("^") in _POSIX:
                    named = _POSIX[name.lstrip("^")]
                    ranges.extend(_negate(named) if negated else named)
                    self.pos = close + 2
                    continue
                if close != -1:
                    raise self.error("invalid character class range", self.pattern[self.pos : close + 2])
            low = self.class_char()
            high = low
            if self.pattern.startswith("-", self.pos) and not self.pattern.startswith("-]", self.pos):
                self.pos += 1
                high = self.class_char()
                if high < low:
                    raise self.error("invalid character class range", f"{chr(low)}-{chr(high)}")
            ranges.append((low, high))
        if negate:
            ranges = _negate([*ranges, (10, 10)])  # without ClassNL a negated class never matches \n
        if not ranges:
            raise PatternError("invalid generator pattern: the character class matches nothing")
        return ranges

    def class_char(self) -> int:
        if self.pos >= len(self.pattern):
            raise self.error("missing closing ]", self.pattern)
        ch = self.pattern[self.pos]
        self.pos += 1
        return self.escape() if ch == "\\" else ord(ch)


def _rune(code: int) -> str:
    return "\ufffd" if code > _MAX_RUNE or 0xD800 <= code <= 0xDFFF else chr(code)


def generate(pattern: str, rng: _random.Random) -> str:
    tree = _Parser(pattern).parse()
    out: list[str] = []
    size = [0]

    def emit(text: str) -> None:
        size[0] += len(text)
        if size[0] > MAX_OUTPUT:
            raise CelEvaluationError(f"random: the pattern generates more than {MAX_OUTPUT} characters")
        out.append(text)

    def run(node: Node) -> None:
        kind = node[0]
        if kind == "lit":
            emit(node[1])
        elif kind == "class":
            total = sum(hi - max(lo, 1) + 1 for lo, hi in node[1] if hi >= max(lo, 1))
            index = rng.randrange(total)
            for lo, hi in node[1]:
                lo = max(lo, 1)  # goregen never generates NUL
                if hi < lo:
                    continue
                if index <= hi - lo:
                    emit(_rune(lo + index))
                    break
                index -= hi - lo + 1
        elif kind == "concat":
            for item in node[1]:
                run(item)
        elif kind == "alt":
            run(node[1][rng.randrange(len(node[1]))])
        elif kind == "repeat":
            _, inner, low, high = node
            if high == -1:  # Go simplifies x{n,} to n-1 copies and x+ (x* when n is 0)
                count = max(low - 1, 0) + rng.randint(1 if low else 0, MAX_UNBOUNDED)
            else:  # and x{n,m} to n copies and nested optionals: each further copy has a 1/2 chance
                count = low
                while count < high and rng.randrange(2):
                    count += 1
            for _ in range(count):
                run(inner)

    run(tree)
    return "".join(out)


def _random_string(ctx: Any, pattern: Any) -> str:
    if not isinstance(pattern, str):
        raise no_such_overload("random", pattern)
    result = generate(pattern, ctx.services.rng)
    ctx.charge(len(result) // 64)
    return result


for _name in ("random", "random.random"):
    fn(_name, (), "string", context=True, pure=False)(lambda ctx: _random_string(ctx, DEFAULT_PATTERN))
    fn(_name, ("string",), "string", context=True, pure=False)(_random_string)
