"""The one port of Go's strconv.Quote, shared by format's %q and the Kubernetes libraries' error
messages (they were two ports that disagreed on invalid code points): cel-go formats the strings
inside a list with it (ext/formatting.go). Rows are Go's own outputs
(strconv/quote_test.go quotetests)."""

from __future__ import annotations

import pytest

from celmut.cel.libs.golang import quote
from tests.cel.helpers import check_case


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("\a\b\f\r\n\t\v", r'"\a\b\f\r\n\t\v"'),
        ("\\", r'"\\"'),
        ("abc\xffdef", r'"abc\u00ffdef"'.replace(r"\u00ff", "\xff")),  # ÿ is printable: kept
        ("\u263a", '"\u263a"'),
        ("\U0010ffff", r'"\U0010ffff"'),
        ("\x04", r'"\x04"'),
        ("\u00a0", r'"\u00a0"'),  # no-break space is not printable in Go either
        ("\ud800", r'"\ufffd"'),  # not a rune: the replacement character, as Go decodes it
    ],
)
def test_quote_is_gos_strconv_quote(text: str, quoted: str) -> None:
    assert quote(text) == quoted


def test_format_quotes_strings_in_lists_with_the_same_port() -> None:
    check_case(r"""'%s'.format([['a\u00a0b\x04']])""", '["a\\u00a0b\\x04"]')
