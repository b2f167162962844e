"""Kubernetes' URL library (``kubernetes.urls``, k8s.io/apiserver/pkg/cel/library/urls.go).

A URL must be an absolute URI or an absolute path: it is checked with Go's ``url.ParseRequestURI``
and then parsed with ``url.Parse`` (ported in :mod:`celmut.cel.libs.k8s.neturl`), exactly as
Kubernetes does. Kubernetes declares no ``string(URL)`` conversion, so there is none here either.

url(<string>) -> kubernetes.URL
    url('https://user:pass@example.com:80/path?query=val#fragment') // a URL
    url('../relative-path') // error: invalid URI for request
isURL(<string>) -> bool
    isURL('/absolute-path') // true;  isURL('https://a:b:c/') // false
<URL>.getScheme() -> string
    url('https://example.com/').getScheme() // 'https';  url('/path').getScheme() // ''
<URL>.getHost() -> string
    url('https://[::1]:80/').getHost() // '[::1]:80'
<URL>.getHostname() -> string
    url('https://[::1]:80/').getHostname() // '::1'
<URL>.getPort() -> string
    url('https://example.com:80/').getPort() // '80'
<URL>.getEscapedPath() -> string
    url('https://example.com/path with spaces/').getEscapedPath() // '/path%20with%20spaces/'
<URL>.getQuery() -> map(string, list(string))
    url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() // {'k1': ['a'], 'k2': ['b', 'c']}

Two URLs are equal when their Go ``String()`` forms are.
"""

from __future__ import annotations

from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.libs.k8s import neturl
from celmut.cel.libs.k8s.support import string_cost, typed

LIBRARY: Library = Library("kubernetes.urls")
fn, method = LIBRARY.function, LIBRARY.method


@LIBRARY.opaque("kubernetes.URL")
class URL:
    """A parsed URL (Kubernetes' ``apiservercel.URL``)."""

    __slots__ = ("url",)

    def __init__(self, url: neturl.URL) -> None:
        self.url = url

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, URL):
            return NotImplemented
        return self.url.string() == other.url.string()

    def __hash__(self) -> int:
        return hash(self.url.string())

    def __repr__(self) -> str:
        return f"url({self.url.string()!r})"

    def to_plain(self) -> str:
        return self.url.string()


def parse_url(text: str) -> neturl.URL:
    try:
        neturl.parse_request_uri(text)
        return neturl.parse(text)
    except neturl.URLError as ex:
        raise CelEvaluationError(f"URL parse error during conversion from string: {ex}") from None


@fn("url", ("string",), "kubernetes.URL", cost=string_cost)
@typed("url", str)
def url(text: str) -> URL:
    return URL(parse_url(text))


@fn("isURL", ("string",), "bool")
@typed("isURL", str)
def is_url(text: str) -> bool:
    try:
        neturl.parse_request_uri(text)
    except neturl.URLError:
        return False
    return True


@method("getScheme", "kubernetes.URL", (), "string")
@typed("getScheme", URL)
def get_scheme(value: URL) -> str:
    return value.url.scheme.decode("utf-8", "replace")


@method("getHost", "kubernetes.URL", (), "string")
@typed("getHost", URL)
def get_host(value: URL) -> str:
    return value.url.host.decode("utf-8", "replace")


@method("getHostname", "kubernetes.URL", (), "string")
@typed("getHostname", URL)
def get_hostname(value: URL) -> str:
    return value.url.hostname()


@method("getPort", "kubernetes.URL", (), "string")
@typed("getPort", URL)
def get_port(value: URL) -> str:
    return value.url.port()


@method("getEscapedPath", "kubernetes.URL", (), "string")
@typed("getEscapedPath", URL)
def get_escaped_path(value: URL) -> str:
    return value.url.escaped_path()


@method("getQuery", "kubernetes.URL", (), "map(string, list(string))")
@typed("getQuery", URL)
def get_query(value: URL) -> dict[str, list[str]]:
    return value.url.query()
