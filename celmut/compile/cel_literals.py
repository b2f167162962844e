"""CEL source for literal values, for the code that generates CEL (the presets, the conversion to
MutatingAdmissionPolicies): one home, so every generator quotes the same way (``\\``, ``"``, newlines
and control characters escaped; other text as is)."""

from __future__ import annotations

from collections.abc import Sequence

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def cel_string(text: str) -> str:
    """A double-quoted CEL string literal whose value is ``text``."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def cel_strings(texts: Sequence[str]) -> str:
    """A CEL list literal of strings."""
    return "[" + ", ".join(cel_string(t) for t in texts) + "]"
