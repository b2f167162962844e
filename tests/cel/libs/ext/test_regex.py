"""cel-go ext Regex: rows ported from cel-go's ext/regex_test.go (TestRegex, TestRegexStaticErrors,
TestRegexRuntimeErrors) and the library's doc examples, plus rows for Go's successive-match rules."""

from __future__ import annotations

from typing import Any

from tests.cel.helpers import Err, cases, check_case

REPLACE = [
    ("regex.replace('abc', '^', 'start_') == 'start_abc'", True),
    ("regex.replace('abc', '$', '_end') == 'abc_end'", True),
    (r"regex.replace('a-b', r'\b', '|') == '|a|-|b|'", True),
    (r"regex.replace('foo bar', '(fo)o (ba)r', r'\2 \1') == 'ba fo'", True),
    (r"regex.replace('foo bar', 'foo', r'\\') == '\\ bar'", True),
    ("regex.replace('banana', 'ana', 'x') == 'bxna'", True),
    (r"regex.replace('abc', 'b(.)', r'x\1') == 'axc'", True),
    ("regex.replace('hello world hello', 'hello', 'hi') == 'hi world hi'", True),
    (r"regex.replace('ac', 'a(b)?c', r'[\1]') == '[]'", True),
    ("regex.replace('apple pie', 'p', 'X') == 'aXXle Xie'", True),
    (r"regex.replace('remove all spaces', r'\s', '') == 'removeallspaces'", True),
    (r"regex.replace('digit:99919291992', r'\d+', '3') == 'digit:3'", True),
    (r"regex.replace('foo bar baz', r'\w+', r'(\0)') == '(foo) (bar) (baz)'", True),
    ("regex.replace('', 'a', 'b') == ''", True),
    (
        r"regex.replace('User: Alice, Age: 30', r'User: (?P<name>\w+), Age: (?P<age>\d+)',"
        r" '${name} is ${age} years old') == '${name} is ${age} years old'",
        True,
    ),
    (
        r"regex.replace('User: Alice, Age: 30', r'User: (?P<name>\w+), Age: (?P<age>\d+)', r'\1 is \2 years old')"
        " == 'Alice is 30 years old'",
        True,
    ),
    ("regex.replace('hello ☃', '☃', '❄') == 'hello ❄'", True),
    (r"regex.replace('id=123', r'id=(?P<value>\d+)', r'value: \1') == 'value: 123'", True),
    ("regex.replace('banana', 'a', 'x') == 'bxnxnx'", True),
    (
        r"regex.replace(regex.replace('%(foo) %(bar) %2', r'%\((\w+)\)', r'${\1}'),r'%(\d+)', r'$\1')"
        " == '${foo} ${bar} $2'",
        True,
    ),
    ("regex.replace('banana', 'a', 'x', 0) == 'banana'", True),
    ("regex.replace('banana', 'a', 'x', 1) == 'bxnana'", True),
    ("regex.replace('banana', 'a', 'x', 2) == 'bxnxna'", True),
    ("regex.replace('banana', 'a', 'x', 100) == 'bxnxnx'", True),
    ("regex.replace('banana', 'a', 'x', -1) == 'bxnxnx'", True),
    ("regex.replace('banana', 'a', 'x', -100) == 'bxnxnx'", True),
    ("regex.replace('banana', 'a', 'x', -12) == 'bxnxnx'", True),
    (
        r"regex.replace('cat-dog dog-cat cat-dog dog-cat', '(cat)-(dog)', r'\2-\1', 1)"
        " == 'dog-cat dog-cat cat-dog dog-cat'",
        True,
    ),
    (
        r"regex.replace('cat-dog dog-cat cat-dog dog-cat', '(cat)-(dog)', r'\2-\1', 2)"
        " == 'dog-cat dog-cat dog-cat dog-cat'",
        True,
    ),
    (r"regex.replace('a.b.c', r'\.', '-', 1) == 'a-b.c'", True),
    (r"regex.replace('a.b.c', r'\.', '-', -1) == 'a-b-c'", True),
    (r"regex.replace('abc def', r'(abc)', r'\\1') == r'\1 def'", True),
    (r"regex.replace('abc def', r'(abc)', r'\\2') == r'\2 def'", True),
    (r"regex.replace('abc def', r'(abc)', r'\\{word}') == '\\{word} def'", True),
    (r"regex.replace('abc def', r'(abc)', r'\\word') == '\\word def'", True),
    ("regex.replace('aaaaaa', 'a', '-what-') == '-what--what--what--what--what--what-'", True),
    (r"regex.replace('foo bar', r'(foo bar)', r'\1\1\1\1\1' ) == 'foo barfoo barfoo barfoo barfoo bar'", True),
    (r"regex.replace('foo bar', r'(foo bar)', '') == ''", True),
    # Go's successive matches: an empty match right after a match is skipped (Python's re would add one).
    ("regex.replace('baaac', 'a*', '-')", "-b-c-"),
    ("regex.replace('abc', '', '-')", "-a-b-c-"),
    ("regex.replace('a☃b', '', '.')", ".a.☃.b."),
    ("regex.replace('aaa', 'a', 'b', 2147483648)", Err("evaluation", "integer overflow")),
    ("regex.replace('test', 'x', r'\\')", "test"),  # the replacement is only checked against a match
    ("regex.replace('test', '(', 'x', 0)", "test"),  # a zero count returns before compiling
    # Errors.
    (
        r"regex.replace('id=123', r'id=(?P<value>\d+)', r'value: \values')",
        Err("evaluation", r"invalid replacement string: 'value: \values' \ must be followed by a digit"),
    ),
    (
        r"regex.replace('test', '(.)', r'\2')",
        Err("evaluation", "replacement string references group 2 but regex has only 1 group(s)"),
    ),
    (
        r"regex.replace('id=123', r'id=(?P<value>\d+)', r'value: \')",
        Err("evaluation", r"invalid replacement string: 'value: \' \ not allowed at end"),
    ),
    ("regex.replace('foo bar', '(', '$2 $1')", Err("evaluation", "invalid regular expression")),
    (r"regex.replace('test', '(.)', r'\٣')", Err("evaluation", "must be followed by a digit")),  # ASCII digits only
    ("regex.replace('abc', '^', 1)", Err("compile", "found no matching overload for 'regex.replace'")),
    ("regex.replace('abc', '^', '1','')", Err("compile", "found no matching overload for 'regex.replace'")),
    ("regex.replace(dyn(1), '^', '1')", Err("evaluation", "no such overload")),
]

EXTRACT = [
    ("regex.extract('hello world', 'hello(.*)') == optional.of(' world')", True),
    (r"regex.extract('item-A, item-B', r'item-(\w+)') == optional.of('A')", True),
    (r"regex.extract('The color is red', r'The color is (\w+)') == optional.of('red')", True),
    (r"regex.extract('The color is red', r'The color is \w+') == optional.of('The color is red')", True),
    ("regex.extract('brand', 'brand') == optional.of('brand')", True),
    ("regex.extract('hello world', 'goodbye (.*)') == optional.none()", True),
    ("regex.extract('HELLO', 'hello') == optional.none()", True),
    (r"regex.extract('', r'\w+') == optional.none()", True),
    ("regex.extract('4122345432', '22').or(optional.of('777')) == optional.of('22')", True),
    ("regex.extract('4122345432', '22').orValue('777') == '22'", True),
    ("regex.extract('ac', 'a(b)?c').hasValue()", False),  # the group took no part in the match
    ("regex.extract('abc', 'x*').value()", ""),  # an empty whole match is still a match
    ("regex.extract('a☃b', '☃(.)').value()", "b"),
    ("regex.extract('foo bar', '(')", Err("evaluation", "invalid regular expression")),
    (
        r"regex.extract('phone: 415-5551212', r'phone: ((\d{3})-)?')",
        Err("evaluation", r'regular expression has more than one capturing group: "phone: ((\\d{3})-)?"'),
    ),
    (
        "regex.extract('testuser@testdomain', '(.*)@([^.]*)')",
        Err("evaluation", "regular expression has more than one capturing group"),
    ),
    ("regex.extract('foo bar', 1)", Err("compile", "found no matching overload for 'regex.extract'")),
    ("regex.extract('foo bar', 1, 'bar')", Err("compile", "found no matching overload for 'regex.extract'")),
]

EXTRACT_ALL = [
    ("regex.extractAll('id:123, id:456', 'assa') == []", True),
    (r"regex.extractAll('id:123, id:456', r'id:\d+') == ['id:123', 'id:456']", True),
    (r"regex.extractAll('Files: f_1.txt, f_2.csv', r'f_(\d+)') == ['1', '2']", True),
    ("regex.extractAll('testuser@', '(?P<username>.*)@') == ['testuser']", True),
    (
        "regex.extractAll('testuser@gmail.com, a@y.com, 2312321wsamkldjq2w2@sdad.com', '(?P<username>.*)@')"
        " == ['testuser@gmail.com, a@y.com, 2312321wsamkldjq2w2']",
        True,
    ),
    (
        r"regex.extractAll('testuser@gmail.com, a@y.com, 2312321wsamkldjq2w2@sdad.com', r'(?P<username>\w+)@')"
        " == ['testuser', 'a', '2312321wsamkldjq2w2']",
        True,
    ),
    ("regex.extractAll('banananana', '(ana)') == ['ana', 'ana']", True),
    (r"regex.extractAll('item:a1, topic:b2', r'(?:item:|topic:)([a-z]\d)') == ['a1', 'b2']", True),
    ("regex.extractAll('val=a, val=, val=c', 'val=([^,]*)') == ['a', 'c']", True),
    ("regex.extractAll('key=, key=, key=', 'key=([^,]*)') == []", True),
    (r"regex.extractAll('a b c', r'(\S*)\s*') == ['a', 'b', 'c']", True),
    ("regex.extractAll('baaac', 'a*')", ["", "aaa", ""]),  # Go's successive-match rule, empty matches kept
    ("regex.extractAll('a☃☃b', '☃')", ["☃", "☃"]),
    (
        "regex.extractAll('foo bar', '[a-z')",
        Err("evaluation", "invalid regular expression"),
    ),
    (
        r"regex.extractAll('Name: John Doe, Age:321', r'Name: (?P<Name>.*), Age:(?P<Age>\d+)')",
        Err(
            "evaluation",
            r'regular expression has more than one capturing group: "Name: (?P<Name>.*), Age:(?P<Age>\\d+)"',
        ),
    ),
    (
        "regex.extractAll('testuser@testdomain', '(.*)@([^.]*)')",
        Err("evaluation", 'regular expression has more than one capturing group: "(.*)@([^.]*)"'),
    ),
    (
        "regex.extractAll('The user testuser belongs to testdomain',"
        " 'The (user|domain) (?P<Username>.*) belongs (to) (?P<Domain>.*)')",
        Err("evaluation", "regular expression has more than one capturing group"),
    ),
    ("regex.extractAll()", Err("compile", "found no matching overload for 'regex.extractAll' applied to '()'")),
]

# Kubernetes has its own regex library (find/findAll), not cel-go's regex.* functions.
KUBERNETES = [
    ("regex.replace('a', 'a', 'b')", Err("compile", "undeclared reference to 'regex.replace'")),
    ("regex.extract('a', 'a')", Err("compile", "undeclared reference to 'regex.extract'")),
    ("regex.extractAll('a', 'a')", Err("compile", "undeclared reference to 'regex.extractAll'")),
]


@cases(REPLACE + EXTRACT + EXTRACT_ALL)
def test_regex(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(KUBERNETES)
def test_regex_in_the_kubernetes_profile(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes")


def test_regex_work_is_charged() -> None:
    text = "a" * 5_000_000
    check_case("regex.extractAll(variables.s, 'a(a)').size()", Err("cost", "cost limit"), variables={"s": text})
