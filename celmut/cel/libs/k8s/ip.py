"""Kubernetes' IP address library (``kubernetes.net.ip``, k8s.io/apiserver/pkg/cel/library/ip.go).

Addresses parse with Go's ``netip.ParseAddr`` rules (ported in :mod:`celmut.cel.libs.k8s.netip`);
Kubernetes additionally refuses IPv4-mapped IPv6 addresses (``::ffff:1.2.3.4``) and zones
(``fe80::1%eth0``). IPv4 octets with leading zeros are refused by the parser itself.

ip(<string>) -> net.IP
    ip('127.0.0.1') // an IPv4 address;  ip('127.0.0.256') // error
isIP(<string>) -> bool
    isIP('::1') // true;  isIP(':::1') // false
ip.isCanonical(<string>) -> bool
    ip.isCanonical('2001:db8::abcd') // true;  ip.isCanonical('2001:DB8::ABCD') // false
<net.IP>.family() -> int
    ip('::1').family() // 6
<net.IP>.isUnspecified() -> bool
    ip('0.0.0.0').isUnspecified() // true
<net.IP>.isLoopback() -> bool
    ip('127.0.0.1').isLoopback() // true
<net.IP>.isLinkLocalMulticast() -> bool
    ip('ff02::1').isLinkLocalMulticast() // true
<net.IP>.isLinkLocalUnicast() -> bool
    ip('169.254.169.254').isLinkLocalUnicast() // true
<net.IP>.isGlobalUnicast() -> bool
    ip('192.168.0.1').isGlobalUnicast() // true;  ip('255.255.255.255').isGlobalUnicast() // false
string(<net.IP>) -> string
    string(ip('0:0::1')) // '::1'
net.IP (a type value)
    type(ip('::1')) == net.IP // true

Two IPs are equal when their addresses are (``ip('::1') == ip('0:0::1')``).
"""

from __future__ import annotations

from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.libs import core
from celmut.cel.libs.golang import quote
from celmut.cel.libs.k8s import netip
from celmut.cel.libs.k8s.support import string_cost, typed

LIBRARY: Library = Library("kubernetes.net.ip")
fn, method = LIBRARY.function, LIBRARY.method
LIBRARY.constants["net.IP"] = v.TypeValue("net.IP")


@LIBRARY.opaque("net.IP")
class IP:
    """A parsed IP address (Kubernetes' ``apiservercel.IP``)."""

    __slots__ = ("addr",)

    def __init__(self, addr: netip.Addr) -> None:
        self.addr = addr

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IP):
            return NotImplemented
        return self.addr == other.addr

    def __hash__(self) -> int:
        return hash(self.addr)

    def __repr__(self) -> str:
        return f"ip({self.addr.string()!r})"

    def cel_string(self) -> str:
        return self.addr.string()

    def to_plain(self) -> str:
        return self.addr.string()


def parse_ip(text: str) -> netip.Addr:
    """Kubernetes' ``parseIPAddr``: netip parsing without zones or IPv4-mapped IPv6 addresses."""
    try:
        addr = netip.parse_addr(text)
    except netip.AddrError as ex:
        raise CelEvaluationError(f"IP Address {quote(text)} parse error during conversion from string: {ex}") from None
    if addr.zone:
        raise CelEvaluationError(f"IP address {quote(text)} with zone value is not allowed")
    if addr.is4in6:
        raise CelEvaluationError(f"IPv4-mapped IPv6 address {quote(text)} is not allowed")
    return addr


@fn("ip", ("string",), "net.IP", cost=string_cost)
@typed("ip", str)
def ip(text: str) -> IP:
    return IP(parse_ip(text))


@fn("isIP", ("string",), "bool", cost=string_cost)
@typed("isIP", str)
def is_ip(text: str) -> bool:
    try:
        parse_ip(text)
    except CelEvaluationError:
        return False
    return True


@fn("ip.isCanonical", ("string",), "bool", cost=lambda text: 2 * string_cost(text))
@typed("ip.isCanonical", str)
def is_canonical(text: str) -> bool:
    return parse_ip(text).string() == text


@method("family", "net.IP", (), "int")
@typed("family", IP)
def family(value: IP) -> int:
    return 4 if value.addr.is4 else 6


@method("isUnspecified", "net.IP", (), "bool")
@typed("isUnspecified", IP)
def is_unspecified(value: IP) -> bool:
    return value.addr.is_unspecified()


@method("isLoopback", "net.IP", (), "bool")
@typed("isLoopback", IP)
def is_loopback(value: IP) -> bool:
    return value.addr.is_loopback()


@method("isLinkLocalMulticast", "net.IP", (), "bool")
@typed("isLinkLocalMulticast", IP)
def is_link_local_multicast(value: IP) -> bool:
    return value.addr.is_link_local_multicast()


@method("isLinkLocalUnicast", "net.IP", (), "bool")
@typed("isLinkLocalUnicast", IP)
def is_link_local_unicast(value: IP) -> bool:
    return value.addr.is_link_local_unicast()


@method("isGlobalUnicast", "net.IP", (), "bool")
@typed("isGlobalUnicast", IP)
def is_global_unicast(value: IP) -> bool:
    return value.addr.is_global_unicast()


fn("string", ("net.IP",), "string")(core.to_string)
