"""Kubernetes' URL library (k8s.io/apiserver/pkg/cel/library/urls.go): every example of its doc
comment, plus Go ``net/url`` behaviour that policies can observe (errors, escaping, queries)."""

from __future__ import annotations

from typing import Any

from tests.cel.helpers import Err, cases, check_case

PREFIX = "URL parse error during conversion from string: "

PARSE = [
    (
        "url('https://user:pass@example.com:80/path?query=val#fragment')",
        "https://user:pass@example.com:80/path?query=val#fragment",
    ),
    ("url('/absolute-path')", "/absolute-path"),
    ("url('https://a:b:c/')", Err("evaluation", PREFIX + 'parse "https://a:b:c/": invalid port ":c" after host')),
    ("url('../relative-path')", Err("evaluation", PREFIX + 'parse "../relative-path": invalid URI for request')),
    ("url('')", Err("evaluation", 'parse "": empty url')),
    ("url('example.com')", Err("evaluation", "invalid URI for request")),
    ("url('https://[::1')", Err("evaluation", "missing ']' in host")),
    ("url('https://[::1]x/')", Err("evaluation", 'invalid port "x" after host')),
    ("url('https://ex ample.com/')", Err("evaluation", 'invalid character " " in host name')),
    ("url('https://example.com/%zz')", Err("evaluation", 'invalid URL escape "%zz"')),
    ("url('https://example.com/p#a%zz')", Err("evaluation", 'invalid URL escape "%zz"')),
    ("url('http://a b@c/')", Err("evaluation", "net/url: invalid userinfo")),
    ("url('https://example.com/\\x01')", Err("evaluation", "net/url: invalid control character in URL")),
    ("url(1)", Err("compile", "no matching overload")),
    ("url(dyn(1))", Err("evaluation", "no such overload")),
    # Kubernetes declares no string(URL) conversion.
    ("string(url('/a'))", Err("compile", "no matching overload")),
    ("type(url('/a'))", "kubernetes.URL"),
    # Equality compares Go's String() forms (the scheme is lower-cased by the parser).
    ("url('HTTPS://example.com/') == url('https://example.com/')", True),
    ("url('https://example.com/a') == url('https://example.com/b')", False),
    ("url('https://example.com/ä')", "https://example.com/%C3%A4"),
    ("url('mailto:user@example.com')", "mailto:user@example.com"),
    ("url('*')", "*"),
]

IS_URL = [
    ("isURL('https://user:pass@example.com:80/path?query=val#fragment')", True),
    ("isURL('/absolute-path')", True),
    ("isURL('https://a:b:c/')", False),
    ("isURL('../relative-path')", False),
    ("isURL('')", False),
    ("isURL('*')", True),
    ("isURL('https://example.com/%zz')", False),
    ("isURL(dyn(1))", Err("evaluation", "no such overload")),
]

ACCESSORS = [
    ("url('/path').getScheme()", ""),
    ("url('https://example.com/').getScheme()", "https"),
    ("url('HTTPS://example.com/').getScheme()", "https"),
    ("url('https://example.com:80/').getHost()", "example.com:80"),
    ("url('https://example.com/').getHost()", "example.com"),
    ("url('https://[::1]:80/').getHost()", "[::1]:80"),
    ("url('https://[::1]/').getHost()", "[::1]"),
    ("url('/path').getHost()", ""),
    ("url('mailto:user@example.com').getHost()", ""),
    ("url('http://a@b@c/').getHost()", "c"),
    ("url('https://example.com:80/').getHostname()", "example.com"),
    ("url('https://127.0.0.1:80/').getHostname()", "127.0.0.1"),
    ("url('https://[::1]:80/').getHostname()", "::1"),
    ("url('/path').getHostname()", ""),
    ("url('http://[fe80::1%25en0]:8080/').getHostname()", "fe80::1%en0"),
    ("url('https://example.com:80/').getPort()", "80"),
    ("url('https://example.com/').getPort()", ""),
    ("url('/path').getPort()", ""),
    ("url('https://example.com:/').getPort()", ""),
    ("url('https://example.com/path').getEscapedPath()", "/path"),
    ("url('https://example.com/path with spaces/').getEscapedPath()", "/path%20with%20spaces/"),
    ("url('https://example.com').getEscapedPath()", ""),
    ("url('https://example.com/a%2Fb').getEscapedPath()", "/a%2Fb"),
    ("url('https://example.com/ä').getEscapedPath()", "/%C3%A4"),
    ("url('https://example.com/#frag').getEscapedPath()", "/"),
    ("url('*').getEscapedPath()", "*"),
    ("url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()", {"k1": ["a"], "k2": ["b", "c"]}),
    (
        "url('https://example.com/path?key with spaces=value with spaces').getQuery()",
        {"key with spaces": ["value with spaces"]},
    ),
    ("url('https://example.com/path?').getQuery()", {}),
    ("url('https://example.com/path').getQuery()", {}),
    ("url('https://example.com/?a+b=c+d&x=%41').getQuery()", {"a b": ["c d"], "x": ["A"]}),
    # Go's ParseQuery drops pairs with a ';' or a bad escape and keeps the rest.
    ("url('https://example.com/?a=1;b=2&c=3').getQuery()", {"c": ["3"]}),
    ("url('https://example.com/?a=%zz&b=1').getQuery()", {"b": ["1"]}),
    ("url('https://example.com/?k=&k').getQuery()", {"k": ["", ""]}),
    ("url('https://example.com/?k=1').getQuery()['k'][0]", "1"),
    ("dyn('https://example.com').getHost()", Err("evaluation", "no such overload")),
    ("'https://example.com'.getHost()", Err("compile", "no matching overload")),
]

KUBERNETES_PROFILE = [
    ("url('https://example.com:80/').getHostname()", "example.com"),
    ("isURL('/absolute-path')", True),
    # a runtime error in Kubernetes: no validator or folding covers it (cel/program_checks.py)
    ("url('../relative-path')", Err("evaluation", "invalid URI for request")),
]


@cases(PARSE + IS_URL + ACCESSORS)
def test_urls(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(KUBERNETES_PROFILE)
def test_urls_kubernetes_profile(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes")
