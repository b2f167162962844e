"""The scalars of a built-in kind whose Go type has its own JSON form: the one conversion step both
mutation paths share.

kube-apiserver turns a MutatingAdmissionPolicy's result into the kind's Go struct one of two ways: a
merged ApplyConfiguration through ``DefaultUnstructuredConverter.FromUnstructured``
(:mod:`celmut.runtime.go_convert`), a JSONPatch's document through the strict JSON decoder
(:mod:`celmut.runtime.decode`). Where a field's Go type decodes itself, both hand it the same JSON
and get the same value or error back, which these functions give:

* ``intstr.IntOrString.UnmarshalJSON``: a string, else ``json.Unmarshal`` into an ``int32``
  (``json: cannot unmarshal number 1.5 into Go value of type int32``; the JSON decoder adds the
  struct field it was decoding);
* ``resource.Quantity.UnmarshalJSON``: ``ParseQuantity`` of the text without its quotes
  (``quantities must match the regular expression …``), written back canonical (``1.5`` → ``1500m``);
* a ``[]byte`` (``format: byte``, ConfigMap ``binaryData``): ``base64.StdEncoding`` decoded
  (newlines skipped, padding required: ``illegal base64 data at input byte 3``) and encoded again.
"""

from __future__ import annotations

import base64
from typing import Any

from celmut.cel.libs.k8s import resource
from celmut.cel.libs.kyverno.json import go_float


class ScalarError(Exception):
    """A Go ``UnmarshalJSON`` (or base64 decoding) refused the value; the message is Go's."""


class UnmarshalTypeError(ScalarError):
    """``encoding/json.UnmarshalTypeError``: what JSON was found (``number 1.5``, ``bool``) and the Go
    type it does not fit."""

    def __init__(self, found: str, go_type: str) -> None:
        super().__init__(f"json: cannot unmarshal {found} into Go value of type {go_type}")
        self.found = found
        self.go_type = go_type

    def in_field(self, struct: str, field: str) -> str:
        """The message once the decoder has added the struct field it was decoding."""
        return f"json: cannot unmarshal {self.found} into Go struct field {struct}.{field} of type {self.go_type}"


class CorruptBase64(ScalarError):
    """``base64.CorruptInputError``."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"illegal base64 data at input byte {offset}")


def json_text(value: Any) -> str:
    """``encoding/json``'s text of a JSON value, for what a decoder error quotes (``number 1.5``,
    ``number 4294967299``); containers are elided, only their first character is ever read."""
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is float:
        return go_float(value)
    if type(value) is int:
        return str(value)
    if value is None:
        return "null"
    if type(value) is dict:
        return "{...}"
    if type(value) is list:
        return "[...]"
    return '"' + str(value) + '"'


def json_kind(value: Any) -> str:
    """How ``UnmarshalTypeError`` names a JSON value that is not a number: ``bool``, ``object``, …"""
    text = json_text(value)
    return {"t": "bool", "f": "bool", "{": "object", "[": "array", '"': "string", "n": "null"}.get(text[0], "number")


def int_or_string(value: Any) -> Any:
    """``IntOrString.UnmarshalJSON``: a string as it is, anything else into an ``int32``."""
    if type(value) is str:
        return value
    kind = json_kind(value)
    if kind != "number":
        raise UnmarshalTypeError(kind, "int32")
    text = json_text(value)
    if any(ch in text for ch in ".eE") or not -(1 << 31) <= int(text) < 1 << 31:
        raise UnmarshalTypeError(f"number {text}", "int32")
    return int(text)


def quantity(value: Any) -> str:
    """``Quantity.UnmarshalJSON`` then ``MarshalJSON``: the canonical text."""
    text = json_text(value)
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        text = text[1:-1]
    try:
        return resource.parse_quantity(text.strip()).string()
    except resource.QuantityError as ex:
        raise ScalarError(str(ex)) from None


def base64_bytes(text: str) -> str:
    """A ``[]byte`` field's base64 decoded as Go decodes it, then encoded again (padded)."""
    if not text:
        return text
    return base64.b64encode(go_base64_decode(text.encode("utf-8"))).decode("ascii")


_STD = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_DECODE = {c: i for i, c in enumerate(_STD)}


def go_base64_decode(src: bytes) -> bytes:
    """Go's ``base64.StdEncoding.Decode`` (``decodeQuantum``): newlines skipped, padding required;
    raises :class:`CorruptBase64` at the offset Go reports."""
    out = bytearray()
    si = 0
    while si < len(src):
        si, chunk = _quantum(src, si)
        out += chunk
    return bytes(out)


def _quantum(src: bytes, si: int) -> tuple[int, bytes]:
    dbuf = [0, 0, 0, 0]
    dlen = 4
    j = 0
    trailing: int | None = None
    while j < 4:
        if si == len(src):
            if j == 0:
                return si, b""
            raise CorruptBase64(si - j)
        ch = src[si]
        si += 1
        decoded = _DECODE.get(ch)
        if decoded is not None:
            dbuf[j] = decoded
            j += 1
            continue
        if ch in (0x0A, 0x0D):
            continue
        if ch != 0x3D:  # '='
            raise CorruptBase64(si - 1)
        if j in (0, 1):
            raise CorruptBase64(si - 1)
        if j == 2:
            while si < len(src) and src[si] in (0x0A, 0x0D):
                si += 1
            if si == len(src):
                raise CorruptBase64(len(src))
            if src[si] != 0x3D:
                raise CorruptBase64(si - 1)
            si += 1
        while si < len(src) and src[si] in (0x0A, 0x0D):
            si += 1
        if si < len(src):
            trailing = si
        dlen = j
        break
    if trailing is not None:
        raise CorruptBase64(trailing)
    val = dbuf[0] << 18 | dbuf[1] << 12 | dbuf[2] << 6 | dbuf[3]
    return si, val.to_bytes(3, "big")[: dlen - 1]
