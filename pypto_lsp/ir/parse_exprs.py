"""Pass-dump expressions -> :mod:`pypto_lsp.ir.model` expressions, with ``ast`` only.

:class:`ExprParser` holds the state every part of the parser shares (the text, its lines, the
diagnostics, the printer forms read ahead) and turns one ``ast`` expression into an IR
:class:`~pypto_lsp.ir.model.Expr`: names, constants, operators, ``pl.<Enum>.<member>``, op and
function calls. :mod:`.parse_types` adds the type annotations on top of it and :mod:`.parser`
the statements, functions and the module. Nothing here executes dump text.
"""

from __future__ import annotations

import ast
import keyword

from . import diagnostics as D
from .model import (
    BinOp,
    Const,
    DictExpr,
    DTypeRef,
    EnumRef,
    Expr,
    FuncCall,
    Intrinsic,
    ListExpr,
    Name,
    OpCall,
    Span,
    Subscript,
    TupleExpr,
    UnaryOp,
    split_lines,
)
from .names import BARE_LAYOUTS, DSL_CONSTRUCTS, DTYPES, ENUMS
from .printer_forms import Parsed

__all__ = ["MAX_CHAIN", "MAX_INT_LITERAL", "ExprParser", "dotted", "is_dunder", "is_pl_call"]

MAX_CHAIN = 256  # terms of one `a and b and ...` / `a < b < ...` chain
# the IR's widest integer is 64-bit; larger literals are typos (and overflow int->str limits downstream)
MAX_INT_LITERAL = 2**64

_BINOPS: dict[type, str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
}
_CMPOPS: dict[type, str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_UNARY: dict[type, str] = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "not"}

# bare-name calls that are part of the grammar
_BARE_CALLS = {"abs": "abs", "min": "min", "max": "max"}


def dotted(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def is_pl_call(node: ast.expr, name: str) -> bool:
    """``node`` is ``pl.<name>(...)`` (cheaper than building the dotted name)."""
    if type(node) is not ast.Call:
        return False
    f = node.func  # type: ignore[attr-defined]
    return type(f) is ast.Attribute and f.attr == name and type(f.value) is ast.Name and f.value.id == "pl"


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


class ExprParser:
    """The parser's shared state and helpers, and the expressions of the dump grammar."""

    def __init__(self, text: str, filename: str | None) -> None:
        self.text = text
        self.filename = filename
        self.diags: list[D.Diagnostic] = []
        self.dyn: dict[str, Span] = {}
        self._lines: list[str] | None = None
        self._forms: dict[tuple[int, int], Parsed] = {}  # see printer_forms

    @property
    def lines(self) -> list[str]:
        """Source lines numbered as ``ast`` numbers them: LF, CRLF and CR end a line, form feed does not."""
        if self._lines is None:
            self._lines = split_lines(self.text)
        return self._lines

    # ------------------------------------------------------------------ helpers

    def err(self, node: object, code: str, message: str, hint: str | None = None) -> None:
        span = node if isinstance(node, Span) else Span.of(node)
        self.diags.append(D.error(span, code, message, hint))

    def grammar(self, node: ast.AST, what: str) -> None:
        self.err(
            node,
            "outside-grammar",
            f"{what} is outside the pass-dump grammar",
            "pass dumps contain only pl DSL statements; this text is never executed",
        )

    # ------------------------------------------------------------------ expressions

    def expr(self, node: ast.expr) -> Expr:
        t = type(node)
        if t is ast.Call:  # the most common forms first: op calls and pl.<Enum>.<member>
            return self.call(node)  # type: ignore[arg-type]
        if t is ast.Attribute:
            return self.attribute(node)  # type: ignore[arg-type]
        span = Span.of(node)
        if isinstance(node, ast.Name):
            if is_dunder(node.id):
                self.grammar(node, f"dunder name '{node.id}'")
            return Name(node.id, span)
        if isinstance(node, ast.Constant):
            v = node.value
            if v is Ellipsis or isinstance(v, bytes | complex):
                self.grammar(node, f"literal {type(v).__name__}")
                return Const(None, span)
            if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= MAX_INT_LITERAL:
                self.err(node, "bad-const", f"integer literal of {v.bit_length()} bits does not fit any IR integer type")
                return Const(None, span)
            return Const(v, span)
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                self.grammar(node, "operator @")
                return Const(None, span)
            return BinOp(op, self.expr(node.left), self.expr(node.right), span)
        if isinstance(node, ast.BoolOp):
            if len(node.values) > MAX_CHAIN:
                return self._too_deep(node, len(node.values))
            op = "and" if isinstance(node.op, ast.And) else "or"
            acc = self.expr(node.values[0])
            for operand in node.values[1:]:
                acc = BinOp(op, acc, self.expr(operand), span)
            return acc
        if isinstance(node, ast.Compare):
            if len(node.ops) > MAX_CHAIN:
                return self._too_deep(node, len(node.ops) + 1)
            left = self.expr(node.left)
            result: Expr | None = None
            for cmp, right in zip(node.ops, node.comparators, strict=True):
                sym = _CMPOPS.get(type(cmp))
                r = self.expr(right)
                if sym is None:
                    self.grammar(node, f"comparison '{type(cmp).__name__}'")
                    return Const(None, span)
                c = BinOp(sym, left, r, span)
                result = c if result is None else BinOp("and", result, c, span)
                left = r
            assert result is not None
            return result
        if isinstance(node, ast.UnaryOp):
            return UnaryOp(_UNARY[type(node.op)], self.expr(node.operand), span)
        if isinstance(node, ast.List):
            return ListExpr([self.expr(e) for e in node.elts], span)
        if isinstance(node, ast.Tuple):
            return TupleExpr([self.expr(e) for e in node.elts], span)
        if isinstance(node, ast.Dict):
            keys: list[Expr] = []
            for k in node.keys:
                if k is None:
                    self.grammar(node, "** in a dict")
                    keys.append(Const(None, span))
                else:
                    keys.append(self.expr(k))
            return DictExpr(keys, [self.expr(v) for v in node.values], span)
        if isinstance(node, ast.Subscript):
            if isinstance(node.slice, ast.Slice):
                self.grammar(node, "a slice")
                return Const(None, span)
            return Subscript(self.expr(node.value), self.expr(node.slice), span)
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        what = {
            ast.Lambda: "a lambda",
            ast.ListComp: "a comprehension",
            ast.SetComp: "a comprehension",
            ast.DictComp: "a comprehension",
            ast.GeneratorExp: "a generator expression",
            ast.JoinedStr: "an f-string",
            ast.NamedExpr: "an assignment expression (:=)",
            ast.Starred: "a starred expression",
            ast.IfExp: "a conditional expression",
            ast.Await: "await",
            ast.Yield: "yield",
            ast.YieldFrom: "yield from",
            ast.Set: "a set literal",
        }.get(type(node), f"expression '{type(node).__name__}'")
        self.grammar(node, what)
        return Const(None, span)

    def _too_deep(self, node: ast.expr, terms: int) -> Expr:
        # flat in Python's syntax tree but one IR level per term: no pass prints such a chain,
        # and running it would exhaust the interpreter's recursion limit
        self.err(node, "too-deep", f"a chain of {terms} terms is too deep for the IR (at most {MAX_CHAIN})")
        return Const(None, Span.of(node))

    def attribute(self, node: ast.Attribute) -> Expr:
        span = Span.of(node)
        dd = dotted(node)
        if dd is None or dd[0] not in ("pl", "pld"):
            root = dd[0] if dd else "an expression"
            self.grammar(node, f"attribute access on '{root}' (only pl./pld. names are allowed)")
            return Const(None, span)
        if any(is_dunder(p) for p in dd):
            self.grammar(node, "a dunder attribute")
            return Const(None, span)
        if len(dd) == 2 and dd[1] in DTYPES:
            return DTypeRef(dd[1], span)
        if len(dd) == 2 and dd[1] in BARE_LAYOUTS:
            return EnumRef("TensorLayout", dd[1], span)
        if len(dd) == 3 and dd[1] in ENUMS:
            members = ENUMS[dd[1]]
            if members is not None and dd[2] not in members:
                self.err(node, "unknown-enum", f"pl.{dd[1]} has no member '{dd[2]}'")
            return EnumRef(dd[1], dd[2], span)
        if len(dd) == 2:
            self.err(node, "unknown-name", f"unknown name '{'.'.join(dd)}'", "is it a dtype (pl.FP32, pl.BF16, ...)?")
        else:
            self.err(node, "unknown-name", f"unknown name '{'.'.join(dd)}'")
        return Const(None, span)

    def _kwargs(self, node: ast.Call) -> dict[str, Expr]:
        out: dict[str, Expr] = {}
        for kw in node.keywords:
            if kw.arg is None:
                self.grammar(kw.value, "**kwargs")
                continue
            if kw.arg in out:
                self.err(kw.value, "duplicate-keyword", f"keyword '{kw.arg}' given twice")
            out[kw.arg] = self.expr(kw.value)
        return out

    def call(self, node: ast.Call) -> Expr:
        span = Span.of(node)
        fspan = Span.of(node.func)
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.grammar(a, "*args")
                return Const(None, span)
        dd = dotted(node.func)
        if dd is None:
            self.grammar(node.func, "a call of a computed callee")
            return Const(None, span)
        if any(is_dunder(p) for p in dd):
            self.grammar(node.func, "a call of a dunder name")
            return Const(None, span)
        if len(dd) == 1:
            if dd[0] in _BARE_CALLS and not node.keywords:
                return Intrinsic(_BARE_CALLS[dd[0]], [self.expr(a) for a in node.args], span)
            self.grammar(node.func, f"a call of '{dd[0]}'")
            return Const(None, span)
        root = dd[0]
        if root == "self":
            if len(dd) != 2:
                self.grammar(node.func, "a nested attribute on self")
                return Const(None, span)
            return FuncCall(dd[1], [self.expr(a) for a in node.args], self._kwargs(node), span, fspan)
        if root not in ("pl", "pld"):
            self.grammar(node.func, f"a call through '{root}' (only pl./pld./self. calls are allowed)")
            return Const(None, span)
        if root == "pl" and len(dd) == 2:
            name = dd[1]
            if name == "const":
                return self._const(node)
            if name in ("min", "max", "cast"):
                return Intrinsic(name, [self.expr(a) for a in node.args], span)
            if name in ("submit", "spmd_submit"):
                if not node.args or dotted(node.args[0]) is None or (dotted(node.args[0]) or [""])[0] != "self":
                    self.err(node, "bad-submit", f"pl.{name} needs self.<function> as first argument")
                    return Const(None, span)
                fn = (dotted(node.args[0]) or ["", ""])[-1]
                return FuncCall(fn, [self.expr(a) for a in node.args[1:]], self._kwargs(node), span, Span.of(node.args[0]), submit=name)
            if name in DSL_CONSTRUCTS:
                return Intrinsic(name, [self.expr(a) for a in node.args], span)
            if name in ("yield_", "cond", "func_attr", "dynamic"):
                self.err(node, "misplaced-construct", f"pl.{name}(...) cannot appear inside an expression")
                return Const(None, span)
        # an op call: pl.<ns>.<op>(...) or pld.[<ns>.]<op>(...)
        parts = dd[1:]
        last = parts[-1]
        if last.endswith("_") and keyword.iskeyword(last[:-1]):
            last = last[:-1]
        ir_name = ".".join(parts[:-1] + [last])
        if root == "pld":
            ir_name = "pld." + ir_name
        kwargs = self._kwargs(node)
        attrs = kwargs.pop("attrs", None)
        return OpCall(
            op=ir_name,
            printed=".".join(dd),
            args=[self.expr(a) for a in node.args],
            kwargs=kwargs,
            span=span,
            name_span=fspan,
            attrs=attrs if isinstance(attrs, DictExpr) else None,
        )

    def _const(self, node: ast.Call) -> Expr:
        span = Span.of(node)
        if len(node.args) != 2:
            self.err(node, "wrong-arity", "pl.const takes a value and a dtype")
            return Const(None, span)
        v = self.expr(node.args[0])
        neg = False
        if isinstance(v, UnaryOp) and v.op == "-" and isinstance(v.operand, Const):
            neg, v = True, v.operand
        dt = self.expr(node.args[1])
        if not isinstance(v, Const) or not isinstance(v.value, int | float | bool):
            self.err(node.args[0], "bad-const", "pl.const takes a numeric literal")
            return Const(None, span)
        if not isinstance(dt, DTypeRef):
            self.err(node.args[1], "unknown-dtype", "pl.const needs a dtype such as pl.INT64")
            return Const(v.value, span)
        value = v.value
        if neg:
            value = -value
        return Const(value, span, dt.name)
