"""CEL source text → celmut AST, on celpy's grammar extended with the syntax Kubernetes CEL needs.

``ExtendedCELParser`` subclasses celpy's :class:`celpy.celparser.CELParser`: it reads celpy's own
``cel.lark`` at run time and appends Lark ``%override`` rules for optional selection and indexing
(``a.?b``, ``m[?k]``), optional list elements and map/struct entries (``[?x]``, ``{?k: v}``),
trailing commas in literals, back-quoted field names (``a.`b-c```), and cel-spec's float literal
(digits are required after the point, so ``42.charAt(0)`` is a call on the int 42). The Lark parser is built
once per process and shared; building its LALR tables takes ~150 ms, so they are cached between
processes in the user's cache directory (:func:`_grammar_cache`), which makes a one-shot
``celmut eval`` start in a fraction of that.

Macros (``has``, ``all``, ``map``, ``cel.bind`` …) are expanded while converting, as cel-go does at
parse time; which macros exist depends on the environment profile.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import cast

import celpy.celparser
import celpy.celtypes
import lark
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from celmut.cel import ast
from celmut.cel.errors import CelCompileError, Issue

_GRAMMAR_EXTENSION = r"""
%override member : member_dot | member_dot_opt | member_dot_arg | member_index | member_index_opt
                 | member_object | primary
%override member_dot : member "." field_name
member_dot_opt : member "." "?" field_name
member_index_opt : member "[" "?" expr "]"
%override list_lit : "[" [listelems] "]"
listelems : listelem ("," listelem)* [","]
listelem : expr | opt_expr
opt_expr : "?" expr
%override map_lit : "{" [mapinits] "}"
%override mapinits : mapinit ("," mapinit)* [","]
mapinit : expr ":" expr | opt_key ":" expr
opt_key : "?" expr
%override member_object : member "{" [fieldinits] "}"
%override fieldinits : fieldinit ("," fieldinit)* [","]
fieldinit : field_name ":" expr | opt_field ":" expr
opt_field : "?" field_name
field_name : IDENT | QUOTED_IDENT
QUOTED_IDENT : /`[^`]+`/
%override FLOAT_LIT : /-?/ DIGIT* "." DIGIT+ EXPONENT? | /-?/ DIGIT+ EXPONENT
"""

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1
MAX_NESTING = 250  # cel-go's default parser recursion limit (parser/parser.go maxRecursionDepth)
# Precedence levels that, with one child, only pass their operand through: they add no nesting, as
# cel-go's parser unnests them before counting (parser/parser.go ``unnest``).
_PASS_THROUGH = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member", "primary"}
)

ParseTree = lark.Tree[lark.Token]
"""A node of Lark's parse tree (its leaves are tokens)."""


def _rule(child: ParseTree | lark.Token) -> ParseTree:
    """A child that the grammar makes a rule, never a terminal (a fact of the grammar Lark's types cannot see)."""
    return cast(ParseTree, child)


def _rules(tree: ParseTree) -> list[ParseTree]:
    """The children of a rule whose children are all rules."""
    return cast(list[ParseTree], tree.children)


def _terminal(child: ParseTree | lark.Token) -> lark.Token:
    """A child that the grammar makes a terminal (a token)."""
    return cast(lark.Token, child)


def _grammar_cache(grammar: str) -> str | bool:
    """Where Lark keeps the analysed grammar between processes (its ``cache`` option), or False.

    A directory of this user's (``$XDG_CACHE_HOME/celmut``, else ``~/.cache/celmut``), never the shared
    temporary directory Lark would use by default, where another user could plant the pickle it loads.
    The file name carries the grammar's hash; Lark also checks a hash of grammar, options and versions
    inside the file and rebuilds (rewriting the file) when it differs. No usable directory (a read-only
    home in a container): no cache, the tables are built in memory as before.
    """
    home = os.path.expanduser("~")
    base = os.environ.get("XDG_CACHE_HOME") or (os.path.join(home, ".cache") if home != "~" else "")
    if not base or not os.path.isabs(base):
        return False
    directory = os.path.join(base, "celmut")
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        if os.stat(directory).st_uid != os.getuid() or not os.access(directory, os.W_OK):
            return False
    except OSError:
        return False
    digest = hashlib.sha256(grammar.encode()).hexdigest()[:16]
    return os.path.join(directory, f"cel-grammar-{digest}.lark")


def _bool_literal(token: lark.Token) -> lark.Token:
    """``true``/``false`` lexed as identifiers become BOOL_LIT tokens keeping their position (celpy's
    ``ambiguous_literals`` drops it, so an error about a bool literal was reported at 0:0)."""
    if token.value in ("true", "false"):
        return lark.Token.new_borrow_pos("BOOL_LIT", token.value, token)
    return token


class ExtendedCELParser(celpy.celparser.CELParser):
    """celpy's parser facade over the extended grammar; one shared Lark instance per process."""

    EXTENDED_PARSER: lark.Lark | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:  # celpy's __init__ would build the stock grammar, which we never use
        with ExtendedCELParser._lock:
            if ExtendedCELParser.EXTENDED_PARSER is None:
                grammar = (Path(celpy.celparser.__file__).parent / "cel.lark").read_text() + _GRAMMAR_EXTENSION
                ExtendedCELParser.EXTENDED_PARSER = lark.Lark(
                    grammar,
                    cache=_grammar_cache(grammar),
                    parser="lalr",
                    start="expr",
                    g_regex_flags=re.M,
                    lexer_callbacks={"IDENT": _bool_literal},
                    propagate_positions=True,
                    maybe_placeholders=False,
                    priority="invert",
                )

    def parse(self, text: str) -> ParseTree:
        assert ExtendedCELParser.EXTENDED_PARSER is not None
        self.text = text
        try:
            return ExtendedCELParser.EXTENDED_PARSER.parse(text)
        except UnexpectedEOF as ex:
            lines = text.splitlines() or [""]
            raise CelCompileError(
                [Issue("Syntax error: unexpected end of expression", len(lines), len(lines[-1]) + 1)], text
            ) from ex
        except UnexpectedToken as ex:
            token = ex.token
            shown = "end of expression" if token.type == "$END" else repr(str(token))
            message = f"Syntax error: unexpected {shown}"
            raise CelCompileError([Issue(message, ex.line or 1, ex.column or 1)], text) from ex
        except UnexpectedCharacters as ex:
            pos = ex.pos_in_stream
            char = text[pos] if pos is not None and pos < len(text) else ""
            issue = Issue(f"Syntax error: token recognition error at: {char!r}", ex.line, ex.column)
            raise CelCompileError([issue], text) from ex
        except (UnexpectedInput, LarkError) as ex:  # pragma: no cover - Lark's other parse errors
            raise CelCompileError([Issue(f"Syntax error: {str(ex).splitlines()[0]}", 1, 1)], text) from ex


# ---------------------------------------------------------------------------------------------------
# Macros


MacroExpander = Callable[["_Converter", ast.Node | None, list[ast.Node], ParseTree | lark.Token], ast.Node]

# (name, is_member, arg_count) → expander. Filled below; the environment chooses a subset by name.
_MACROS: dict[tuple[str, bool, int], MacroExpander] = {}


def _macro(name: str, member: bool, *counts: int) -> Callable[[MacroExpander], MacroExpander]:
    def register(expander: MacroExpander) -> MacroExpander:
        for count in counts:
            _MACROS[(name, member, count)] = expander
        return expander

    return register


def _var_name(node: ast.Node, macro: str) -> str:
    if isinstance(node, ast.Ident):
        return node.name
    raise _MacroError(f"{macro}() variable name must be a simple identifier", node)


class _MacroError(Exception):
    def __init__(self, message: str, node: ast.Node) -> None:
        super().__init__(message)
        self.node = node


@_macro("has", False, 1)
def _has(conv: _Converter, target: ast.Node | None, args: list[ast.Node], at: object) -> ast.Node:
    arg = args[0]
    if not isinstance(arg, ast.Select) or arg.optional:
        raise _MacroError("invalid argument to has() macro", arg)
    return ast.Select(arg.operand, arg.field, test_only=True, line=arg.line, column=arg.column)


_ONE_VAR_KINDS = {"all": "all", "exists": "exists", "exists_one": "exists_one", "existsOne": "exists_one"}


def _comprehension_factory(name: str) -> MacroExpander:
    kind = _ONE_VAR_KINDS.get(name, name)

    def expand(conv: _Converter, target: ast.Node | None, args: list[ast.Node], at: object) -> ast.Node:
        assert target is not None
        line, column = conv.position(at)
        if name in ("map", "filter", "sortBy") or (name in _ONE_VAR_KINDS and len(args) == 2):
            var = _var_name(args[0], name)
            if name == "map" and len(args) == 3:
                return ast.Comprehension(
                    "map", target, var, args[2], predicate=args[1], macro=name, line=line, column=column
                )
            return ast.Comprehension(kind, target, var, args[1], macro=name, line=line, column=column)
        # Two-variable forms: (i, v, body) or (i, v, filter, body).
        var, var2 = _var_name(args[0], name), _var_name(args[1], name)
        if var == var2:
            raise _MacroError(f"{name}() variables must be different, got {var!r} twice", args[1])
        predicate = args[2] if len(args) == 4 else None
        return ast.Comprehension(
            kind, target, var, args[-1], var2=var2, predicate=predicate, macro=name, line=line, column=column
        )

    return expand


for _name, _counts in {
    "all": (2, 3),
    "exists": (2, 3),
    "exists_one": (2, 3),
    "existsOne": (2, 3),
    "map": (2, 3),
    "filter": (2,),
    "transformList": (3, 4),
    "transformMap": (3, 4),
    "transformMapEntry": (3, 4),
    "sortBy": (2,),
}.items():
    _macro(_name, True, *_counts)(_comprehension_factory(_name))


@_macro("cel.bind", False, 3)
def _bind(conv: _Converter, target: ast.Node | None, args: list[ast.Node], at: object) -> ast.Node:
    line, column = conv.position(at)
    return ast.Bind(_var_name(args[0], "cel.bind"), args[1], args[2], line=line, column=column)


@_macro("optMap", True, 2)
@_macro("optFlatMap", True, 2)
def _opt_map(conv: _Converter, target: ast.Node | None, args: list[ast.Node], at: object) -> ast.Node:
    assert target is not None
    line, column = conv.position(at)
    flat = conv.current_macro == "optFlatMap"
    return ast.OptMap(target, _var_name(args[0], "optMap"), args[1], flat=flat, line=line, column=column)


MACRO_NAMES: frozenset[str] = frozenset(name for name, _, _ in _MACROS)


# ---------------------------------------------------------------------------------------------------
# Lark tree → AST


_BINARY_OPERATORS = {
    "relation_lt": "_<_",
    "relation_le": "_<=_",
    "relation_gt": "_>_",
    "relation_ge": "_>=_",
    "relation_eq": "_==_",
    "relation_ne": "_!=_",
    "relation_in": "@in",
    "addition_add": "_+_",
    "addition_sub": "_-_",
    "multiplication_mul": "_*_",
    "multiplication_div": "_/_",
    "multiplication_mod": "_%_",
}


class _Converter:
    """Walks celpy's parse tree and builds :mod:`celmut.cel.ast` nodes, expanding enabled macros."""

    def __init__(self, source: str, macros: Iterable[str]) -> None:
        self.source = source
        self.macros = frozenset(macros)
        self.depth = 0
        self.current_macro = ""

    @staticmethod
    def position(item: object) -> tuple[int, int]:
        if isinstance(item, lark.Token):
            return item.line or 0, item.column or 0
        if isinstance(item, lark.Tree) and not item.meta.empty:
            return item.meta.line or 0, item.meta.column or 0
        return 0, 0

    def open_paren(self, name: lark.Token) -> tuple[int, int]:
        """Position of the ``(`` after a call's name: where cel-go reports call errors."""
        end = name.end_pos if name.end_pos is not None else 0
        index = self.source.find("(", end)
        if index < 0:
            return self.position(name)
        line = self.source.count("\n", 0, index) + 1
        column = index - (self.source.rfind("\n", 0, index) + 1) + 1
        return line, column

    def error(self, message: str, item: object) -> CelCompileError:
        line, column = self.position(item) if not isinstance(item, ast.Node) else (item.line, item.column)
        return CelCompileError([Issue(message, line, column)], self.source)

    def convert(self, tree: ParseTree) -> ast.Node:
        """Convert one node. Nesting is counted as cel-go counts it: one level per parenthesis, call,
        literal, selection, index or operator around an operand, never per precedence level, so 250
        nested ``(…)``, ``f(…)`` or ``[…]`` are the limit (parser/parser.go: the per-rule recursion
        listener and ``checkAndIncrementRecursionDepth``)."""
        while tree.data in _PASS_THROUGH and len(tree.children) == 1:
            tree = _rule(tree.children[0])
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"expression recursion limit exceeded: {MAX_NESTING}", tree)
        try:
            method = getattr(self, f"_{tree.data}")
            node: ast.Node = method(tree)
            return node
        finally:
            self.depth -= 1

    # --- precedence levels; single-child levels pass through -------------------------------------

    def _expr(self, tree: ParseTree) -> ast.Node:
        if len(tree.children) == 1:
            return self.convert(_rule(tree.children[0]))
        cond, then, otherwise = (self.convert(c) for c in _rules(tree))
        line, column = self.position(tree)
        return ast.Call("_?_:_", [cond, then, otherwise], line=line, column=column)

    def _logical_chain(self, tree: ParseTree, function: str) -> ast.Node:
        # Left-recursive chains (a || b || c) are flattened iteratively to keep Python's stack shallow.
        operands: list[ParseTree] = []
        node = tree
        while len(node.children) == 2:
            operands.append(_rule(node.children[1]))
            node = _rule(node.children[0])
        operands.append(_rule(node.children[0]))
        if len(operands) == 1:
            return self.convert(operands[0])
        line, column = self.position(tree)
        return ast.Call(function, [self.convert(o) for o in reversed(operands)], line=line, column=column)

    def _conditionalor(self, tree: ParseTree) -> ast.Node:
        return self._logical_chain(tree, "_||_")

    def _conditionaland(self, tree: ParseTree) -> ast.Node:
        return self._logical_chain(tree, "_&&_")

    def _binary(self, tree: ParseTree) -> ast.Node:
        if len(tree.children) == 1:
            return self.convert(_rule(tree.children[0]))
        op_tree, right = _rules(tree)
        left = self.convert(_rule(op_tree.children[0]))
        line, column = self.position(op_tree)
        return ast.Call(_BINARY_OPERATORS[op_tree.data], [left, self.convert(right)], line=line, column=column)

    _relation = _addition = _multiplication = _binary

    def _unary(self, tree: ParseTree) -> ast.Node:
        if len(tree.children) == 1:
            return self.convert(_rule(tree.children[0]))
        op, operand_tree = _rules(tree)
        operand = self.convert(operand_tree)
        line, column = self.position(op) if not op.meta.empty else self.position(tree)
        if op.data == "unary_neg":
            return ast.Call("-_", [operand], line=line, column=column)
        return ast.Call("!_", [operand], line=line, column=column)

    def _member(self, tree: ParseTree) -> ast.Node:
        return self.convert(_rule(tree.children[0]))

    def _primary(self, tree: ParseTree) -> ast.Node:
        return self.convert(_rule(tree.children[0]))

    # --- members ----------------------------------------------------------------------------------

    def _field_name(self, tree: ParseTree) -> str:
        token = _terminal(tree.children[0])
        return token[1:-1] if token.type == "QUOTED_IDENT" else str(token)

    def _member_dot(self, tree: ParseTree, optional: bool = False) -> ast.Node:
        operand = self.convert(_rule(tree.children[0]))
        name_tree = _rule(tree.children[1])
        line, column = self.position(name_tree)
        return ast.Select(operand, self._field_name(name_tree), optional=optional, line=line, column=column)

    def _member_dot_opt(self, tree: ParseTree) -> ast.Node:
        return self._member_dot(tree, optional=True)

    def _member_index(self, tree: ParseTree, optional: bool = False) -> ast.Node:
        operand, index = (self.convert(c) for c in _rules(tree))
        line, column = self.position(tree.children[1])
        return ast.Index(operand, index, optional=optional, line=line, column=max(column - 1, 1))

    def _member_index_opt(self, tree: ParseTree) -> ast.Node:
        return self._member_index(tree, optional=True)

    def _member_dot_arg(self, tree: ParseTree) -> ast.Node:
        target = self.convert(_rule(tree.children[0]))
        name = _terminal(tree.children[1])
        args = self._args(_rule(tree.children[2]) if len(tree.children) > 2 else None)
        qualified = ast.qualified_name(target)
        if qualified is not None and f"{qualified}.{name}" in self.macros:
            return self._expand(f"{qualified}.{name}", None, args, name)
        if str(name) in self.macros:
            return self._expand(str(name), target, args, name)
        line, column = self.open_paren(name)
        return ast.Call(str(name), args, target=target, line=line, column=column)

    def _member_object(self, tree: ParseTree) -> ast.Node:
        type_node = self.convert(_rule(tree.children[0]))
        type_name = ast.qualified_name(type_node)
        if type_name is None:
            raise self.error("a message construction needs a type name such as Object.spec", tree)
        fields: list[ast.FieldInit] = []
        if len(tree.children) > 1:
            for init in _rules(_rule(tree.children[1])):
                name_tree, value_tree = _rules(init)
                optional = name_tree.data == "opt_field"
                if optional:
                    name_tree = _rule(name_tree.children[0])
                line, column = self.position(name_tree)
                fields.append(
                    ast.FieldInit(
                        self._field_name(name_tree), self.convert(value_tree), optional, line=line, column=column
                    )
                )
        seen: set[str] = set()
        for f in fields:
            if f.name in seen:
                raise self.error(f"field {f.name!r} is initialised twice", tree)
            seen.add(f.name)
        line, column = self.position(tree)
        return ast.CreateStruct(type_name, fields, line=line, column=column)

    # --- primaries --------------------------------------------------------------------------------

    def _args(self, exprlist: ParseTree | None) -> list[ast.Node]:
        return [] if exprlist is None else [self.convert(c) for c in _rules(exprlist)]

    def _ident(self, tree: ParseTree) -> ast.Node:
        token = _terminal(tree.children[0])
        line, column = self.position(token)
        return ast.Ident(str(token), line=line, column=column)

    _dot_ident = _ident

    def _ident_arg(self, tree: ParseTree) -> ast.Node:
        name = _terminal(tree.children[0])
        args = self._args(_rule(tree.children[1]) if len(tree.children) > 1 else None)
        if str(name) in self.macros:
            return self._expand(str(name), None, args, name)
        line, column = self.open_paren(name)
        return ast.Call(str(name), args, line=line, column=column)

    _dot_ident_arg = _ident_arg

    def _paren_expr(self, tree: ParseTree) -> ast.Node:
        return self.convert(_rule(tree.children[0]))

    def _list_lit(self, tree: ParseTree) -> ast.Node:
        elements: list[ast.ListElement] = []
        if tree.children:
            for element in _rules(_rule(tree.children[0])):
                inner = _rule(element.children[0])
                if inner.data == "opt_expr":
                    elements.append(ast.ListElement(self.convert(_rule(inner.children[0])), optional=True))
                else:
                    elements.append(ast.ListElement(self.convert(inner)))
        line, column = self.position(tree)
        return ast.CreateList(elements, line=line, column=column)

    def _map_lit(self, tree: ParseTree) -> ast.Node:
        entries: list[ast.MapEntry] = []
        if tree.children:
            for init in _rules(_rule(tree.children[0])):
                key_tree, value_tree = _rules(init)
                optional = key_tree.data == "opt_key"
                if optional:
                    key_tree = _rule(key_tree.children[0])
                entries.append(ast.MapEntry(self.convert(key_tree), self.convert(value_tree), optional))
        line, column = self.position(tree)
        return ast.CreateMap(entries, line=line, column=column)

    def _literal(self, tree: ParseTree) -> ast.Node:
        token = _terminal(tree.children[0])
        line, column = self.position(token)
        return ast.Literal(self._literal_value(token), line=line, column=column)

    def _literal_value(self, token: lark.Token) -> object:
        kind, text = token.type, str(token)
        try:
            if kind == "INT_LIT":
                value = int(text, 0) if "x" not in text.lower() else _hex(text)
                if not INT64_MIN <= value <= INT64_MAX:
                    raise self.error(f"invalid int literal {text}: out of range", token)
                return value
            if kind == "UINT_LIT":
                digits = text[:-1]
                value = _hex(digits) if "x" in digits.lower() else int(digits)
                if not 0 <= value <= UINT64_MAX:
                    raise self.error(f"invalid uint literal {text}: out of range", token)
                return celpy.celtypes.UintType(value)
            if kind == "FLOAT_LIT":
                return float(text)
            if kind in ("STRING_LIT", "MLSTRING_LIT"):
                return decode_string(text)
            if kind == "BYTES_LIT":
                return decode_bytes(text)
            if kind == "BOOL_LIT":
                return text == "true"
            if kind == "NULL_LIT":
                return None
        except (ValueError, OverflowError) as ex:
            raise self.error(f"invalid literal {text}: {ex}", token) from ex
        raise self.error(f"unsupported literal {text}", token)  # pragma: no cover

    def _expand(self, name: str, target: ast.Node | None, args: list[ast.Node], at: lark.Token) -> ast.Node:
        expander = _MACROS.get((name, target is not None, len(args)))
        if expander is None:
            # A macro name with another arity is an ordinary function call (cel-go does the same).
            line, column = self.position(at)
            return ast.Call(name, args, target=target, line=line, column=column)
        self.current_macro = name
        try:
            return expander(self, target, args, at)
        except _MacroError as ex:
            raise self.error(str(ex), ex.node if ex.node.line else at) from ex


_ESCAPE = re.compile(
    r"\\(?:([abfnrtv\\'\"`?])|[xX]([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([0-3][0-7]{2})|(.))",
    re.DOTALL,
)
_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _unquote(text: str) -> tuple[str, bool]:
    """Strip the quotes of a CEL string literal; report whether it is raw."""
    raw = text[:1] in "rR"
    body = text[1:] if raw else text
    quote = 3 if body[:3] in ('"""', "'''") else 1
    return body[quote:-quote], raw


def decode_string(text: str) -> str:
    """Decode a CEL string literal (escapes, raw strings, triple quotes) into its value.

    celpy's own decoder drops newlines inside triple-quoted strings, so celmut decodes literals itself.
    """
    body, raw = _unquote(text)
    if raw:
        return body

    def replace(match: re.Match[str]) -> str:
        simple, hex2, hex4, hex8, octal, bad = match.groups()
        if simple is not None:
            return _SIMPLE_ESCAPES.get(simple, simple)
        if bad is not None:
            raise ValueError(f"invalid escape sequence \\{bad}")
        code = int(hex2 or hex4 or hex8, 16) if octal is None else int(octal, 8)
        if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
            raise ValueError(f"invalid code point {code:#x}")
        return chr(code)

    return _ESCAPE.sub(replace, body)


def decode_bytes(text: str) -> bytes:
    """Decode a CEL bytes literal: ``\\x``/octal escapes are single bytes, other characters UTF-8."""
    body, raw = _unquote(text[1:])
    if raw:
        return body.encode("utf-8")
    out = bytearray()
    position = 0
    for match in _ESCAPE.finditer(body):
        out += body[position : match.start()].encode("utf-8")
        position = match.end()
        simple, hex2, hex4, hex8, octal, bad = match.groups()
        if simple is not None:
            out += _SIMPLE_ESCAPES.get(simple, simple).encode("utf-8")
        elif hex2 is not None or octal is not None:
            out.append(int(hex2, 16) if hex2 is not None else int(octal, 8))
        elif bad is not None:
            raise ValueError(f"invalid escape sequence \\{bad}")
        else:
            out += chr(int(hex4 or hex8, 16)).encode("utf-8")
    out += body[position:].encode("utf-8")
    return bytes(out)


def _hex(text: str) -> int:
    negative = text.startswith("-")
    value = int(text.lstrip("-"), 16)
    return -value if negative else value


def parse(source: str, macros: Iterable[str] = MACRO_NAMES) -> ast.Node:
    """Parse CEL source into an AST, expanding the given macros. Raises :class:`CelCompileError`."""
    if not source.strip():
        raise CelCompileError([Issue("Syntax error: empty expression", 1, 1)], source)
    tree = ExtendedCELParser().parse(source)
    return _Converter(source, macros).convert(tree)
