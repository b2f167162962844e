"""Kubernetes' named-format library (``format``, k8s.io/apiserver/pkg/cel/library/format.go).

Each format validates a string and returns ``optional.none()`` when it is valid, else the list of
messages of the apimachinery validator Kubernetes uses (wording as in released Kubernetes, e.g.
``IsDNS1123Label``). The ``*Prefix`` formats validate a ``generateName`` prefix: a trailing ``-``
is masked as Kubernetes' ``maskTrailingDash`` does (it replaces the last *two* characters by ``a``).

format.named(<string>) -> optional_type(kubernetes.NamedFormat)
    format.named('dns1123Label').hasValue() // true;  format.named('unknown').hasValue() // false
format.dns1123Label() format.dns1123Subdomain() format.dns1035Label() format.qualifiedName()
format.dns1123LabelPrefix() format.dns1123SubdomainPrefix() format.dns1035LabelPrefix()
format.labelValue() format.uri() format.uuid() format.byte() format.date() format.datetime()
    -> kubernetes.NamedFormat;  format.named('uri').value() == format.uri() // true
<NamedFormat>.validate(<string>) -> optional_type(list(string))
    format.dns1123Label().validate('my-label-name') // optional.none()
    format.byte().validate('aGVsbG8') // optional.of(['invalid base64'])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celmut.cel import regex
from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.libs.k8s import neturl
from celmut.cel.libs.k8s.support import regex_cost, typed
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("format")
fn, method = LIBRARY.function, LIBRARY.method

FTYPE = "kubernetes.NamedFormat"


@LIBRARY.opaque(FTYPE)
class NamedFormat:
    """One of Kubernetes' constant formats; formats are equal when their names are."""

    __slots__ = ("max_regex_size", "name", "validator")

    def __init__(self, name: str, validator: Callable[[str], list[str]], max_regex_size: int) -> None:
        self.name = name
        self.validator = validator
        self.max_regex_size = max_regex_size

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NamedFormat):
            return NotImplemented
        return self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"format({self.name})"

    def to_plain(self) -> str:
        return self.name


# --- apimachinery validators (k8s.io/apimachinery/pkg/util/validation) ----------------------------

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)


def _matcher(pattern: str) -> Callable[[str], bool]:
    return lambda text: regex.matches(text, pattern)


def _full(pattern: str) -> Callable[[str], bool]:
    return _matcher("^" + pattern + "$")


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def regex_error(message: str, pattern: str, *examples: str) -> str:
    if not examples:
        return f"{message} (regex used for validation is '{pattern}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


_is_label, _is_subdomain, _is_1035 = _full(DNS1123_LABEL_FMT), _full(DNS1123_SUBDOMAIN_FMT), _full(DNS1035_LABEL_FMT)
_is_qualified, _is_label_value = _full(QUALIFIED_NAME_FMT), _full(LABEL_VALUE_FMT)


def is_dns1123_label(value: str) -> list[str]:
    errors = [max_len_error(63)] if len(value.encode()) > 63 else []
    if not _is_label(value):
        if _is_subdomain(value):
            errors.append("must not contain dots")
        else:
            errors.append(regex_error(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def is_dns1123_subdomain(value: str) -> list[str]:
    errors = [max_len_error(253)] if len(value.encode()) > 253 else []
    if not _is_subdomain(value):
        errors.append(regex_error(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def is_dns1035_label(value: str) -> list[str]:
    errors = [max_len_error(63)] if len(value.encode()) > 63 else []
    if not _is_1035(value):
        errors.append(regex_error(DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errors


def is_qualified_name(value: str) -> list[str]:
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        example = regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        return [f"a qualified name {example} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            errors.append("prefix part must be non-empty")
        else:
            errors += ["prefix part " + message for message in is_dns1123_subdomain(parts[0])]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errors.append("name part " + max_len_error(63))
    if not _is_qualified(name):
        errors.append(
            "name part " + regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def is_label_value(value: str) -> list[str]:
    errors = [max_len_error(63)] if len(value.encode()) > 63 else []
    if not _is_label_value(value):
        errors.append(regex_error(LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def mask_trailing_dash(name: str) -> str:
    """apimachinery's ``maskTrailingDash``: ``name[:len(name)-2] + "a"`` (a Go panic for ``"-"``)."""
    if name.endswith("-"):
        if len(name.encode()) < 2:
            raise CelEvaluationError("internal error: runtime error: slice bounds out of range [:-1]")
        return name.encode()[:-2].decode("utf-8", "replace") + "a"
    return name


def _prefixed(validator: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    return lambda value: validator(mask_trailing_dash(value))


# --- OpenAPI formats (k8s.io/kube-openapi/pkg/validation/strfmt and net/url) ----------------------

UUID_PATTERN = "(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
BASE64_PATTERN = "^(?:[A-Za-z0-9+\\/]{4})*(?:[A-Za-z0-9+\\/]{2}==|[A-Za-z0-9+\\/]{3}=|[A-Za-z0-9+\\/]{4})$"
DATE_TIME_PATTERN = "^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"
_URL_REGEX_SIZE = 1100  # about len(govalidator.URL), which Kubernetes uses to estimate uri's cost
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_date(text: str) -> bool:
    """Go's ``time.Parse("2006-01-02", text)`` succeeds."""
    if not regex.matches(text, "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"):
        return False
    year, month, day = int(text[:4]), int(text[5:7]), int(text[8:])
    if not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= day <= _DAYS[month - 1] + (month == 2 and leap)


def is_date_time(text: str) -> bool:
    """strfmt's ``IsDateTime``."""
    if len(text.encode()) < 4:
        return False
    parts = text.lower().split("t")
    if len(parts) < 2 or not is_date(parts[0]):
        return False
    match = regex.compile_pattern(DATE_TIME_PATTERN).search(parts[1])
    return match is not None and match.group(1) <= "23" and match.group(2) <= "59" and match.group(3) <= "59"


def _check(predicate: Callable[[str], bool], message: str) -> Callable[[str], list[str]]:
    return lambda value: [] if predicate(value) else [message]


def _uri(value: str) -> list[str]:
    try:
        neturl.parse_request_uri(value)
    except neturl.URLError as ex:
        return [str(ex)]
    return []


FORMATS: dict[str, NamedFormat] = {
    "dns1123Label": NamedFormat("DNS1123Label", is_dns1123_label, 30),
    "dns1123Subdomain": NamedFormat("DNS1123Subdomain", is_dns1123_subdomain, 60),
    "dns1035Label": NamedFormat("DNS1035Label", is_dns1035_label, 30),
    "qualifiedName": NamedFormat("QualifiedName", is_qualified_name, 60),
    "dns1123LabelPrefix": NamedFormat("DNS1123LabelPrefix", _prefixed(is_dns1123_label), 30),
    "dns1123SubdomainPrefix": NamedFormat("DNS1123SubdomainPrefix", _prefixed(is_dns1123_subdomain), 60),
    "dns1035LabelPrefix": NamedFormat("DNS1035LabelPrefix", _prefixed(is_dns1035_label), 30),
    "labelValue": NamedFormat("LabelValue", is_label_value, 40),
    "uri": NamedFormat("URI", _uri, _URL_REGEX_SIZE),
    "uuid": NamedFormat("uuid", _check(_matcher(UUID_PATTERN), "does not match the UUID format"), len(UUID_PATTERN)),
    "byte": NamedFormat("byte", _check(_matcher(BASE64_PATTERN), "invalid base64"), len(BASE64_PATTERN)),
    "date": NamedFormat("date", _check(is_date, "invalid date"), len(DATE_TIME_PATTERN)),
    "datetime": NamedFormat("datetime", _check(is_date_time, "invalid datetime"), len(DATE_TIME_PATTERN)),
}


@fn("format.named", ("string",), f"optional_type({FTYPE})")
@typed("format.named", str)
def named(name: str) -> v.OptionalValue:
    found = FORMATS.get(name)
    return v.NONE if found is None else v.OptionalValue(found)


def _constant(value: NamedFormat) -> Callable[[], NamedFormat]:
    return lambda: value


for _key, _format in FORMATS.items():
    fn(f"format.{_key}", (), FTYPE)(_constant(_format))


def _validate_cost(value: Any, text: Any) -> int:
    return regex_cost(text, value.max_regex_size) if isinstance(value, NamedFormat) else 0


@method("validate", FTYPE, ("string",), "optional_type(list(string))", cost=_validate_cost)
def validate(value: NamedFormat, text: str) -> v.OptionalValue:
    if not isinstance(value, NamedFormat) or not isinstance(text, str):
        raise no_such_overload("validate", value, text)
    errors = value.validator(text)
    return v.OptionalValue(errors) if errors else v.NONE
