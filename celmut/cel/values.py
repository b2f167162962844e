"""celmut's runtime value model for CEL.

CEL values are plain Python values wherever JSON already has the type, so a decoded Kubernetes
object *is* its CEL value and needs no conversion:

=================  =======================================================
CEL type           Python representation
=================  =======================================================
null_type          ``None``
bool               ``bool``
int                ``int`` (exactly; ``bool`` and ``uint`` are distinct types)
uint               :class:`celpy.celtypes.UintType` (an ``int`` subclass)
double             ``float``
string / bytes     ``str`` / ``bytes``
list / map         ``list`` / ``dict``
timestamp          :class:`Timestamp` (nanoseconds since the Unix epoch, exact)
duration           :class:`Duration` (nanoseconds, exact)
type               :class:`TypeValue`
optional_type      :class:`OptionalValue`
Object, JSONPatch  :class:`StructValue` (a ``dict`` that remembers its type name)
library types      classes registered with :func:`register_opaque` (Quantity, IP, URL, …)
=================  =======================================================

Equality is heterogeneous as in cel-go: numbers compare by value across int/uint/double, values of
different types are simply unequal, and ``x == null`` is valid for every ``x``.
"""

from __future__ import annotations

import base64
import decimal
import math
from collections.abc import Callable
from typing import Any, cast

from celpy.celtypes import UintType

from celmut.cel.errors import CelEvaluationError, describe
from celmut.cel.temporal import NANOS_PER_SECOND, Duration, Timestamp, format_duration, format_timestamp

__all__ = [
    "NANOS_PER_SECOND",
    "Duration",
    "OptionalValue",
    "StructValue",
    "Timestamp",
    "TypeValue",
    "UintType",
    "equals",
    "format_duration",
    "format_timestamp",
    "less",
    "to_plain",
    "type_name",
    "type_value",
]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1


class TypeValue:
    """A CEL type used as a value: ``type(1) == int``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeValue) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("type", self.name))

    def __repr__(self) -> str:
        return self.name


class OptionalValue:
    """CEL ``optional_type``: either empty (:data:`NONE`) or holding a value."""

    __slots__ = ("present", "value")

    def __init__(self, value: Any = None, present: bool = True) -> None:
        self.value = value
        self.present = present

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OptionalValue):
            return False
        if not self.present or not other.present:
            return self.present == other.present
        return equals(self.value, other.value)

    def __hash__(self) -> int:  # pragma: no cover - optionals are never map keys
        return hash(("optional", self.present))

    def __repr__(self) -> str:
        return f"optional.of({self.value!r})" if self.present else "optional.none()"


NONE = OptionalValue(None, present=False)


class StructValue(dict[str, Any]):
    """A value built by a typed construction (``Object.spec{…}``, ``JSONPatch{…}``): a map that
    remembers the type name it was written with."""

    __slots__ = ("type_name",)

    def __init__(self, type_name: str, fields: dict[str, Any]) -> None:
        super().__init__(fields)
        self.type_name = type_name


# Library types register here: CEL type name → Python class (and back).
_OPAQUE_BY_NAME: dict[str, type] = {}
_OPAQUE_NAMES: dict[type, str] = {}


def register_opaque(name: str, cls: type) -> type:
    """Make a Python class a CEL library type (``kubernetes.Quantity``, ``net.IP`` …)."""
    _OPAQUE_BY_NAME[name] = cls
    _OPAQUE_NAMES[cls] = name
    return cls


def opaque_class(name: str) -> type | None:
    return _OPAQUE_BY_NAME.get(name)


_TYPE_NAMES: dict[type, str] = {
    type(None): "null_type",
    bool: "bool",
    int: "int",
    UintType: "uint",
    float: "double",
    str: "string",
    bytes: "bytes",
    list: "list",
    tuple: "list",
    dict: "map",
    Timestamp: "google.protobuf.Timestamp",
    Duration: "google.protobuf.Duration",
    TypeValue: "type",
    OptionalValue: "optional_type",
}

TYPES: dict[str, TypeValue] = {
    name: TypeValue(name)
    for name in (
        "null_type",
        "bool",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "list",
        "map",
        "type",
        "optional_type",
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
    )
}


def type_name(value: Any) -> str:
    """The CEL type name of a runtime value."""
    cls = type(value)
    name = _TYPE_NAMES.get(cls)
    if name is not None:
        return name
    if cls is StructValue:
        return cast(StructValue, value).type_name.split(".", 1)[0]
    name = _OPAQUE_NAMES.get(cls)
    if name is not None:
        return name
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, UintType):
        return "uint"
    for base, base_name in _TYPE_NAMES.items():
        if isinstance(value, base):
            return base_name
    return cls.__name__


def no_such_overload(function: str, *args: Any) -> CelEvaluationError:
    """The cel-go message for a call whose argument types match no overload."""
    return CelEvaluationError(f"no such overload: {function}({', '.join(type_name(a) for a in args)})")


def type_value(value: Any) -> TypeValue:
    name = type_name(value)
    return TYPES.get(name) or TypeValue(name)


def is_int(value: Any) -> bool:
    return type(value) is int


def is_number(value: Any) -> bool:
    cls = type(value)
    return cls is int or cls is float or cls is UintType


def is_string(value: Any) -> bool:
    return isinstance(value, str)


# --- equality and ordering ---------------------------------------------------------------------------


def equals(a: Any, b: Any) -> bool:
    """cel-go heterogeneous equality."""
    ta, tb = type(a), type(b)
    if ta is tb:
        if ta is dict:
            return _map_equals(a, b)
        if ta is list:
            return len(a) == len(b) and all(equals(x, y) for x, y in zip(a, b, strict=True))
        if ta is StructValue:
            return a.type_name == b.type_name and _map_equals(a, b)
        return bool(a == b)
    if (ta is int or ta is float or ta is UintType) and (tb is int or tb is float or tb is UintType):
        return _compare_numbers(a, b) == 0
    if ta is bool or tb is bool or a is None or b is None:
        return False
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(equals(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        if isinstance(a, StructValue) or isinstance(b, StructValue):
            return False
        return _map_equals(a, b)
    if type_name(a) != type_name(b):
        return False
    return bool(a == b)


def _map_equals(a: dict[Any, Any], b: dict[Any, Any]) -> bool:
    if len(a) != len(b):
        return False
    for key, value in a.items():
        if key not in b:
            return False
        if not equals(value, b[key]):
            return False
    return True


_ORDERED_SAME_TYPE = (str, bytes, bool, Timestamp, Duration)


def less(a: Any, b: Any, op: str = "_<_") -> bool:
    """Whether ``a < b`` under CEL ordering; raises 'no such overload' for unordered type pairs."""
    return _compare(a, b, op) < 0


def _compare_numbers(a: Any, b: Any) -> int:
    """cel-go's cross-type numeric comparison (common/types/compare.go): int and uint compare exactly;
    a double against an int or uint compares through double — the integer is rounded to the nearest
    float64 — after a range check, so ``9007199254740993 == 9007199254740992.0`` and
    ``9223372036854775807 < 9223372036854775808.0`` is false. 2 means unordered (NaN)."""
    fa, fb = type(a) is float, type(b) is float
    if fa != fb:
        if fa:
            return _compare_double_integer(a, b)
        order = _compare_double_integer(b, a)
        return order if order == 2 else -order
    a = int(a) if type(a) is UintType else a
    b = int(b) if type(b) is UintType else b
    if a < b:
        return -1
    if a > b:
        return 1
    if a == b:
        return 0
    return 2  # NaN: every ordering comparison is false


_TWO_63 = 9223372036854775808.0  # float64(math.MaxInt64) and -float64(math.MinInt64)
_TWO_64 = 18446744073709551616.0  # float64(math.MaxUint64)


def _compare_double_integer(d: float, i: int) -> int:
    """compareDoubleInt / compareDoubleUint."""
    if d != d:
        return 2
    if type(i) is UintType:
        if d < 0:
            return -1
        if d > _TWO_64:
            return 1
    else:
        if d < -_TWO_63:
            return -1
        if d > _TWO_63:
            return 1
    rounded = float(i)
    return -1 if d < rounded else (1 if d > rounded else 0)


def _compare(a: Any, b: Any, op: str) -> int:
    if is_number(a) and is_number(b):
        return _compare_numbers(a, b)
    ta = type(a)
    if ta is type(b) and ta in _ORDERED_SAME_TYPE:
        return -1 if a < b else (1 if a > b else 0)
    compare = getattr(a, "cel_compare", None)
    if compare is not None and type(b) is ta:
        return int(compare(b))
    raise CelEvaluationError(f"no such overload: {op}({type_name(a)}, {type_name(b)})")


def compare(a: Any, b: Any, op: str) -> int:
    """-1, 0 or 1 (2 for an unordered NaN pair); raises for types without an ordering."""
    return _compare(a, b, op)


# --- integer helpers ---------------------------------------------------------------------------------


def check_int(value: int) -> int:
    if INT64_MIN <= value <= INT64_MAX:
        return value
    raise CelEvaluationError("integer overflow")


def check_uint(value: int) -> UintType:
    if 0 <= value <= UINT64_MAX:
        return UintType(value)
    raise CelEvaluationError("unsigned integer overflow")


def trunc_div(a: int, b: int) -> int:
    """Go integer division (truncates toward zero)."""
    if b == 0:
        raise CelEvaluationError("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def trunc_mod(a: int, b: int) -> int:
    """Go remainder (takes the sign of the dividend)."""
    if b == 0:
        raise CelEvaluationError("modulus by zero")
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


# --- formatting and output ---------------------------------------------------------------------------


def format_double(value: float) -> str:
    """Go's ``fmt.Sprintf("%g", v)`` (shortest digits, exponent form below 1e-4 or from 1e+06),
    which is what cel-go's ``string(double)`` produces."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digit_tuple, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + int(exponent)  # value = 0.<digits> × 10**point
    prefix = "-" if sign else ""
    exp = point - 1
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return prefix + digits + "0" * (point - len(digits))
    return f"{prefix}{digits[:point]}.{digits[point:]}"


class BytesInside(Exception):
    """:func:`to_plain_without_bytes` met a bytes value."""


def _base64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _no_bytes(value: bytes) -> str:
    raise BytesInside


def _plain_converter(on_bytes: Callable[[bytes], str]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        cls = type(value)
        if cls in (str, int, float, bool) or value is None:
            return value
        if isinstance(value, dict):
            return {_plain_key(k): convert(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [convert(v) for v in value]
        if isinstance(value, UintType):
            return int(value)
        if isinstance(value, bytes):
            return on_bytes(value)
        if cls is Timestamp:
            return format_timestamp(value)
        if cls is Duration:
            return format_duration(value)
        if isinstance(value, TypeValue):
            return value.name
        if isinstance(value, OptionalValue):
            return convert(value.value) if value.present else None
        plain = getattr(value, "to_plain", None)
        if plain is not None:
            return plain()
        return str(value)

    return convert


to_plain = _plain_converter(_base64)
to_plain.__doc__ = (
    "Convert a CEL result into JSON-compatible Python data (typed objects become plain maps, bytes base64)."
)
to_plain_without_bytes = _plain_converter(_no_bytes)
to_plain_without_bytes.__doc__ = ":func:`to_plain`, raising :class:`BytesInside` where it would base64-encode bytes."


def _plain_key(key: Any) -> Any:
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int | float):
        return str(int(key)) if isinstance(key, int) else str(key)
    return key


def require_map_key(key: Any) -> Any:
    """CEL map keys are int, uint, bool or string."""
    if isinstance(key, str | int) and not isinstance(key, float):
        return key
    raise CelEvaluationError(f"unsupported key type: {type_name(key)} ({describe(key)})")


def is_zero(value: Any) -> bool:
    """The zero value of its type (for optional.ofNonZeroValue)."""
    if value is None:
        return True
    if isinstance(value, bool | int | float | str | bytes | list | tuple | dict):
        return not value
    if isinstance(value, Timestamp | Duration):
        return value.ns == 0
    if isinstance(value, OptionalValue):
        return not value.present
    return False
