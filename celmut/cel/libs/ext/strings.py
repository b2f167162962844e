"""cel-go's Strings extension (``ext.Strings()``). Indices count Unicode code points.

Versioned as cel-go gates it (``ext/strings.go``: ``if lib.version >= N``); a profile takes the
version its system configures (:func:`library`; Kubernetes and Kyverno: ``StringsVersion(2)``).

Version 0:
``<string>.charAt(<int>) -> <string>``  ``'hello'.charAt(4) == 'o'``, ``'hello'.charAt(5) == ''``
``<string>.indexOf(<string>[, <int>]) -> <int>``  ``'hello mellow'.indexOf('ello', 2) == 7``
``<string>.lastIndexOf(<string>[, <int>]) -> <int>``  ``'hello mellow'.lastIndexOf('ello', 6) == 1``,
``''.lastIndexOf('@@') == -1`` (cel-go v0.25+)
``<string>.lowerAscii() -> <string>``  ``'TacoCÆt'.lowerAscii() == 'tacocÆt'``
``<string>.upperAscii() -> <string>``  ``'TacoCÆt'.upperAscii() == 'TACOCÆT'``
``<string>.replace(<string>, <string>[, <int>]) -> <string>``  ``'hello hello'.replace('he', 'we', 1) == 'wello hello'``
``<string>.split(<string>[, <int>]) -> <list<string>>``  ``'a b c'.split(' ', 2) == ['a', 'b c']``
``<string>.substring(<int>[, <int>]) -> <string>``  ``'tacocat'.substring(0, 4) == 'taco'``
``<string>.trim() -> <string>``  ``'  \\ttrim\\n '.trim() == 'trim'`` (Go's unicode.IsSpace)
``<list<string>>.join([<string>]) -> <string>``  ``['a', 'b'].join('-') == 'a-b'`` (version 2's
implementation: a non-string element is ``join: invalid input``)
Version 1:
``<string>.format(<list>) -> <string>``  ``'%s is %d'.format(['x', 1]) == 'x is 1'``
``strings.quote(<string>) -> <string>``  ``strings.quote('a\\nb') == '"a\\\\nb"'``
Version 3:
``<string>.reverse() -> <string>``  ``'gums'.reverse() == 'smug'``

``format`` follows cel-go's formatter for strings versions 1-3 with the ``en_US`` locale: ``%s %d %f %e
%b %x %X %o`` and ``%%``, ``%.Nf`` precision, ``%e`` rendered by golang.org/x/text (``2.718280×10⁰⁰``;
U+202F around the × with the x/text of Kubernetes before 1.33), lists and maps printed as CEL
literals. Errors use cel-go's wording ("index out of range: 9").
"""

from __future__ import annotations

import math
import types
from typing import Any

from celmut.cel import costs
from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError, describe
from celmut.cel.libs import golang
from celmut.cel.libs.core import to_string
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("cel.lib.ext.strings")
fn, method = LIBRARY.function, LIBRARY.method

# Go's unicode.IsSpace: ASCII and Latin-1 spaces plus the Unicode White_Space property (no U+200B).
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _scan(text: Any, *_: Any) -> int:
    return len(text) // 10 if isinstance(text, str) else 0


def _check(name: str, args: tuple[Any, ...], kinds: tuple[type | types.UnionType, ...]) -> None:
    for arg, kind in zip(args, kinds, strict=True):
        if not isinstance(arg, kind) or (kind is int and type(arg) is not int):
            raise no_such_overload(name, *args)


def _out_of_range(index: int) -> CelEvaluationError:
    return CelEvaluationError(f"index out of range: {index}")


@method("charAt", "string", ("int",), "string", cost=_scan)
def char_at(text: str, index: int) -> str:
    _check("charAt", (text, index), (str, int))
    if index < 0 or index > len(text):
        raise _out_of_range(index)
    return text[index : index + 1]


@method("indexOf", "string", ("string",), "int", cost=_scan)
@method("indexOf", "string", ("string", "int"), "int", cost=_scan)
def index_of(text: str, sub: str, *rest: int) -> int:
    _check("indexOf", (text, sub, *rest), (str, str, int)[: 2 + len(rest)])
    offset = rest[0] if rest else 0
    if sub == "":
        return offset
    if offset < 0:
        raise _out_of_range(offset)
    if offset >= len(text):
        return -1
    return text.find(sub, offset)


@method("lastIndexOf", "string", ("string",), "int", cost=_scan)
@method("lastIndexOf", "string", ("string", "int"), "int", cost=_scan)
def last_index_of(text: str, sub: str, *offset: int) -> int:
    _check("lastIndexOf", (text, sub, *offset), (str, str, int)[: 2 + len(offset)])
    if not offset:
        if sub == "":
            return len(text)
        if len(sub) > len(text):
            return -1  # cel-go PR #1173 (v0.25, Kubernetes 1.34+): ''.lastIndexOf('@@') is -1, not an error
        offset = (len(text) - 1,)
    off = offset[0]
    if sub == "":
        return off
    if off < 0:
        raise _out_of_range(off)
    if off >= len(text):
        return -1
    off = min(off, len(text) - len(sub))
    return text.rfind(sub, 0, off + len(sub)) if off >= 0 else -1


@method("lowerAscii", "string", (), "string", cost=_scan)
def lower_ascii(text: str) -> str:
    _check("lowerAscii", (text,), (str,))
    return text.translate(_LOWER)


@method("upperAscii", "string", (), "string", cost=_scan)
def upper_ascii(text: str) -> str:
    _check("upperAscii", (text,), (str,))
    return text.translate(_UPPER)


def _replace_cost(text: Any, old: Any, new: Any, limit: Any = -1) -> int:
    if not (isinstance(text, str) and isinstance(old, str) and isinstance(new, str) and type(limit) is int):
        return 0
    count = len(text) + 1 if old == "" else text.count(old)
    if limit >= 0:
        count = min(count, limit)
    costs.check_string_size(len(text) + count * (len(new) - len(old)), "replace()")
    return (len(text) + count * len(new)) // 10


@method("replace", "string", ("string", "string"), "string", cost=_replace_cost)
@method("replace", "string", ("string", "string", "int"), "string", cost=_replace_cost)
def replace(text: str, old: str, new: str, *rest: int) -> str:
    """Go's strings.Replace: a negative limit replaces all, an empty ``old`` matches between runes."""
    _check("replace", (text, old, new, *rest), (str, str, str, int)[: 3 + len(rest)])
    limit = rest[0] if rest else -1
    return text.replace(old, new, limit if limit >= 0 else -1)


@method("split", "string", ("string",), "list(string)", cost=_scan)
@method("split", "string", ("string", "int"), "list(string)", cost=_scan)
def split(text: str, sep: str, *rest: int) -> list[str]:
    """Go's strings.SplitN: 0 gives [], a negative limit splits all, an empty separator splits runes."""
    _check("split", (text, sep, *rest), (str, str, int)[: 2 + len(rest)])
    limit = rest[0] if rest else -1
    if limit == 0:
        return []
    if sep == "":
        chars = list(text)
        if 0 < limit < len(chars):
            return [*chars[: limit - 1], text[limit - 1 :]]
        return chars
    return text.split(sep, limit - 1 if limit > 0 else -1)


@method("substring", "string", ("int",), "string", cost=_scan)
@method("substring", "string", ("int", "int"), "string", cost=_scan)
def substring(text: str, start: int, *end: int) -> str:
    _check("substring", (text, start, *end), (str, int, int)[: 2 + len(end)])
    if not end:
        if start < 0 or start > len(text):
            raise _out_of_range(start)
        return text[start:]
    stop = end[0]
    if start > stop:
        raise CelEvaluationError(f"invalid substring range. start: {start}, end: {stop}")
    if start < 0 or start > len(text):
        raise _out_of_range(start)
    if stop < 0 or stop > len(text):
        raise _out_of_range(stop)
    return text[start:stop]


@method("trim", "string", (), "string", cost=_scan)
def trim(text: str) -> str:
    _check("trim", (text,), (str,))
    return text.strip(_GO_SPACE)


@method("reverse", "string", (), "string", cost=_scan, since=3)
def reverse(text: str) -> str:
    _check("reverse", (text,), (str,))
    return text[::-1]


def _join_cost(items: Any, sep: Any = "") -> int:
    if not isinstance(items, list | tuple):
        return 0
    separators = max(len(items) - 1, 0) * (len(sep) if isinstance(sep, str) else 0)
    length = sum(len(s) for s in items if isinstance(s, str)) + separators
    costs.check_string_size(length, "join()")
    return len(items) + length // 10


@method("join", "list(string)", (), "string", cost=_join_cost)
@method("join", "list(string)", ("string",), "string", cost=_join_cost)
def join(items: list[Any], *rest: str) -> str:
    _check("join", (items, *rest), (list | tuple, str)[: 1 + len(rest)])
    sep = rest[0] if rest else ""
    for item in items:
        if not isinstance(item, str):
            raise CelEvaluationError(f"join: invalid input: {describe(item)}")
    return sep.join(items)


_QUOTE_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
_QUOTE_TABLE = str.maketrans({**_QUOTE_ESCAPES, "\\": "\\\\", '"': '\\"'})


@fn("strings.quote", ("string",), "string", cost=_scan, since=1)
def quote(text: str) -> str:
    """Escape CEL's escape sequences and double quotes; invalid code points become U+FFFD."""
    _check("strings.quote", (text,), (str,))
    sanitized = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return '"' + sanitized.translate(_QUOTE_TABLE) + '"'


# --- format ------------------------------------------------------------------------------------------


class _FormatError(CelEvaluationError):
    pass


def _bad_clause(clause: str, value: Any) -> _FormatError:
    messages = {
        "s": "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, "
        "durations, and timestamps",
        "d": "decimal clause can only be used on integers",
        "f": "fixed-point clause can only be used on doubles",
        "e": "scientific clause can only be used on doubles",
        "b": "only integers and bools can be formatted as binary",
        "x": "only integers, byte buffers, and strings can be formatted as hex",
        "o": "octal clause can only be used on integers",
    }
    return _FormatError(f"{messages[clause]}, was given {v.type_name(value)}")


def _is_integer(value: Any) -> bool:
    return type(value) is int or type(value) is v.UintType


def _plain_string(value: Any) -> str:
    """cel-go's ``string(value)`` for the scalar types the %s clause accepts."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise _FormatError(
                'could not convert argument "invalid UTF-8 in bytes, cannot convert to string" to string'
            ) from None
    if isinstance(value, v.TypeValue):
        return value.name
    return to_string(value)


def format_string(value: Any) -> str:
    """The %s clause."""
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_literal(item) for item in value) + "]"
    if isinstance(value, dict) and not isinstance(value, v.StructValue):
        return _format_map(value)
    if isinstance(value, bool | int | float | str | bytes | v.Timestamp | v.Duration | v.TypeValue):
        return _plain_string(value)
    raise _bad_clause("s", value)


def _literal(value: Any) -> str:
    """A list element or map value, printed as a CEL literal (cel-go's clauseForType + quoteForCEL)."""
    if _is_integer(value):
        return str(int(value))
    if type(value) is float:
        if math.isnan(value) or math.isinf(value):
            return '"' + ("NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf") + '"'
        return f"{value:.6f}"
    if isinstance(value, str):
        return golang.quote(value)
    if isinstance(value, bytes):
        return "b" + golang.quote(_plain_string(value))
    if type(value) is v.Timestamp:
        return f"timestamp({golang.quote(v.format_timestamp(value))})"
    if type(value) is v.Duration:
        return f"duration({golang.quote(v.format_duration(value))})"
    if value is None or isinstance(value, bool | v.TypeValue | list | tuple) or type(value) is dict:
        return format_string(value)
    raise _FormatError(f"no formatting function for {v.type_name(value)}")


def _format_map(value: dict[Any, Any]) -> str:
    entries = []
    for key, item in value.items():
        if isinstance(key, str):
            key_text = golang.quote(key)
        elif isinstance(key, bool):
            key_text = "true" if key else "false"
        elif _is_integer(key):
            key_text = str(int(key))
        else:
            raise _FormatError(f"no formatting function for map key of type {v.type_name(key)}")
        entries.append((key_text, _literal(item)))
    entries.sort(key=lambda entry: entry[0])
    return "{" + ", ".join(f"{k}:{val}" for k, val in entries) + "}"


def _as_double(clause: str, value: Any) -> float:
    if type(value) is float:
        return value
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return float(value)
    raise _bad_clause(clause, value)


def _fixed(value: Any, precision: int) -> str:
    """x/text's en-US decimal format: grouping commas, ∞ for infinities."""
    number = _as_double("f", value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "∞" if number > 0 else "-∞"
    return format(number, f",.{precision}f")


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _scientific(value: Any, width: int, separator: str = "×") -> str:
    """x/text's en-US scientific format. cel-go passes the precision as the *width* (``%6e``), so the
    mantissa always has 6 decimals and the result is left-padded to ``width`` runes. ``separator``
    is what the vendored golang.org/x/text writes between mantissa and power (see :func:`library`)."""
    number = _as_double("e", value)
    if math.isnan(number):
        text = "NaN"
    elif math.isinf(number):
        text = "∞" if number > 0 else "-∞"
    else:
        mantissa, exponent = f"{number:.6e}".split("e")
        exp = int(exponent)
        digits = f"{'-' if exp < 0 else ''}{abs(exp):02d}".translate(_SUPERSCRIPT)
        text = f"{mantissa}{separator}10{digits}"
    return text.rjust(width)


def _binary(value: Any) -> str:
    if type(value) is bool:
        return "1" if value else "0"
    if _is_integer(value):
        return format(int(value), "b")
    raise _bad_clause("b", value)


def _hex(value: Any, upper: bool) -> str:
    if _is_integer(value):
        text = format(int(value), "x")
    elif isinstance(value, str):
        text = value.encode("utf-8").hex()
    elif isinstance(value, bytes):
        text = value.hex()
    else:
        raise _bad_clause("x", value)
    return text.upper() if upper else text


def _integer(clause: str, value: Any, spec: str) -> str:
    if not _is_integer(value):
        raise _bad_clause(clause, value)
    return format(int(value), spec)


def _clause(verb: str, value: Any, precision: int | None, separator: str) -> str:
    if verb == "s":
        return format_string(value)
    if verb == "d":
        return _integer("d", value, "d")
    if verb == "f":
        return _fixed(value, 6 if precision is None else precision)
    if verb == "e":
        return _scientific(value, 6 if precision is None else precision, separator)
    if verb == "b":
        return _binary(value)
    if verb in "xX":
        return _hex(value, verb == "X")
    return _integer("o", value, "o")


_MAX_PRECISION = 255  # x/text keeps the minimum digit count in a uint8


def _parse_clause(spec: str, start: int) -> tuple[int, str, int | None]:
    """Parse ``[.N]verb`` at ``spec[start:]``; returns the end index, the verb and the precision."""
    i = start
    precision = None
    if spec[i] == ".":
        i += 1
        digits_start = i
        while True:
            if i >= len(spec):
                raise CelEvaluationError("error while parsing precision: could not find end of precision specifier")
            if not ("0" <= spec[i] <= "9"):
                break
            i += 1
        digits = spec[digits_start:i]
        if not digits:
            raise CelEvaluationError(
                "error while parsing precision: error while converting precision to integer: "
                'strconv.Atoi: parsing "": invalid syntax'
            )
        precision = int(digits)
        if precision > _MAX_PRECISION:
            raise CelEvaluationError(f"error while parsing precision: precision {precision} is too large")
    verb = spec[i]
    if verb not in "sdfebxXo":
        shown = verb if verb.isascii() else chr(verb.encode("utf-8")[0])  # Go reads one byte
        raise CelEvaluationError(f'unrecognized formatting clause "{shown}"')
    return i + 1, verb, precision


def _format_cost(spec: Any, args: Any) -> int:
    """cel-go charges ``ceil(size(format) * 0.1)`` (runtimecost.go, ExtFormatString) and not the
    arguments; celmut renders them, so it also charges their traversal, and refuses before
    rendering an output over :data:`celmut.cel.costs.MAX_STRING_BYTES` (arguments that share their
    parts are measured without unfolding them)."""
    if not isinstance(spec, str):
        return 0
    measure = costs.Measure()
    costs.check_string_size(len(spec) + measure.nbytes(args), "format()")
    return costs.string_cost(len(spec)) + measure.cost(args)


@method("format", "string", ("list(dyn)",), "string", cost=_format_cost, since=1)
def format_(spec: str, args: list[Any]) -> str:
    """``format`` as cel-go built with golang.org/x/text v0.22 or later prints it (``1.234500×10⁰³``)."""
    return _format(spec, args, "×")


def format_narrow_spaces(spec: str, args: list[Any]) -> str:
    """``format`` as cel-go built with golang.org/x/text before v0.22 prints it: U+202F NARROW
    NO-BREAK SPACE around the × of ``%e`` (``1.234500\u202f×\u202f10⁰³``, cel-go's own
    strings_test.go expectation until the x/text fix of golang/go#71428)."""
    return _format(spec, args, "\u202f×\u202f")


def _format(spec: str, args: list[Any], separator: str) -> str:
    _check("format", (spec, args), (str, list | tuple))
    out: list[str] = []
    i, arg_index, literal_start = 0, 0, 0
    while True:
        i = spec.find("%", i)
        if i < 0:
            break
        out.append(spec[literal_start:i])
        if spec.startswith("%%", i):
            out.append("%")
            i += 2
        else:
            if arg_index >= len(args):
                raise CelEvaluationError(f"index {arg_index} out of range")
            if i + 1 >= len(spec):
                raise CelEvaluationError("unexpected end of string")
            try:
                i, verb, precision = _parse_clause(spec, i + 1)
            except CelEvaluationError as ex:
                raise CelEvaluationError(f"could not parse formatting clause: {ex.message}") from None
            try:
                out.append(_clause(verb, args[arg_index], precision, separator))
            except _FormatError as ex:
                raise CelEvaluationError(f"error during formatting: {ex.message}") from None
            arg_index += 1
        literal_start = i
    out.append(spec[literal_start:])
    return "".join(out)


# --- configuration ------------------------------------------------------------------------------------


def narrow_spaces_in_scientific(kubernetes_version: tuple[int, int]) -> bool:
    """Whether the golang.org/x/text a Kubernetes release vendors puts U+202F around the × of ``%e``.

    x/text dropped the spaces in v0.22.0 (golang/go#71428, January 2025); Kubernetes 1.33 was the
    first release built with it. A real kube-apiserver v1.36.2 prints ``1.234500×10⁰³``.
    """
    return kubernetes_version < (1, 33)


def library(version: int, kubernetes_version: tuple[int, int]) -> Library:
    """ext.Strings as a system configures it: ``StringsVersion(version)``, and ``format`` as the
    x/text of that Kubernetes version prints ``%e``."""
    configured = LIBRARY.at(version)
    if narrow_spaces_in_scientific(kubernetes_version):
        return configured.with_impl("format", format_narrow_spaces)
    return configured
