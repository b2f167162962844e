"""Small ports of Go standard library behaviour that CEL libraries expose in their results and error
messages: ``strconv.Quote`` (the ``%q`` verb of ``format``, and quoting in Kubernetes' error
messages), ``math.Pow10`` and 64-bit integer limits. One port each, shared by every library.

Plain helpers; they hold no CEL declarations.
"""

from __future__ import annotations

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1

_ESCAPES = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t", "\v": r"\v"}


def quote(text: str) -> str:
    """Go's ``strconv.Quote``: a double-quoted literal with Go escapes for non-printable runes."""
    out = ['"']
    for ch in text:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch == " " or ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            if code < 0x20 or code == 0x7F:
                out.append(f"\\x{code:02x}")
            elif 0xD800 <= code <= 0xDFFF:  # not a valid rune: Go prints the replacement character
                out.append("\\ufffd")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_POW10 = [float(10**i) for i in range(32)]
_POW10_POS32 = [float(10 ** (32 * i)) for i in range(10)]  # 1e0, 1e32, ..., 1e288
_POW10_NEG32 = [float(f"1e-{32 * i}") for i in range(11)]  # 1e-0, 1e-32, ..., 1e-320


def pow10(n: int) -> float:
    """Go's ``math.Pow10`` (table based, so its rounding matches Go bit for bit)."""
    if 0 <= n <= 308:
        return _POW10_POS32[n // 32] * _POW10[n % 32]
    if -323 <= n <= 0:
        return _POW10_NEG32[-n // 32] / _POW10[-n % 32]
    return float("inf") if n > 0 else 0.0


def int_to_float(value: int) -> float:
    """Go's big.Float(int).Float64(): nearest float, ±Inf past the float64 range."""
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def wrap_int64(value: int) -> int:
    """Go's ``int64(uint64)`` conversion (two's complement wrap-around)."""
    value &= UINT64_MAX
    return value - 2**64 if value > INT64_MAX else value
