"""A port of ``k8s.io/apimachinery/pkg/api/resource.Quantity``: parsing, arithmetic, comparison and
the canonical string form, with the same two internal representations as Go.

Go keeps a quantity either as an ``int64Amount`` (an int64 ``value`` times ``10**scale``) or, when
that cannot hold it exactly, as an ``inf.Dec`` (a big ``unscaled`` integer times ``10**-scale``).
The representation is observable through CEL: ``isInteger()``/``asInteger()`` succeed only for an
int64Amount with a non-negative scale (so ``quantity('1000m').isInteger()`` is false and so is
``quantity('1.5Gi').isInteger()``), and ``asApproximateFloat()`` multiplies the stored integer by
``math.Pow10`` of the stored scale. Both representations are reproduced here exactly.

Values are exact. Parsing rounds the inf.Dec form up (away from zero) to a multiple of 10**-9 and
caps BinarySI values at 2**63-1, as Go does. Go would also expand an exponent such as ``1e99999999``
into a huge integer when it meets the inf.Dec form; celmut refuses such operands instead
(:data:`MAX_DIGITS`), because the expansion would take minutes and gigabytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from celmut.cel.libs.golang import INT64_MAX, INT64_MIN, int_to_float, pow10

DECIMAL_EXPONENT, BINARY_SI, DECIMAL_SI = "DecimalExponent", "BinarySI", "DecimalSI"
MAX_DIGITS = 4_000  # most decimal digits celmut materialises for an inf.Dec value

_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG = "quantities must match the regular expression '" + _SPLIT_RE + "'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

_DEC_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BIN_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC_BY_EXP = {e: s for s, e in _DEC_SUFFIXES.items()}
_BIN_BY_EXP = {e: s for s, e in _BIN_SUFFIXES.items()}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")


class QuantityError(ValueError):
    """A parse or range failure, with apimachinery's message."""


def _fits(value: int) -> bool:
    return INT64_MIN <= value <= INT64_MAX


def _scaled(value: int, scale: int) -> int | None:
    """``positiveScaleInt64``: value * 10**scale if it fits an int64."""
    if value == 0:
        return 0
    if scale >= 19:
        return None
    result = value * 10**scale
    return result if _fits(result) else None


def ndigits(value: int) -> int:
    """Decimal digits of ``abs(value)`` (without ``str()``, which Python limits to 4300 digits)."""
    magnitude = abs(value)
    if magnitude < 10**18:
        return len(str(magnitude))
    digits = int(magnitude.bit_length() * 0.30102999566398120)
    power = 10**digits
    while power <= magnitude:
        power *= 10
        digits += 1
    return digits


def _too_large() -> QuantityError:
    return QuantityError(f"quantity out of the supported range (more than {MAX_DIGITS} digits)")


def _expand(unscaled: int, shift: int) -> int:
    """unscaled * 10**shift, refusing expansions Go would spend minutes on."""
    if unscaled and shift + ndigits(unscaled) > MAX_DIGITS:
        raise _too_large()
    return unscaled * cast(int, 10**shift)  # shift >= 0: typeshed types int ** int as Any


def _round_up(unscaled: int, scale: int, target: int) -> tuple[int, bool]:
    """inf.Dec ``Round(target, RoundUp)``: rescale to ``target`` digits after the point, rounding away
    from zero; returns the new unscaled value and whether it was exact."""
    if scale <= target:
        return _expand(unscaled, target - scale), True
    shift = scale - target
    magnitude = abs(unscaled)
    if ndigits(magnitude) <= shift:  # |value| < 10**-target: rounds to one unit
        quotient, exact = (1, False) if magnitude else (0, True)
    else:
        quotient, remainder = divmod(magnitude, 10**shift)
        exact = remainder == 0
        quotient += not exact
    return (-quotient if unscaled < 0 else quotient), exact


@dataclass(frozen=True)
class Quantity:
    """One resource.Quantity. ``dec`` is None for the int64Amount form ``value * 10**scale``;
    otherwise the value is ``dec[0] * 10**-dec[1]`` (inf.Dec unscaled and scale)."""

    value: int = 0
    scale: int = 0
    dec: tuple[int, int] | None = None
    format: str = DECIMAL_SI
    cached: str = ""  # the parsed text, when Go keeps it as the canonical string

    # --- exact value ------------------------------------------------------------------------------

    def as_dec(self) -> tuple[int, int]:
        return self.dec if self.dec is not None else (self.value, -self.scale)

    def sign(self) -> int:
        unscaled = self.dec[0] if self.dec is not None else self.value
        return (unscaled > 0) - (unscaled < 0)

    def is_zero(self) -> bool:
        return self.sign() == 0

    def cmp(self, other: Quantity) -> int:
        return compare_dec(self.as_dec(), other.as_dec())

    # --- conversions ----------------------------------------------------------------------------

    def as_int64(self) -> int | None:
        """``AsInt64``: only an int64Amount with a non-negative scale converts."""
        if self.dec is not None or self.scale < 0:
            return None
        return _scaled(self.value, self.scale)

    def as_approximate_float(self) -> float:
        if self.dec is not None:
            base, exponent = int_to_float(self.dec[0]), -self.dec[1]
        else:
            base, exponent = float(self.value), self.scale
        return base if exponent == 0 else base * pow10(exponent)

    # --- arithmetic (Go mutates a copy; these return new quantities) -----------------------------

    def add(self, other: Quantity) -> Quantity:
        fmt = self.format
        if self.dec is None and other.dec is None:
            if self.value == 0:
                fmt = other.format
            amount = _int_add(self.value, self.scale, other.value, other.scale)
            if amount is not None:
                return Quantity(amount[0], amount[1], None, fmt)
        elif self.is_zero():
            fmt = other.format
        return Quantity(dec=_dec_add(self.as_dec(), other.as_dec()), format=fmt)

    def sub(self, other: Quantity) -> Quantity:
        fmt = other.format if self.is_zero() else self.format
        if self.dec is None and other.dec is None and other.value != INT64_MIN:
            amount = _int_add(self.value, self.scale, -other.value, other.scale)
            if amount is not None:
                return Quantity(amount[0], amount[1], None, fmt)
        unscaled, scale = other.as_dec()
        return Quantity(dec=_dec_add(self.as_dec(), (-unscaled, scale)), format=fmt)

    # --- canonical string -----------------------------------------------------------------------

    def string(self) -> str:
        if self.cached:
            return self.cached
        if self.is_zero():
            return "0"
        fmt = self.format
        rounded = None
        if fmt == BINARY_SI:
            if compare_dec(self.as_dec(), (-1024, 0)) > 0 and compare_dec(self.as_dec(), (1024, 0)) < 0:
                fmt = DECIMAL_SI
            else:
                rounded, exact = _round_up(*self.as_dec(), 0)
                if not exact:
                    fmt = DECIMAL_SI
        if fmt == BINARY_SI:
            assert rounded is not None
            number, exponent = _remove_factors(rounded, 1024)
            return str(number) + _BIN_BY_EXP.get(exponent * 10, "")
        number, exponent = self._canonical_decimal()
        if fmt == DECIMAL_SI:
            return str(number) + _DEC_BY_EXP.get(exponent, "")
        return str(number) + (f"e{exponent}" if exponent else "")

    def _canonical_decimal(self) -> tuple[int, int]:
        """``AsCanonicalBytes``: mantissa and a base-10 exponent that is a multiple of 3."""
        unscaled, scale = self.as_dec()
        number, times = _remove_factors(unscaled, 10)
        exponent = -scale + times
        shift = exponent % 3
        return number * 10**shift, exponent - shift


def _remove_factors(value: int, base: int) -> tuple[int, int]:
    times = 0
    magnitude = abs(value)
    while magnitude >= base and magnitude % base == 0:
        magnitude //= base
        times += 1
    return (-magnitude if value < 0 else magnitude), times


def compare_dec(a: tuple[int, int], b: tuple[int, int]) -> int:
    """Compare ``a[0] * 10**-a[1]`` with ``b[0] * 10**-b[1]`` exactly."""
    sign_a, sign_b = (a[0] > 0) - (a[0] < 0), (b[0] > 0) - (b[0] < 0)
    if sign_a != sign_b or sign_a == 0:
        return (sign_a > sign_b) - (sign_a < sign_b)
    # Decide by magnitude when the decimal exponents are far apart (no big expansion needed).
    high_a, high_b = ndigits(a[0]) - a[1], ndigits(b[0]) - b[1]
    if high_a != high_b:
        return sign_a if high_a > high_b else -sign_a
    scale = max(a[1], b[1])
    x, y = a[0] * cast(int, 10 ** (scale - a[1])), b[0] * cast(int, 10 ** (scale - b[1]))  # exponents >= 0
    return (x > y) - (x < y)


def _int_add(a: int, a_scale: int, b: int, b_scale: int) -> tuple[int, int] | None:
    """``int64Amount.Add``: None when Go's int64 fast path overflows (it then uses inf.Dec)."""
    if b == 0:
        return a, a_scale
    if a == 0:
        return b, b_scale
    if a_scale == b_scale:
        total = a + b
        return (total, a_scale) if _fits(total) else None
    if a_scale > b_scale:
        shifted = _scaled(a, a_scale - b_scale)
        if shifted is None or not _fits(shifted + b):
            return None
        return shifted + b, b_scale
    shifted = _scaled(b, b_scale - a_scale)
    if shifted is None or not _fits(a + shifted):
        return None
    return a + shifted, a_scale


def _dec_add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """inf.Dec addition: the result keeps the larger scale."""
    scale = max(a[1], b[1])
    total = _expand(a[0], scale - a[1]) + _expand(b[0], scale - b[1])
    if ndigits(total) > MAX_DIGITS:
        raise _too_large()
    return total, scale


def new_quantity(value: int) -> Quantity:
    """``resource.NewQuantity(value, DecimalExponent)``, what ``add(int)``/``sub(int)`` use."""
    return Quantity(value, 0, None, DECIMAL_EXPONENT)


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """``parseQuantityString``: sign, numeric text, integer digits, fraction digits, suffix."""
    positive, pos, end = True, 0, len(text)
    if text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    if pos >= end:
        return positive, text, num, "", ""
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT_WRONG)
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str] | None:
    if suffix in _DEC_SUFFIXES:
        return 10, _DEC_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BIN_SUFFIXES:
        return 2, _BIN_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[:1] in "+-" else digits
        if not body or not set(body) <= _DIGITS or not _fits(int(digits)):
            return None
        exponent = (int(digits) + 2**31) % 2**32 - 2**31  # Go's int32(parsed) truncation
        return 10, exponent, DECIMAL_EXPONENT
    return None


def parse_quantity(text: str) -> Quantity:
    """``resource.ParseQuantity``."""
    if not text:
        raise QuantityError(ERR_FORMAT_WRONG)
    if text == "0":
        return Quantity(0, 0, None, DECIMAL_SI, "0")
    positive, value, num, denom, suffix = _split(text)
    interpreted = _interpret(suffix)
    if interpreted is None:
        raise QuantityError(ERR_SUFFIX)
    base, exponent, fmt = interpreted
    mantissa = 1
    if fmt == BINARY_SI:
        scale = 0
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - exponent * 3 // 10 - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = 18 - (len(num) + len(denom))
    if precision >= 0:
        scale -= len(denom)
        if scale >= -9:
            shifted = num + denom
            parsed = int(shifted)
            result = parsed * mantissa
            if _fits(result):
                result = result if positive else -result
                if fmt == BINARY_SI:
                    canonical = exponent % 10 == 0 and parsed & 7 != 0
                else:
                    canonical = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return Quantity(result, scale, None, fmt, text if canonical else "")
    return _parse_dec(value, base, exponent, fmt)


def _parse_dec(value: str, base: int, exponent: int, fmt: str) -> Quantity:
    body = value[1:] if value[:1] in "+-" else value
    integer, point, fraction = body.partition(".")
    if not (integer + fraction) or not set(integer + fraction) <= _DIGITS:
        raise QuantityError(ERR_NUMERIC)
    if len(integer + fraction) > MAX_DIGITS:
        raise _too_large()
    unscaled, scale = int(integer + fraction), len(fraction) if point else 0
    if value.startswith("-"):
        unscaled = -unscaled
    if base == 10:
        scale -= exponent
    else:
        unscaled <<= exponent
    negative = unscaled < 0
    unscaled = abs(unscaled)
    if unscaled != 0:
        unscaled, _ = _round_up(unscaled, scale, 9)
        scale = 9
    if fmt == BINARY_SI and compare_dec((unscaled, scale), (INT64_MAX, 0)) > 0:
        unscaled, scale = INT64_MAX, 0
    if fmt == BINARY_SI and unscaled > 0 and compare_dec((unscaled, scale), (1, 0)) < 0:
        fmt = DECIMAL_SI  # a non-zero BinarySI value below 1 is shown as DecimalSI
    return Quantity(dec=(-unscaled if negative else unscaled, scale), format=fmt)
