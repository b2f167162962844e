"""Static CEL types, as used by function declarations and the checker.

Types are written in CEL's own notation (``list(string)``, ``map(string, dyn)``,
``optional_type(int)``) and parsed once at import time. A single upper-case name such as ``A`` is a
type parameter. Assignability follows cel-go: ``dyn`` is assignable both ways, ``null`` is
assignable to structs, opaque types and ``dyn``, and type parameters bind on first use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ALIASES = {
    "google.protobuf.Timestamp": "timestamp",
    "google.protobuf.Duration": "duration",
    "optional": "optional_type",
    "null": "null_type",
}
PRIMITIVES = frozenset(
    {"int", "uint", "double", "bool", "string", "bytes", "null_type", "dyn", "timestamp", "duration", "error"}
)
_PARAMETERIZED = {"list": 1, "map": 2, "optional_type": 1, "type": 1}


@dataclass(frozen=True)
class CelType:
    """``kind`` is a primitive name, ``list``/``map``/``optional_type``/``type``, ``struct``
    (``Object``, ``Object.spec``, ``JSONPatch``), ``opaque`` (library types such as
    ``kubernetes.Quantity``) or ``param`` (a type parameter)."""

    kind: str
    params: tuple[CelType, ...] = ()
    name: str = ""

    def __str__(self) -> str:
        base = self.name if self.kind in ("struct", "opaque", "param") else self.kind
        if self.params:
            return f"{base}({', '.join(str(p) for p in self.params)})"
        return base

    @property
    def is_dyn(self) -> bool:
        return self.kind == "dyn"

    @property
    def element(self) -> CelType:
        return self.params[0] if self.kind in ("list", "optional_type", "type") else DYN


def primitive(kind: str) -> CelType:
    return CelType(kind)


DYN = primitive("dyn")
INT = primitive("int")
UINT = primitive("uint")
DOUBLE = primitive("double")
BOOL = primitive("bool")
STRING = primitive("string")
BYTES = primitive("bytes")
NULL = primitive("null_type")
TIMESTAMP = primitive("timestamp")
DURATION = primitive("duration")
ERROR = primitive("error")
# A type not yet known: the element of an empty literal (``[]``, ``{}``) or an unbound type parameter
# of a call's result (``optional.none()``). It takes the type it meets first, as cel-go's fresh type
# variables unify (checker/checker.go checkCreateList ``newTypeVar``); left unbound it is dyn.
FREE = CelType("param", name="_var")


def list_of(element: CelType) -> CelType:
    return CelType("list", (element,))


def map_of(key: CelType, value: CelType) -> CelType:
    return CelType("map", (key, value))


def optional_of(value: CelType) -> CelType:
    return CelType("optional_type", (value,))


def type_of(value: CelType) -> CelType:
    return CelType("type", (value,))


def struct(name: str) -> CelType:
    return CelType("struct", name=name)


def opaque(name: str, *params: CelType) -> CelType:
    return CelType("opaque", tuple(params), name)


_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]*|[(),])")


def parse_type(text: str) -> CelType:
    """Parse CEL type notation: ``int``, ``list(A)``, ``map(string, dyn)``, ``kubernetes.Quantity``."""
    tokens = [m.group(1) for m in _TOKEN.finditer(text)]
    if "".join(tokens) != re.sub(r"\s+", "", text):
        raise ValueError(f"bad type notation {text!r}")
    position = 0

    def parse_one() -> CelType:
        nonlocal position
        name = _ALIASES.get(tokens[position], tokens[position])
        position += 1
        params: list[CelType] = []
        if position < len(tokens) and tokens[position] == "(":
            position += 1
            while True:
                params.append(parse_one())
                token = tokens[position]
                position += 1
                if token == ")":
                    break
                if token != ",":
                    raise ValueError(f"bad type notation {text!r}")
        if name in PRIMITIVES and not params:
            return primitive(name)
        if name in _PARAMETERIZED:
            if len(params) != _PARAMETERIZED[name]:
                raise ValueError(f"{name} takes {_PARAMETERIZED[name]} type parameters in {text!r}")
            return CelType(name, tuple(params))
        if len(name) == 1 and name.isupper() and not params:
            return CelType("param", name=name)
        if name in ("Object", "JSONPatch") or name.startswith("Object."):
            return struct(name)
        return opaque(name, *params)

    result = parse_one()
    if position != len(tokens):
        raise ValueError(f"trailing text in type notation {text!r}")
    return result


Bindings = dict[str, CelType]


def substitute(t: CelType, bindings: Bindings, unbound: CelType = DYN) -> CelType:
    """Replace bound type parameters; unbound ones become ``unbound`` (dyn unless asked otherwise)."""
    if t.kind == "param":
        return bindings.get(t.name, unbound)
    if t.params:
        return CelType(t.kind, tuple(substitute(p, bindings, unbound) for p in t.params), t.name)
    return t


def resolve_free(t: CelType) -> CelType:
    """``t`` with every :data:`FREE` left in it replaced by dyn (the checker's final pass)."""
    if t == FREE:
        return DYN
    if t.params:
        params = tuple(resolve_free(p) for p in t.params)
        return t if params == t.params else CelType(t.kind, params, t.name)
    return t


def is_assignable(target: CelType, source: CelType, bindings: Bindings) -> bool:
    """Whether a value of static type ``source`` may be passed where ``target`` is declared."""
    if target.kind == "param":
        bound = bindings.get(target.name)
        if bound is None or bound == FREE:
            bindings[target.name] = source
            return True
        if is_assignable(bound, source, bindings):
            return True
        if is_assignable(source, bound, {}):
            bindings[target.name] = source if bound.is_dyn else bound
            return True
        return False
    if target.is_dyn or source.is_dyn or source.kind == "error":
        return True
    if source.kind == "param":
        return True
    if source.kind == "null_type":
        return target.kind in ("null_type", "struct", "opaque", "timestamp", "duration")
    if target.kind != source.kind:
        return False
    if target.kind in ("struct", "opaque") and target.name != source.name:
        return target.kind == "struct" and target.name == "Object" and source.name.startswith("Object")
    if len(target.params) != len(source.params):
        return False
    return all(is_assignable(t, s, bindings) for t, s in zip(target.params, source.params, strict=True))


def join(a: CelType, b: CelType) -> CelType | None:
    """The common type of two branches or aggregate elements, or None when they conflict."""
    if a == b:
        return a
    if a == FREE:
        return b
    if b == FREE:
        return a
    if a.is_dyn or b.is_dyn or a.kind == "error" or b.kind == "error":
        return DYN
    if a.kind == "null_type" and is_assignable(b, a, {}):
        return b
    if b.kind == "null_type" and is_assignable(a, b, {}):
        return a
    if a.kind == b.kind and a.params and len(a.params) == len(b.params) and a.name == b.name:
        joined = [join(x, y) for x, y in zip(a.params, b.params, strict=True)]
        if all(j is not None for j in joined):
            return CelType(a.kind, tuple(j for j in joined if j is not None), a.name)
    if a.kind == "struct" and b.kind == "struct" and a.name.startswith("Object") and b.name.startswith("Object"):
        return struct("Object")
    return None
