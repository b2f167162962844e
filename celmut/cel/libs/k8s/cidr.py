"""Kubernetes' CIDR library (``net.cidr``, k8s.io/apiserver/pkg/cel/library/cidr.go).

Prefixes parse with Go's ``netip.ParsePrefix`` (IPv4 octets with leading zeros and IPv6 zones are
refused); Kubernetes also refuses IPv4-mapped IPv6 addresses. Host bits after the prefix are kept
(``cidr('192.168.0.1/24')`` is valid; ``masked()`` clears them). The CEL type is ``net.CIDR``.

cidr(<string>) -> net.CIDR
    cidr('192.168.0.0/16') // an IPv4 prefix;  cidr('::1/129') // error
isCIDR(<string>) -> bool
    isCIDR('::1/128') // true;  isCIDR('192.168.0.0/33') // false
<net.CIDR>.containsIP(<net.IP> | <string>) -> bool
    cidr('192.168.0.0/24').containsIP(ip('192.168.0.1')) // true
<net.CIDR>.containsCIDR(<net.CIDR> | <string>) -> bool
    cidr('192.168.0.0/16').containsCIDR('192.168.10.0/24') // true
<net.CIDR>.ip() -> net.IP
    cidr('192.168.0.1/24').ip() // ip('192.168.0.1')
<net.CIDR>.masked() -> net.CIDR
    cidr('192.168.0.1/24').masked() // cidr('192.168.0.0/24')
<net.CIDR>.prefixLength() -> int
    cidr('::1/128').prefixLength() // 128
string(<net.CIDR>) -> string
    string(cidr('192.168.0.0/24')) // '192.168.0.0/24'
net.CIDR (a type value)
    type(cidr('::1/128')) == net.CIDR // true

Two CIDRs are equal when address and prefix length are (host bits included:
``cidr('192.168.0.1/24') != cidr('192.168.0.1/24').masked()``). ``containsCIDR`` follows the
Kubernetes 1.33 fix (kubernetes#130450) that masks the other prefix's address before comparing.
"""

from __future__ import annotations

import math
from typing import Any

from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.libs import core
from celmut.cel.libs.golang import quote
from celmut.cel.libs.k8s import netip
from celmut.cel.libs.k8s.ip import IP, parse_ip
from celmut.cel.libs.k8s.support import string_cost, typed
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("net.cidr")
fn, method = LIBRARY.function, LIBRARY.method
LIBRARY.constants["net.CIDR"] = v.TypeValue("net.CIDR")


@LIBRARY.opaque("net.CIDR")
class CIDR:
    """A parsed network prefix (Kubernetes' ``apiservercel.CIDR``)."""

    __slots__ = ("prefix",)

    def __init__(self, prefix: netip.Prefix) -> None:
        self.prefix = prefix

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CIDR):
            return NotImplemented
        return self.prefix == other.prefix

    def __hash__(self) -> int:
        return hash(self.prefix)

    def __repr__(self) -> str:
        return f"cidr({self.prefix.string()!r})"

    def cel_string(self) -> str:
        return self.prefix.string()

    def to_plain(self) -> str:
        return self.prefix.string()


def parse_cidr(text: str) -> netip.Prefix:
    """Kubernetes' ``stringToCIDR`` (its error message names the conversion twice, as Kubernetes does)."""
    prefix_text = "network address parse error during conversion from string: "
    try:
        prefix = netip.parse_prefix(text)
    except netip.AddrError as ex:
        raise CelEvaluationError(prefix_text + prefix_text + str(ex)) from None
    if prefix.addr.is4in6:
        raise CelEvaluationError(prefix_text + f"IPv4-mapped IPv6 address {quote(text)} is not allowed")
    return prefix


def _size(value: Any) -> int:
    """Kubernetes' ``Size()`` of a CIDR: the bytes covered by its prefix."""
    return math.ceil(value.prefix.length / 8) if isinstance(value, CIDR) else 0


def _contains_ip_cost(value: Any, other: Any) -> int:
    return math.ceil(2 * _size(value) * 0.1) + string_cost(other)


def _contains_cidr_cost(value: Any, other: Any) -> int:
    return _contains_ip_cost(value, other) + math.ceil(_size(value) * 0.1) + 1


@fn("cidr", ("string",), "net.CIDR", cost=string_cost)
@typed("cidr", str)
def cidr(text: str) -> CIDR:
    return CIDR(parse_cidr(text))


@fn("isCIDR", ("string",), "bool", cost=string_cost)
@typed("isCIDR", str)
def is_cidr(text: str) -> bool:
    try:
        parse_cidr(text)
    except CelEvaluationError:
        return False
    return True


@method("containsIP", "net.CIDR", ("string",), "bool", cost=_contains_ip_cost)
@method("containsIP", "net.CIDR", ("net.IP",), "bool", cost=_contains_ip_cost)
def contains_ip(value: CIDR, other: Any) -> bool:
    if not isinstance(value, CIDR):
        raise no_such_overload("containsIP", value, other)
    if isinstance(other, str):
        try:
            addr = parse_ip(other)
        except CelEvaluationError:
            # Kubernetes passes the parse error on as an argument and then reports the argument
            # type mismatch instead of the parse error (containsCIDR reports the parse error).
            raise no_such_overload("containsIP", value, other) from None
    elif isinstance(other, IP):
        addr = other.addr
    else:
        raise no_such_overload("containsIP", value, other)
    return value.prefix.contains(addr)


@method("containsCIDR", "net.CIDR", ("string",), "bool", cost=_contains_cidr_cost)
@method("containsCIDR", "net.CIDR", ("net.CIDR",), "bool", cost=_contains_cidr_cost)
def contains_cidr(value: CIDR, other: Any) -> bool:
    if not isinstance(value, CIDR):
        raise no_such_overload("containsCIDR", value, other)
    if isinstance(other, str):
        inner = parse_cidr(other)
    elif isinstance(other, CIDR):
        inner = other.prefix
    else:
        raise no_such_overload("containsCIDR", value, other)
    outer = value.prefix
    if inner.addr.bits != outer.addr.bits:
        return False
    return outer.masked() == netip.Prefix(inner.addr, outer.length).masked() and outer.length <= inner.length


@method("ip", "net.CIDR", (), "net.IP")
@typed("ip", CIDR)
def cidr_ip(value: CIDR) -> IP:
    return IP(value.prefix.addr)


@method("masked", "net.CIDR", (), "net.CIDR")
@typed("masked", CIDR)
def masked(value: CIDR) -> CIDR:
    return CIDR(value.prefix.masked())


@method("prefixLength", "net.CIDR", (), "int")
@typed("prefixLength", CIDR)
def prefix_length(value: CIDR) -> int:
    return value.prefix.length


fn("string", ("net.CIDR",), "string")(core.to_string)
