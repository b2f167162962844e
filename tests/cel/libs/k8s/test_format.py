"""Kubernetes' format library (k8s.io/apiserver/pkg/cel/library/format.go): every row of
format_test.go (including the lookup/comparison rows it generates for all formats) and the
apimachinery validation messages for length, dots, prefixes and qualified names."""

from __future__ import annotations

from typing import Any

from tests.cel.helpers import Err, cases, check_case

NAMES = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
]

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

FORMAT_TEST_GO = [
    ("format.dns1123Label().validate('my-label-name')", None),
    ("format.dns1123Subdomain().validate('apiextensions.k8s.io')", None),
    ("format.qualifiedName().validate('apiextensions.k8s.io/v1beta1')", None),
    ("format.dns1123LabelPrefix().validate('my-label-prefix-')", None),
    ("format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-')", None),
    ("format.dns1035LabelPrefix().validate('my-label-prefix-')", None),
    ("format.uri().validate('http://example.com')", None),
    ("format.uuid().validate('123e4567-e89b-12d3-a456-426614174000')", None),
    ("format.byte().validate('aGVsbG8=')", None),
    ("format.date().validate('2021-01-01')", None),
    ("format.datetime().validate('2021-01-01T00:00:00Z')", None),
    ("format.dns1123Label().validate('contains a space')", [LABEL_MSG]),
    ("format.dns1123Subdomain().validate('contains a space')", [SUBDOMAIN_MSG]),
    ("format.dns1035Label().validate('contains a space')", [DNS1035_MSG]),
    ("format.qualifiedName().validate('contains a space')", [NAME_PART_MSG]),
    ("format.dns1123LabelPrefix().validate('contains a space-')", [LABEL_MSG]),
    ("format.dns1123SubdomainPrefix().validate('contains a space-')", [SUBDOMAIN_MSG]),
    ("format.dns1035LabelPrefix().validate('contains a space-')", [DNS1035_MSG]),
    ("format.dns1123Label().validate('my-label-name')", None),
    ("format.dns1123Subdomain().validate('example.com')", None),
    ("format.dns1035Label().validate('my-label-name')", None),
    ("format.qualifiedName().validate('my.name')", None),
    ("format.byte().validate('aGVsbG8=')", None),
    ("format.byte().validate('aGVsbG8')", ["invalid base64"]),
    ("format.date().validate('2020-01-01')", None),
    ("format.date().validate('2020-01-32')", ["invalid date"]),
    ("format.datetime().validate('2020-01-01T00:00:00Z')", None),
    ("format.datetime().validate('2020-01-32T00:00:00Z')", ["invalid datetime"]),
    ("format.named('unknown').hasValue()", False),
    ("format.labelValue().validate('my-cool-label-Value')", None),
    ("format.labelValue().validate('my-cool-label-Value!!\\n\\n!!!')", [LABEL_VALUE_MSG]),
]

# format_test.go also checks every name: lookup, equality with the constant, inequality with the others.
LOOKUPS = [(f"format.named('{name}').hasValue()", True) for name in NAMES]
LOOKUPS += [(f"format.named('{name}').value() == format.{name}()", True) for name in NAMES]
LOOKUPS += [
    (f"format.{left}() == format.{right}()", False)
    for i, left in enumerate(NAMES)
    for right in (NAMES[(i + 1) % len(NAMES)], NAMES[(i + 5) % len(NAMES)])
]

VALIDATORS = [
    ("format.dns1123Label().validate('my.name')", ["must not contain dots"]),
    ("format.dns1123Label().validate('" + "a" * 64 + "')", ["must be no more than 63 characters"]),
    ("format.dns1123Label().validate('" + "A" * 64 + "')", ["must be no more than 63 characters", LABEL_MSG]),
    ("format.dns1123Label().validate('')", [LABEL_MSG]),
    ("format.dns1123Label().validate('-abc')", [LABEL_MSG]),
    ("format.dns1123Subdomain().validate('" + "a." * 127 + "a')", ["must be no more than 253 characters"]),
    ("format.dns1123Subdomain().validate('Example.com')", [SUBDOMAIN_MSG]),
    ("format.dns1035Label().validate('1abc')", [DNS1035_MSG]),
    ("format.qualifiedName().validate('example.com/MyName')", None),
    ("format.qualifiedName().validate('/name')", ["prefix part must be non-empty"]),
    ("format.qualifiedName().validate('example.com/')", ["name part must be non-empty", NAME_PART_MSG]),
    ("format.qualifiedName().validate('Example.com/name')", ["prefix part " + SUBDOMAIN_MSG]),
    ("format.qualifiedName().validate('" + "a" * 64 + "')", ["name part must be no more than 63 characters"]),
    (
        "format.qualifiedName().validate('a/b/c')",
        [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')"
        ],
    ),
    ("format.labelValue().validate('')", None),
    ("format.labelValue().validate('" + "a" * 64 + "')", ["must be no more than 63 characters"]),
    # maskTrailingDash replaces the last *two* characters by 'a': 'a.-' becomes 'a', 'ab-' becomes 'aa'.
    ("format.dns1123SubdomainPrefix().validate('a.-')", None),
    ("format.dns1123LabelPrefix().validate('ab-')", None),
    ("format.dns1035LabelPrefix().validate('1-')", None),
    ("format.dns1123LabelPrefix().validate('my_name-')", [LABEL_MSG]),
    ("format.dns1123LabelPrefix().validate('-')", Err("evaluation", "slice bounds out of range")),
    ("format.uri().validate('/path')", None),
    ("format.uri().validate('example.com')", ['parse "example.com": invalid URI for request']),
    ("format.uri().validate('https://a:b:c/')", ['parse "https://a:b:c/": invalid port ":c" after host']),
    ("format.uuid().validate('123E4567E89B12D3A456426614174000')", None),
    ("format.uuid().validate('123e4567-e89b-12d3-a456-42661417400')", ["does not match the UUID format"]),
    ("format.byte().validate('')", ["invalid base64"]),
    ("format.byte().validate('aGVsbG8h')", None),
    ("format.byte().validate('aGVs bG8=')", ["invalid base64"]),
    ("format.date().validate('2024-02-29')", None),
    ("format.date().validate('2023-02-29')", ["invalid date"]),
    ("format.date().validate('2000-02-29')", None),
    ("format.date().validate('1900-02-29')", ["invalid date"]),
    ("format.date().validate('2020-1-01')", ["invalid date"]),
    ("format.date().validate('2020-13-01')", ["invalid date"]),
    ("format.date().validate('2020-01-01T00:00:00Z')", ["invalid date"]),
    ("format.datetime().validate('2020-01-01t10:20:30.123+02:00')", None),
    ("format.datetime().validate('2020-01-01T24:00:00Z')", ["invalid datetime"]),
    ("format.datetime().validate('2020-01-01T23:59:60Z')", ["invalid datetime"]),
    ("format.datetime().validate('2020-01-01T00:00:00')", ["invalid datetime"]),
    ("format.datetime().validate('2020-01-01')", ["invalid datetime"]),
    ("format.named('dns1123Label').value().validate('ok')", None),
    ("format.named('DNS1123Label').hasValue()", False),
    ("format.dns1123Label().validate('Bad').value()[0].startsWith('a lowercase RFC 1123 label')", True),
    ("format.dns1123Label().validate('ok').orValue(['fine'])", ["fine"]),
    ("type(format.uuid())", "kubernetes.NamedFormat"),
    ("format.dns1123Label().validate(1)", Err("compile", "no matching overload")),
    ("format.dns1123Label().validate(dyn(1))", Err("evaluation", "no such overload")),
    ("format.named(1)", Err("compile", "no matching overload")),
    ("format.nope()", Err("compile", "undeclared reference")),
    ("'x'.validate('y')", Err("compile", "no matching overload")),
]

KUBERNETES_PROFILE = [
    ("format.dns1123Label().validate('my-label-name').hasValue()", False),
    ("format.named('uri').value() == format.uri()", True),
    ("format.byte().validate('aGVsbG8')", ["invalid base64"]),
]


@cases(FORMAT_TEST_GO + LOOKUPS + VALIDATORS)
def test_format(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(KUBERNETES_PROFILE)
def test_format_kubernetes_profile(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes")


@cases([("format.dns1123Label().validate(object.metadata.name).orValue([]).size()", 1)])
def test_format_on_object_data(expression: str, expected: Any) -> None:
    check_case(expression, expected, object={"metadata": {"name": "Not_Valid"}})
