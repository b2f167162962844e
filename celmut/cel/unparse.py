"""Checked AST → CEL source text.

The text is compiled again (the constant parts the API server evaluates when it builds a program,
:mod:`celmut.cel.environment`) and shown to people (:mod:`celmut.compile.map_cel`), so it must mean
exactly what the tree means: every operator application is parenthesised, literals are written in a
form every CEL parser reads back to the same value, and macros are written in the spelling cel-go
accepts (``exists_one`` with one variable, ``existsOne`` with two).

:class:`Unparser` writes the tree as it is, typed constructions included. A subclass may override
:meth:`Unparser.select` to write field selections its own way; :class:`Unrepresentable` says that a
node has no text form (a library constant such as a ``net.IP`` type value).
"""

from __future__ import annotations

import math
import re

from celmut.cel import ast
from celmut.cel import values as v

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# CEL's reserved words: not usable as a field name after "." without backquotes.
RESERVED = frozenset(
    {
        "as",
        "break",
        "const",
        "continue",
        "else",
        "false",
        "for",
        "function",
        "if",
        "import",
        "in",
        "let",
        "loop",
        "package",
        "namespace",
        "null",
        "return",
        "true",
        "var",
        "void",
        "while",
    }
)
_BINARY = {
    "_+_": "+",
    "_-_": "-",
    "_*_": "*",
    "_/_": "/",
    "_%_": "%",
    "_==_": "==",
    "_!=_": "!=",
    "_<_": "<",
    "_<=_": "<=",
    "_>_": ">",
    "_>=_": ">=",
    "@in": "in",
}
# The type values a CEL parser resolves by name (``type(x) == int``).
TYPE_NAMES = frozenset(
    {
        "int",
        "uint",
        "double",
        "bool",
        "string",
        "bytes",
        "list",
        "map",
        "null_type",
        "type",
        "optional_type",
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
    }
)


class Unrepresentable(Exception):
    """A node that has no CEL text form in the target (the message says why)."""


def field_text(name: str) -> str:
    """A field name after ``.``: bare when it is an identifier, else in backquotes."""
    if _IDENT.match(name) and name not in RESERVED:
        return name
    if "`" in name or "\\" in name:
        raise Unrepresentable(f"field name {name!r} cannot be written in CEL text")
    return f"`{name}`"


def string_literal(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif code < 0x20 or code == 0x7F or 0xD800 <= code <= 0xDFFF:
            if 0xD800 <= code <= 0xDFFF:
                raise Unrepresentable("a string with a lone surrogate cannot be written in CEL text")
            out.append(f"\\u{code:04x}")
        elif not ch.isprintable():
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def bytes_literal(data: bytes) -> str:
    out = ['b"']
    for byte in data:
        if byte in (0x22, 0x5C):
            out.append("\\" + chr(byte))
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02x}")
    out.append('"')
    return "".join(out)


def literal(value: object) -> str:
    """The CEL text of a constant."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, v.UintType):
        return f"{int(value)}u"
    if type(value) is int:
        return f"({value})" if value < 0 else str(value)
    if type(value) is float:
        if math.isnan(value) or math.isinf(value):
            return f'double("{"NaN" if math.isnan(value) else ("-Infinity" if value < 0 else "Infinity")}")'
        text = repr(value)
        if "e" not in text and "." not in text:
            text += ".0"
        return f"({text})" if value < 0 or text.startswith("-") else text
    if isinstance(value, str):
        return string_literal(value)
    if isinstance(value, bytes):
        return bytes_literal(value)
    if isinstance(value, v.TypeValue) and value.name in TYPE_NAMES:
        return value.name
    raise Unrepresentable(f"the constant {v.type_name(value)} has no CEL text form")


class Unparser:
    """Writes a checked tree as CEL text."""

    def unparse(self, node: ast.Node) -> str:
        method = getattr(self, f"_{type(node).__name__}")
        text: str = method(node)
        return text

    def select(self, node: ast.Select) -> str:
        """A field selection (the hook a subclass may override)."""
        operand = self.unparse(node.operand)
        if node.test_only:
            return f"has({operand}.{field_text(node.field)})"
        return f"{operand}.{'?' if node.optional else ''}{field_text(node.field)}"

    # --- nodes ----------------------------------------------------------------------------------------

    def _Literal(self, node: ast.Literal) -> str:
        return literal(node.value)

    def _Ident(self, node: ast.Ident) -> str:
        return node.name

    def _Select(self, node: ast.Select) -> str:
        return self.select(node)

    def _Index(self, node: ast.Index) -> str:
        return f"{self.unparse(node.operand)}[{'?' if node.optional else ''}{self.unparse(node.index)}]"

    def _Call(self, node: ast.Call) -> str:
        function = node.function
        args = [self.unparse(a) for a in node.args]
        if function in _BINARY and len(args) == 2:
            return f"({args[0]} {_BINARY[function]} {args[1]})"
        if function == "_&&_" or function == "_||_":
            return "(" + (" && " if function == "_&&_" else " || ").join(args) + ")"
        if function == "_?_:_":
            return f"({args[0]} ? {args[1]} : {args[2]})"
        if function == "-_":
            return f"(-{args[0]})"
        if function == "!_":
            return f"(!{args[0]})"
        if node.target is not None:
            return f"{self.unparse(node.target)}.{function}({', '.join(args)})"
        return f"{function}({', '.join(args)})"

    def _CreateList(self, node: ast.CreateList) -> str:
        return "[" + ", ".join(f"{'?' if e.optional else ''}{self.unparse(e.value)}" for e in node.elements) + "]"

    def _CreateMap(self, node: ast.CreateMap) -> str:
        entries = ", ".join(
            f"{'?' if e.optional else ''}{self.unparse(e.key)}: {self.unparse(e.value)}" for e in node.entries
        )
        return "{" + entries + "}"

    def _CreateStruct(self, node: ast.CreateStruct) -> str:
        fields = ", ".join(
            f"{'?' if f.optional else ''}{field_text(f.name)}: {self.unparse(f.value)}" for f in node.fields
        )
        return f"{node.type_name}{{{fields}}}"

    def _Comprehension(self, node: ast.Comprehension) -> str:
        # cel-go spells the macro exists_one with one variable and existsOne with two
        macro = ("existsOne" if node.var2 else "exists_one") if node.kind == "exists_one" else node.kind
        parts = [node.var] if node.var2 is None else [node.var, node.var2]
        range_text = self.unparse(node.range)
        if node.predicate is not None:
            parts.append(self.unparse(node.predicate))
        parts.append(self.unparse(node.body))
        return f"{range_text}.{macro}({', '.join(parts)})"

    def _Bind(self, node: ast.Bind) -> str:
        return f"cel.bind({node.var}, {self.unparse(node.init)}, {self.unparse(node.body)})"

    def _OptMap(self, node: ast.OptMap) -> str:
        target = self.unparse(node.target)
        return f"{target}.{'optFlatMap' if node.flat else 'optMap'}({node.var}, {self.unparse(node.body)})"


def unparse(node: ast.Node) -> str:
    """The CEL text of ``node`` (typed constructions kept as written)."""
    return Unparser().unparse(node)
