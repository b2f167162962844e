"""A port of Go's ``net/netip`` address and prefix parsing, as Kubernetes' ip/cidr libraries use it.

Go's parser is stricter than Python's ``ipaddress`` in ways policies can observe (IPv4 octets with
leading zeros, at most four hex digits per IPv6 group, zones), and its error messages end up in
CEL errors, so parsing is ported rule for rule; Python's ``ipaddress`` only formats IPv6 text
(RFC 5952, the same canonical form as Go's ``Addr.String``).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from celmut.cel.libs.golang import INT64_MAX, quote


class AddrError(ValueError):
    """A ``netip.ParseAddr``/``ParsePrefix`` failure, with Go's message."""


@dataclass(frozen=True)
class Addr:
    """An IPv4 (32 bits) or IPv6 (128 bits) address with an optional zone."""

    bits: int  # 32 or 128
    value: int
    zone: str = ""

    @property
    def is4(self) -> bool:
        return self.bits == 32

    @property
    def is4in6(self) -> bool:
        return self.bits == 128 and self.value >> 32 == 0xFFFF

    def string(self) -> str:
        if self.is4:
            return ".".join(str((self.value >> shift) & 0xFF) for shift in (24, 16, 8, 0))
        if self.is4in6:
            v4 = Addr(32, self.value & 0xFFFFFFFF).string()
            text = "::ffff:" + v4
        else:
            text = ipaddress.IPv6Address(self.value).compressed
        return text + ("%" + self.zone if self.zone else "")

    def _v6_group(self, index: int) -> int:
        return (self.value >> (112 - 16 * index)) & 0xFFFF

    def is_unspecified(self) -> bool:
        return self.value == 0 and not self.zone

    def is_loopback(self) -> bool:
        if self.is4:
            return self.value >> 24 == 127
        return self.value == 1

    def is_multicast(self) -> bool:
        if self.is4:
            return self.value >> 28 == 0xE
        return self.value >> 120 == 0xFF

    def is_link_local_multicast(self) -> bool:
        if self.is4:
            return self.value >> 8 == 0xE00000  # 224.0.0.0/24
        return self._v6_group(0) & 0xFF0F == 0xFF02

    def is_link_local_unicast(self) -> bool:
        if self.is4:
            return self.value >> 16 == 0xA9FE  # 169.254.0.0/16
        return self._v6_group(0) & 0xFFC0 == 0xFE80

    def is_global_unicast(self) -> bool:
        if self.is4 and self.value in (0, 0xFFFFFFFF):
            return False
        return (
            not (self.bits == 128 and self.value == 0)
            and not self.is_loopback()
            and not self.is_multicast()
            and not self.is_link_local_unicast()
        )


@dataclass(frozen=True)
class Prefix:
    """An address and a prefix length; the address keeps its host bits (Go's ``netip.Prefix``)."""

    addr: Addr
    length: int

    def string(self) -> str:
        return f"{self.addr.string()}/{self.length}"

    def masked(self) -> Prefix:
        host_bits = self.addr.bits - self.length
        value = (self.addr.value >> host_bits) << host_bits
        return Prefix(Addr(self.addr.bits, value), self.length)

    def contains(self, addr: Addr) -> bool:
        if addr.zone or addr.bits != self.addr.bits:
            return False
        host_bits = self.addr.bits - self.length
        return addr.value >> host_bits == self.addr.value >> host_bits


def _error(text: str, message: str, at: str | None = None) -> AddrError:
    detail = f"ParseAddr({quote(text)}): {message}"
    if at:
        detail += f" (at {quote(at)})"
    return AddrError(detail)


def parse_addr(text: str) -> Addr:
    """``netip.ParseAddr``."""
    for ch in text:
        if ch == ".":
            return _parse_ipv4(text)
        if ch == ":":
            return _parse_ipv6(text)
        if ch == "%":
            raise _error(text, "missing IPv6 address")
    raise _error(text, "unable to parse IP")


def _parse_ipv4_fields(text: str, start: int, end: int) -> list[int]:
    fields: list[int] = []
    value = digits = 0
    part = text[start:end]
    for i, ch in enumerate(part):
        if "0" <= ch <= "9":
            if digits == 1 and value == 0:
                raise _error(text, "IPv4 field has octet with leading zero")
            value = value * 10 + ord(ch) - 48
            digits += 1
            if value > 255:
                raise _error(text, "IPv4 field has value >255")
        elif ch == ".":
            if i == 0 or i == len(part) - 1 or part[i - 1] == ".":
                raise _error(text, "IPv4 field must have at least one digit", part[i:])
            if len(fields) == 3:
                raise _error(text, "IPv4 address too long")
            fields.append(value)
            value = digits = 0
        else:
            raise _error(text, "unexpected character", part[i:])
    if len(fields) < 3:
        raise _error(text, "IPv4 address too short")
    fields.append(value)
    return fields


def _parse_ipv4(text: str) -> Addr:
    a, b, c, d = _parse_ipv4_fields(text, 0, len(text))
    return Addr(32, a << 24 | b << 16 | c << 8 | d)


_HEX = {c: int(c, 16) for c in "0123456789abcdefABCDEF"}


def _parse_ipv6(text: str) -> Addr:
    rest, zone = _split_zone(text)
    ellipsis = -1  # position (in groups) of "::"
    if rest.startswith("::"):
        ellipsis = 0
        rest = rest[2:]
        if not rest:
            return Addr(128, 0, zone)
    groups, ellipsis, rest = _parse_ipv6_groups(text, rest, zone, ellipsis)
    if rest:
        raise _error(text, "trailing garbage after address", rest)
    return Addr(128, _ipv6_value(text, groups, ellipsis), zone)


def _split_zone(text: str) -> tuple[str, str]:
    """The address and its ``%zone`` (empty when there is none)."""
    rest, zone = text, ""
    if "%" in rest:
        rest, zone = rest.split("%", 1)
        if not zone:
            raise _error(text, "zone must be a non-empty string")
    return rest, zone


def _parse_ipv6_groups(text: str, rest: str, zone: str, ellipsis: int) -> tuple[list[int], int, str]:
    """The colon-separated 16-bit groups at the start of ``rest``: (groups, position of "::", what is left)."""
    groups: list[int] = []  # 16-bit groups parsed so far
    while len(groups) < 8:
        acc, offset = _parse_hex_group(text, rest)
        if offset < len(rest) and rest[offset] == ".":
            groups += _embedded_ipv4(text, rest, zone, len(groups), ellipsis)
            rest = ""
            break
        groups.append(acc)
        rest = rest[offset:]
        if not rest:
            break
        if rest[0] != ":":
            raise _error(text, "unexpected character, want colon", rest)
        if len(rest) == 1:
            raise _error(text, "colon must be followed by more characters", rest)
        rest = rest[1:]
        if rest[0] == ":":
            if ellipsis >= 0:
                raise _error(text, "multiple :: in address", rest)
            ellipsis = len(groups)
            rest = rest[1:]
            if not rest:
                break
    return groups, ellipsis, rest


def _parse_hex_group(text: str, rest: str) -> tuple[int, int]:
    """The hex group at the start of ``rest``: (its value, its number of digits)."""
    offset = acc = 0
    while offset < len(rest) and rest[offset] in _HEX:
        acc = (acc << 4) + _HEX[rest[offset]]
        if offset > 3:
            raise _error(text, "each group must have 4 or less digits", rest)
        if acc > 0xFFFF:
            raise _error(text, "IPv6 field has value >=2^16", rest)
        offset += 1
    if offset == 0:
        raise _error(text, "each colon-separated field must have at least one digit", rest)
    return acc, offset


def _embedded_ipv4(text: str, rest: str, zone: str, count: int, ellipsis: int) -> list[int]:
    """The last two groups, written as the IPv4 address ``rest``; ``count`` groups come before it."""
    if ellipsis < 0 and count != 6:
        raise _error(text, "embedded IPv4 address must replace the final 2 fields of the address", rest)
    if count + 2 > 8:
        raise _error(text, "too many hex fields to fit an embedded IPv4 at the end of the address", rest)
    end = len(text) - (len(zone) + 1 if zone else 0)
    a, b, c, d = _parse_ipv4_fields(text, end - len(rest), end)
    return [a << 8 | b, c << 8 | d]


def _ipv6_value(text: str, groups: list[int], ellipsis: int) -> int:
    """The 128-bit value of ``groups``, with the "::" at ``ellipsis`` expanded to zeros."""
    if len(groups) < 8:
        if ellipsis < 0:
            raise _error(text, "address string too short")
        groups = groups[:ellipsis] + [0] * (8 - len(groups)) + groups[ellipsis:]
    elif ellipsis >= 0:
        raise _error(text, "the :: must expand to at least one field of zeros")
    value = 0
    for group in groups:
        value = value << 16 | group
    return value


def parse_prefix(text: str) -> Prefix:
    """``netip.ParsePrefix``."""

    def failure(message: str) -> AddrError:
        return AddrError(f"netip.ParsePrefix({quote(text)}): {message}")

    slash = text.rfind("/")
    if slash < 0:
        raise failure("no '/'")
    try:
        addr = parse_addr(text[:slash])
    except AddrError as ex:
        raise failure(str(ex)) from None
    if not addr.is4 and addr.zone:
        raise failure("IPv6 zones cannot be present in a prefix")
    bits_text = text[slash + 1 :]
    if (len(bits_text) > 1 and not "1" <= bits_text[0] <= "9") or not bits_text.isascii() or not bits_text.isdigit():
        raise failure("bad bits after slash: " + quote(bits_text))
    length = int(bits_text)
    if length > INT64_MAX:  # strconv.Atoi's range error
        raise failure("bad bits after slash: " + quote(bits_text))
    if length > addr.bits:
        raise failure("prefix length out of range")
    return Prefix(addr, length)
