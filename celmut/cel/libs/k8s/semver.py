"""Kubernetes' semantic version library (``kubernetes.Semver``, k8s.io/apiserver/pkg/cel/library/semverlib.go).

Version 1, as Kubernetes enables it since 1.33. Parsing ports ``github.com/blang/semver/v4``'s
strict ``Parse`` (with its error messages); the optional ``normalize`` argument applies
Kubernetes' ``normalizeAndParse``: strip one leading ``v``, strip leading zeros, and fill a missing
minor or patch with ``0``. Comparison follows semver 2.0 precedence (build metadata is ignored,
so ``semver('1.0.0+a') == semver('1.0.0+b')``). There is no ``string(Semver)`` in Kubernetes.

semver(<string>) -> kubernetes.Semver,  semver(<string>, <bool>) -> kubernetes.Semver
    semver('1.0.0');  semver('v01.01', true) == semver('1.1.0');  semver('v1.0') // error
isSemver(<string>) -> bool,  isSemver(<string>, <bool>) -> bool
    isSemver('1.2.3-beta.1+build.1') // true;  isSemver('v1.0') // false;  isSemver('v1.0', true) // true
<Semver>.major() -> int,  <Semver>.minor() -> int,  <Semver>.patch() -> int
    semver('1.2.3').minor() // 2
<Semver>.compareTo(<Semver>) -> int
    semver('1.2.3').compareTo(semver('2.0.0')) // -1
<Semver>.isGreaterThan(<Semver>) -> bool,  <Semver>.isLessThan(<Semver>) -> bool
    semver('1.2.3').isGreaterThan(semver('1.0.0')) // true
"""

from __future__ import annotations

from typing import Any

from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.libs.golang import UINT64_MAX, quote, wrap_int64
from celmut.cel.libs.k8s.support import typed

LIBRARY: Library = Library("kubernetes.Semver")
fn, method = LIBRARY.function, LIBRARY.method

_NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-0123456789")


class SemverError(ValueError):
    """A blang/semver parse error, with its message."""


def _parse_uint(text: str) -> int:
    """Go's ``strconv.ParseUint(text, 10, 64)`` on text already known to be digits only."""
    if not text:
        raise SemverError(f"strconv.ParseUint: parsing {quote(text)}: invalid syntax")
    value = int(text)
    if value > UINT64_MAX:
        raise SemverError(f"strconv.ParseUint: parsing {quote(text)}: value out of range")
    return value


def _number(text: str, what: str) -> int:
    if not set(text) <= _NUMBERS:
        raise SemverError(f"Invalid character(s) found in {what} number {quote(text)}")
    if len(text) > 1 and text[0] == "0":
        raise SemverError(f"{what.capitalize()} number must not contain leading zeroes {quote(text)}")
    return _parse_uint(text)


def _prerelease(text: str) -> int | str:
    if not text:
        raise SemverError("Prerelease is empty")
    if set(text) <= _NUMBERS:
        if len(text) > 1 and text[0] == "0":
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {quote(text)}")
        return _parse_uint(text)
    if set(text) <= _ALPHANUM:
        return text
    raise SemverError(f"Invalid character(s) found in prerelease {quote(text)}")


@LIBRARY.opaque("kubernetes.Semver")
class Semver:
    """A semantic version (``semver.Version``): numbers, pre-release identifiers, build metadata."""

    __slots__ = ("build", "major", "minor", "patch", "pre")

    def __init__(self, major: int, minor: int, patch: int, pre: list[int | str], build: list[str]) -> None:
        self.major, self.minor, self.patch, self.pre, self.build = major, minor, patch, pre, build

    def compare(self, other: Semver) -> int:
        for a, b in ((self.major, other.major), (self.minor, other.minor), (self.patch, other.patch)):
            if a != b:
                return 1 if a > b else -1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for x, y in zip(self.pre, other.pre, strict=False):
            if x == y:
                continue
            if isinstance(x, int) and isinstance(y, int):
                return 1 if x > y else -1
            if isinstance(x, str) and isinstance(y, str):
                return 1 if x > y else -1
            return -1 if isinstance(x, int) else 1  # numeric identifiers sort first
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self.compare(other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, tuple(self.pre)))

    def text(self) -> str:
        out = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            out += "-" + ".".join(str(p) for p in self.pre)
        if self.build:
            out += "+" + ".".join(self.build)
        return out

    def __repr__(self) -> str:
        return f"semver({self.text()!r})"

    def to_plain(self) -> str:
        return self.text()


def parse(text: str) -> Semver:
    """blang/semver ``Parse``."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    rest = parts[2]
    build: list[str] = []
    pre_text: list[str] = []
    if "+" in rest:
        rest, build_text = rest.split("+", 1)
        build = build_text.split(".")
    if "-" in rest:
        rest, pre = rest.split("-", 1)
        pre_text = pre.split(".")
    patch = _number(rest, "patch")
    prerelease = [_prerelease(p) for p in pre_text]
    for item in build:
        if not item:
            raise SemverError("Buildstr is empty")
        if not set(item) <= _ALPHANUM:
            raise SemverError(f"Invalid character(s) found in build meta data {quote(item)}")
    return Semver(major, minor, patch, prerelease, build)


def normalize_and_parse(text: str) -> Semver:
    """Kubernetes' ``normalizeAndParse`` (SemverVersion 1)."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for index, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or part[0] not in _NUMBERS:
                part = "0" + part
            parts[index] = part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse(".".join(parts))


def _parse(text: str, normalize: bool) -> Semver:
    try:
        return normalize_and_parse(text) if normalize else parse(text)
    except SemverError as ex:
        raise CelEvaluationError(str(ex)) from None


@fn("semver", ("string",), "kubernetes.Semver")
@fn("semver", ("string", "bool"), "kubernetes.Semver", since=1)
@typed("semver", str, bool)
def semver(text: str, normalize: bool = False) -> Semver:
    return _parse(text, normalize)


@fn("isSemver", ("string",), "bool")
@fn("isSemver", ("string", "bool"), "bool", since=1)
@typed("isSemver", str, bool)
def is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _parse(text, normalize)
    except CelEvaluationError:
        return False
    return True


@method("major", "kubernetes.Semver", (), "int")
@typed("major", Semver)
def major(value: Semver) -> int:
    return wrap_int64(value.major)


@method("minor", "kubernetes.Semver", (), "int")
@typed("minor", Semver)
def minor(value: Semver) -> int:
    return wrap_int64(value.minor)


@method("patch", "kubernetes.Semver", (), "int")
@typed("patch", Semver)
def patch(value: Semver) -> int:
    return wrap_int64(value.patch)


def _compare(name: str) -> Any:
    @typed(name, Semver, Semver)
    def compare(value: Semver, other: Semver) -> Any:
        result = value.compare(other)
        if name == "compareTo":
            return result
        return result == (1 if name == "isGreaterThan" else -1)

    return compare


method("compareTo", "kubernetes.Semver", ("kubernetes.Semver",), "int")(_compare("compareTo"))
method("isGreaterThan", "kubernetes.Semver", ("kubernetes.Semver",), "bool")(_compare("isGreaterThan"))
method("isLessThan", "kubernetes.Semver", ("kubernetes.Semver",), "bool")(_compare("isLessThan"))
