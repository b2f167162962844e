"""A port of Go's ``net/url`` parsing (``url.Parse``, ``url.ParseRequestURI``) and the accessors that
Kubernetes' URL library exposes, with Go's error messages.

Go works on bytes: text is UTF-8 encoded for parsing and percent-decoding, and decoded results are
turned back into Python strings (invalid UTF-8 from ``%ff`` escapes becomes U+FFFD).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from celmut.cel.libs.golang import quote

PATH, PATH_SEGMENT, HOST, ZONE, USER_PASSWORD, QUERY_COMPONENT, FRAGMENT = range(1, 8)
_HEXDIGITS = b"0123456789abcdefABCDEF"
_UPPERHEX = "0123456789ABCDEF"


class URLError(ValueError):
    """A ``*url.Error`` (or one of the errors it wraps), with Go's message."""


def _alnum(c: int) -> bool:
    return 0x61 <= c <= 0x7A or 0x41 <= c <= 0x5A or 0x30 <= c <= 0x39


def should_escape(c: int, mode: int) -> bool:
    """Go's ``shouldEscape`` (RFC 3986 with Go's per-component allowances)."""
    if _alnum(c):
        return False
    if mode in (HOST, ZONE) and c in b"!$&'()*+,;=:[]<>\"":
        return False
    if c in b"-_.~":
        return False
    if c in b"$&+,/:;=?@":
        if mode == PATH:
            return c == 0x3F  # '?'
        if mode == PATH_SEGMENT:
            return c in b"/;,?"
        if mode == USER_PASSWORD:
            return c in b"@/?:"
        if mode == QUERY_COMPONENT:
            return True
        if mode == FRAGMENT:
            return False
    return not (mode == FRAGMENT and c in b"!()*")


def _escape_error(s: bytes) -> URLError:
    return URLError("invalid URL escape " + quote(s.decode("utf-8", "replace")))


def unescape(s: bytes, mode: int) -> bytes:
    """Go's ``unescape``: percent-decoding with the per-component checks."""
    n = 0
    has_plus = False
    i = 0
    while i < len(s):
        c = s[i]
        if c == 0x25:  # '%'
            n += 1
            if i + 2 >= len(s) or s[i + 1] not in _HEXDIGITS or s[i + 2] not in _HEXDIGITS:
                raise _escape_error(s[i : i + 3])
            if mode == HOST and int(s[i + 1 : i + 2], 16) < 8 and s[i : i + 3] != b"%25":
                raise _escape_error(s[i : i + 3])
            if mode == ZONE:
                v = int(s[i + 1 : i + 3], 16)
                if s[i : i + 3] != b"%25" and v != 0x20 and should_escape(v, HOST):
                    raise _escape_error(s[i : i + 3])
            i += 3
            continue
        if c == 0x2B:  # '+'
            has_plus = mode == QUERY_COMPONENT
        elif mode in (HOST, ZONE) and c < 0x80 and should_escape(c, mode):
            raise URLError("invalid character " + quote(chr(c)) + " in host name")
        i += 1
    if n == 0 and not has_plus:
        return s
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c == 0x25:
            out.append(int(s[i + 1 : i + 3], 16))
            i += 3
            continue
        out.append(0x20 if c == 0x2B and mode == QUERY_COMPONENT else c)
        i += 1
    return bytes(out)


def escape(s: bytes, mode: int) -> bytes:
    """Go's ``escape``."""
    out = []
    for c in s:
        if c == 0x20 and mode == QUERY_COMPONENT:
            out.append("+")
        elif should_escape(c, mode):
            out.append("%" + _UPPERHEX[c >> 4] + _UPPERHEX[c & 15])
        else:
            out.append(chr(c))
    return "".join(out).encode("latin-1")


def _valid_encoded(s: bytes, mode: int) -> bool:
    for c in s:
        if c in b"!$&'()*+,;=:@[]%":
            continue
        if should_escape(c, mode):
            return False
    return True


def _valid_optional_port(port: bytes) -> bool:
    if not port:
        return True
    return port[:1] == b":" and all(0x30 <= c <= 0x39 for c in port[1:])


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


@dataclass
class URL:
    """The fields of Go's ``url.URL`` that Kubernetes reads (as UTF-8 bytes)."""

    scheme: bytes = b""
    opaque: bytes = b""
    user: tuple[bytes, bytes | None] | None = None  # (username, password or None)
    host: bytes = b""
    path: bytes = b""
    raw_path: bytes = b""
    omit_host: bool = False
    force_query: bool = False
    raw_query: bytes = b""
    fragment: bytes = b""
    raw_fragment: bytes = b""
    _string: str = field(default="", compare=False)

    def escaped_path(self) -> str:
        if self.raw_path and _valid_encoded(self.raw_path, PATH):
            try:
                if unescape(self.raw_path, PATH) == self.path:
                    return _text(self.raw_path)
            except URLError:
                pass
        if self.path == b"*":
            return "*"
        return _text(escape(self.path, PATH))

    def escaped_fragment(self) -> str:
        if self.raw_fragment and _valid_encoded(self.raw_fragment, FRAGMENT):
            try:
                if unescape(self.raw_fragment, FRAGMENT) == self.fragment:
                    return _text(self.raw_fragment)
            except URLError:
                pass
        return _text(escape(self.fragment, FRAGMENT))

    def _split_host_port(self) -> tuple[bytes, bytes]:
        host, port = self.host, b""
        colon = host.rfind(b":")
        if colon != -1 and _valid_optional_port(host[colon:]):
            host, port = host[:colon], host[colon + 1 :]
        if host.startswith(b"[") and host.endswith(b"]"):
            host = host[1:-1]
        return host, port

    def hostname(self) -> str:
        return _text(self._split_host_port()[0])

    def port(self) -> str:
        return _text(self._split_host_port()[1])

    def query(self) -> dict[str, list[str]]:
        """Go's ``URL.Query()``: the parsed query, skipping malformed pairs."""
        values: dict[str, list[str]] = {}
        for pair in self.raw_query.split(b"&") if self.raw_query else []:
            if b";" in pair or not pair:
                continue
            key, _, value = pair.partition(b"=")
            try:
                k = _text(unescape(key, QUERY_COMPONENT))
                val = _text(unescape(value, QUERY_COMPONENT))
            except URLError:
                continue
            values.setdefault(k, []).append(val)
        return values

    def string(self) -> str:
        """Go's ``URL.String()`` (used for equality, as Kubernetes compares URLs by it)."""
        if self._string:
            return self._string
        out = []
        if self.scheme:
            out.append(_text(self.scheme) + ":")
        if self.opaque:
            out.append(_text(self.opaque))
        else:
            has_authority = self.scheme or self.host or self.user is not None
            if has_authority and not (self.omit_host and not self.host and self.user is None):
                if self.host or self.path or self.user is not None:
                    out.append("//")
                if self.user is not None:
                    name, password = self.user
                    info = _text(escape(name, USER_PASSWORD))
                    if password is not None:
                        info += ":" + _text(escape(password, USER_PASSWORD))
                    out.append(info + "@")
                if self.host:
                    out.append(_text(escape(self.host, HOST)))
            path = self.escaped_path()
            if path and path[0] != "/" and self.host:
                out.append("/")
            if not out and ":" in path.split("/", 1)[0]:
                out.append("./")
            out.append(path)
        if self.force_query or self.raw_query:
            out.append("?" + _text(self.raw_query))
        if self.fragment:
            out.append("#" + self.escaped_fragment())
        self._string = "".join(out)
        return self._string


def _get_scheme(raw: bytes) -> tuple[bytes, bytes]:
    for i, c in enumerate(raw):
        if 0x61 <= c <= 0x7A or 0x41 <= c <= 0x5A:
            continue
        if 0x30 <= c <= 0x39 or c in b"+-.":
            if i == 0:
                return b"", raw
            continue
        if c == 0x3A:  # ':'
            if i == 0:
                raise URLError("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return b"", raw
    return b"", raw


def _parse_host(host: bytes) -> bytes:
    if host.startswith(b"["):
        i = host.rfind(b"]")
        if i < 0:
            raise URLError("missing ']' in host")
        colon_port = host[i + 1 :]
        if not _valid_optional_port(colon_port):
            raise URLError(f"invalid port {quote(_text(colon_port))} after host")
        zone = host[:i].find(b"%25")
        if zone >= 0:
            return unescape(host[:zone], HOST) + unescape(host[zone:i], ZONE) + unescape(host[i:], HOST)
    else:
        i = host.rfind(b":")
        if i != -1 and not _valid_optional_port(host[i:]):
            raise URLError(f"invalid port {quote(_text(host[i:]))} after host")
    return unescape(host, HOST)


def _valid_userinfo(s: bytes) -> bool:
    return all(_alnum(c) or c in b"-._:~!$&'()*+,;=%@" for c in s)


def _parse_authority(url: URL, authority: bytes) -> None:
    at = authority.rfind(b"@")
    url.host = _parse_host(authority[at + 1 :] if at >= 0 else authority)
    if at < 0:
        return
    userinfo = authority[:at]
    if not _valid_userinfo(userinfo):
        raise URLError("net/url: invalid userinfo")
    if b":" not in userinfo:
        url.user = (unescape(userinfo, USER_PASSWORD), None)
    else:
        name, _, password = userinfo.partition(b":")
        url.user = (unescape(name, USER_PASSWORD), unescape(password, USER_PASSWORD))


def _parse(raw: bytes, via_request: bool) -> URL:
    if any(c < 0x20 or c == 0x7F for c in raw):
        raise URLError("net/url: invalid control character in URL")
    if not raw and via_request:
        raise URLError("empty url")
    url = URL()
    if raw == b"*":
        url.path = b"*"
        return url
    scheme, rest = _get_scheme(raw)
    url.scheme = scheme.lower()
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        url.force_query = True
        rest = rest[:-1]
    else:
        rest, _, url.raw_query = rest.partition(b"?")
    if not rest.startswith(b"/"):
        if url.scheme:
            url.opaque = rest
            return url
        if via_request:
            raise URLError("invalid URI for request")
        if b":" in rest.split(b"/", 1)[0]:
            raise URLError("first path segment in URL cannot contain colon")
    if (url.scheme or (not via_request and not rest.startswith(b"///"))) and rest.startswith(b"//"):
        authority, rest = rest[2:], b""
        slash = authority.find(b"/")
        if slash >= 0:
            authority, rest = authority[:slash], authority[slash:]
        _parse_authority(url, authority)
    elif url.scheme and rest.startswith(b"/"):
        url.omit_host = True
    url.path = unescape(rest, PATH)
    url.raw_path = b"" if escape(url.path, PATH) == rest else rest
    return url


def _wrap(text: str, ex: URLError) -> URLError:
    return URLError(f"parse {quote(text)}: {ex}")


def parse_request_uri(text: str) -> URL:
    """``url.ParseRequestURI``: an absolute URI or an absolute path; no fragment handling."""
    try:
        return _parse(text.encode("utf-8"), True)
    except URLError as ex:
        raise _wrap(text, ex) from None


def parse(text: str) -> URL:
    """``url.Parse``: a URL reference with an optional ``#fragment``."""
    raw = text.encode("utf-8")
    body, hash_mark, frag = raw.partition(b"#")
    try:
        url = _parse(body, False)
    except URLError as ex:
        raise _wrap(_text(body), ex) from None
    if not hash_mark or not frag:
        return url
    try:
        url.fragment = unescape(frag, FRAGMENT)
    except URLError as ex:
        raise _wrap(text, ex) from None
    url.raw_fragment = b"" if escape(url.fragment, FRAGMENT) == frag else frag
    return url
