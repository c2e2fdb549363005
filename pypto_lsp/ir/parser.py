"""Pass-dump text -> :class:`~pypto_lsp.ir.model.Program`, with ``ast`` only.

Nothing here executes dump text. Anything outside the dump grammar becomes an
error diagnostic at its span and parsing goes on, so a file with several
problems reports all of them.
"""

from __future__ import annotations

import ast
import codecs
import errno
import gc
import io
import keyword
import os
import re
import stat
import threading
import tokenize
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import diagnostics as D
from .model import (
    ArrayType,
    Assign,
    BinOp,
    Break,
    Const,
    Continue,
    DictExpr,
    DTypeRef,
    EnumRef,
    Expr,
    ExprStmt,
    For,
    FuncAttr,
    FuncCall,
    Function,
    If,
    Intrinsic,
    ListExpr,
    MemRefInfo,
    Name,
    OpaqueType,
    OpCall,
    Param,
    Pass,
    Program,
    Return,
    ScalarType,
    Scope,
    Span,
    Stmt,
    Subscript,
    Target,
    TensorType,
    TileType,
    TupleExpr,
    TupleType,
    Type,
    UnaryOp,
    Unpack,
    While,
    Yield,
    split_lines,
    trailing_yield,
)
from .names import BARE_LAYOUTS, DSL_CONSTRUCTS, DTYPES, ENUMS, LOOP_KINDS, SCOPE_KINDS
from .printer_forms import Parsed, blank_printer_forms

MAX_BYTES = 8 * 1024 * 1024
MAX_CHAIN = 256  # terms of one `a and b and ...` / `a < b < ...` chain
# the IR's widest integer is 64-bit; larger literals are typos (and overflow int->str limits downstream)
MAX_INT_LITERAL = 2**64
_HEADER = re.compile(r"^#\s*pypto\.program:\s*(\S+)")

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


class ParseResult:
    def __init__(self, program: Program | None, diagnostics: list[D.Diagnostic]) -> None:
        self.program = program
        self.diagnostics = diagnostics

    @property
    def errors(self) -> list[D.Diagnostic]:
        return [d for d in self.diagnostics if d.severity == D.ERROR]


def _dotted(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _is_pl_call(node: ast.expr, name: str) -> bool:
    """``node`` is ``pl.<name>(...)`` (cheaper than building the dotted name)."""
    if type(node) is not ast.Call:
        return False
    f = node.func  # type: ignore[attr-defined]
    return type(f) is ast.Attribute and f.attr == name and type(f.value) is ast.Name and f.value.id == "pl"


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _rewrite_xor(text: str) -> str | None:
    """The printer writes logical xor as the bare word ``xor``; turn it into ``^`` (same columns)."""
    if not re.search(r"\bxor\b", text):
        return None
    out = []
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int]] = [(t.start[0], t.start[1]) for t in toks if t.type == tokenize.NAME and t.string == "xor"]
    if not edits:
        return None
    for lineno, line in enumerate(lines, start=1):
        cols = [c for (ln, c) in edits if ln == lineno]
        for c in sorted(cols, reverse=True):
            line = line[:c] + "^  " + line[c + 3 :]
        out.append(line)
    return "".join(out)


class _Parser:
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

    # ------------------------------------------------------------------ module

    def parse(self, printer_forms: bool = True) -> Program | None:
        text = self.text
        parsed = text
        if printer_forms:
            parsed, self._forms = blank_printer_forms(text)
        try:
            tree = ast.parse(parsed, filename=self.filename or "<dump>", type_comments=False)
        except SyntaxError:
            fixed = _rewrite_xor(parsed)
            if fixed is None:
                raise
            tree = ast.parse(fixed, filename=self.filename or "<dump>")
        name = "Program"
        first = text.split("\n", 1)[0]
        m = _HEADER.match(first)
        if m:
            name = m.group(1)
        functions: list[Function] = []
        program_span = Span(1, 0, max(1, text.count("\n") + 1), 0)
        saw_program = False
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name not in ("pypto.language", "pypto.language.distributed"):
                        self.grammar(node, f"import of '{alias.name}'")
            elif isinstance(node, ast.ImportFrom):
                if node.module not in ("pypto", "pypto.language") or node.level:
                    self.grammar(node, f"import from '{node.module}'")
            elif isinstance(node, ast.Assign) and self._is_dynamic(node):
                continue
            elif isinstance(node, ast.ClassDef):
                if saw_program:
                    self.err(node, "duplicate-program", f"second @pl.program class '{node.name}' in one dump")
                saw_program = True
                if not any(_dotted(d) == ["pl", "program"] for d in node.decorator_list):
                    self.err(node, "missing-decorator", f"class '{node.name}' is not decorated with @pl.program")
                for d in node.decorator_list:
                    if _dotted(d) != ["pl", "program"]:
                        self.grammar(d, "a class decorator other than @pl.program")
                for k in node.bases + [kw.value for kw in node.keywords]:
                    self.grammar(k, "a class base")
                name = node.name if not m else name
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        f = self._guarded_function(item)
                        if f is not None:
                            functions.append(f)
                    elif isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant) and isinstance(item.value.value, str):
                        continue  # docstring
                    elif isinstance(item, ast.Pass):
                        continue
                    else:
                        self.grammar(item, f"'{type(item).__name__}' in the program class")
            elif isinstance(node, ast.FunctionDef):
                f = self._guarded_function(node)
                if f is not None:
                    functions.append(f)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                continue
            else:
                self.grammar(node, f"top-level '{type(node).__name__}'")
        seen: dict[str, Function] = {}
        for f in functions:
            if f.name in seen:
                self.err(
                    f.name_span, "duplicate-function", f"function '{f.name}' is defined twice (first at line {seen[f.name].span.line})"
                )
            else:
                seen[f.name] = f
        return Program(name, functions, dict(self.dyn), program_span, self.filename, text)

    def _is_dynamic(self, node: ast.Assign) -> bool:
        v = node.value
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(v, ast.Call)
            and _dotted(v.func) == ["pl", "dynamic"]
        ):
            self.dyn[node.targets[0].id] = Span.of(node.targets[0])
            a = v.args
            if len(a) != 1 or v.keywords or not (isinstance(a[0], ast.Constant) and isinstance(a[0].value, str)):
                self.grammar(v, "pl.dynamic(...) with anything but one name string")
            return True
        return False

    # ------------------------------------------------------------------ functions

    def _guarded_function(self, node: ast.FunctionDef) -> Function | None:
        try:
            return self.function(node)
        except RecursionError:  # a signature nested too deep (bodies are guarded per statement)
            self.err(node, "too-deep", "expression nesting is too deep to parse")
            return None

    def function(self, node: ast.FunctionDef) -> Function | None:
        if _is_dunder(node.name):
            self.grammar(node, f"dunder function name '{node.name}'")
        kind, level, role = "Opaque", None, None
        attrs: dict[str, Expr] = {}
        decorated = False
        for dec in node.decorator_list:
            dd = _dotted(dec.func if isinstance(dec, ast.Call) else dec)
            if dd != ["pl", "function"]:
                self.grammar(dec, "a decorator other than @pl.function")
                continue
            decorated = True
            if isinstance(dec, ast.Call):
                for a in dec.args:
                    self.grammar(a, "a positional @pl.function argument")
                for kw in dec.keywords:
                    if kw.arg == "type":
                        kind = self._enum_member(kw.value, "FunctionType") or kind
                    elif kw.arg == "level":
                        level = self._enum_member(kw.value, "Level")
                    elif kw.arg == "role":
                        role = self._enum_member(kw.value, "Role")
                    elif kw.arg == "attrs":
                        d = self.expr(kw.value)
                        if isinstance(d, DictExpr):
                            self._merge_attrs(attrs, d)
                    elif kw.arg in ("auto_scope", "external_source", "strict_ssa", "name"):
                        attrs[kw.arg] = self.expr(kw.value)
                    else:
                        self.err(kw.value, "unknown-keyword", f"@pl.function has no keyword '{kw.arg}'")
        if not decorated:
            self.err(node, "missing-decorator", f"function '{node.name}' is not decorated with @pl.function")
        fargs = node.args
        for extra in (fargs.vararg, fargs.kwarg):
            if extra is not None:
                self.grammar(extra, "*args/**kwargs")
        if fargs.kwonlyargs or fargs.posonlyargs or fargs.defaults or fargs.kw_defaults:
            self.grammar(node, "keyword-only, positional-only or default parameters")
        params: list[Param] = []
        has_self = False
        for i, arg in enumerate(fargs.args):
            if i == 0 and arg.arg == "self" and arg.annotation is None:
                has_self = True
                continue
            if _is_dunder(arg.arg):
                self.grammar(arg, f"dunder parameter name '{arg.arg}'")
            direction = "in"
            ptype: Type | None = None
            if arg.annotation is None:
                self.err(arg, "missing-annotation", f"parameter '{arg.arg}' has no type annotation")
            else:
                ann = arg.annotation
                if isinstance(ann, ast.Subscript) and _dotted(ann.value) in (["pl", "Out"], ["pl", "InOut"]):
                    direction = "out" if _dotted(ann.value) == ["pl", "Out"] else "inout"
                    ann = ann.slice
                ptype = self.type(ann)
            params.append(Param(arg.arg, ptype, direction, Span.of(arg)))
        returns: list[Type] = []
        if node.returns is not None:
            r = node.returns
            if isinstance(r, ast.Subscript) and _dotted(r.value) == ["tuple"]:
                elts = r.slice.elts if isinstance(r.slice, ast.Tuple) else [r.slice]
                for e in elts:
                    t = self.type(e)
                    if t is not None:
                        returns.append(t)
            elif not (isinstance(r, ast.Constant) and r.value is None):
                t = self.type(r)
                if t is not None:
                    returns.append(t)
        body_nodes = list(node.body)
        abstract = False
        if (
            len(body_nodes) == 1
            and isinstance(body_nodes[0], ast.Expr)
            and isinstance(body_nodes[0].value, ast.Constant)
            and body_nodes[0].value.value is Ellipsis
        ):
            abstract = True
            body_nodes = []
        body = self.block(body_nodes)
        # pl.func_attr({...}) prologue
        for s in body:
            if isinstance(s, FuncAttr):
                self._merge_attrs(attrs, s.attrs)
        name_span = self._name_span(node)
        return Function(
            name=node.name,
            kind=kind,
            params=params,
            returns=returns,
            body=body,
            span=Span.of(node),
            name_span=name_span,
            level=level,
            role=role,
            attrs=attrs,
            has_self=has_self,
            abstract=abstract,
        )

    def _name_span(self, node: ast.FunctionDef) -> Span:
        # "def name" sits on the line of the def keyword, after the decorators.
        line = node.lineno
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        col = src.find("def " + node.name)
        if col < 0:
            return Span(line, node.col_offset, line, node.col_offset + 3)
        return Span(line, col + 4, line, col + 4 + len(node.name))

    def _merge_attrs(self, attrs: dict[str, Expr], d: DictExpr) -> None:
        for k, v in zip(d.keys, d.values, strict=False):
            if isinstance(k, Const) and isinstance(k.value, str):
                attrs[k.value] = v

    def _enum_member(self, node: ast.expr, enum: str) -> str | None:
        dd = _dotted(node)
        if dd and len(dd) == 3 and dd[0] == "pl" and dd[1] == enum:
            members = ENUMS.get(enum)
            if members is not None and dd[2] not in members:
                self.err(node, "unknown-enum", f"pl.{enum} has no member '{dd[2]}'")
            return dd[2]
        self.err(node, "expected-enum", f"expected pl.{enum}.<member>")
        return None

    # ------------------------------------------------------------------ statements

    def block(self, nodes: list[ast.stmt]) -> list[Stmt]:
        out: list[Stmt] = []
        for n in nodes:
            try:
                s = self.stmt(n)
            except RecursionError:
                self.err(n, "too-deep", "expression nesting is too deep to parse")
                continue
            if s is not None:
                out.append(s)
        return out

    def target(self, node: ast.expr, ann: ast.expr | None = None) -> Target | None:
        if not isinstance(node, ast.Name):
            self.grammar(node, "an assignment target other than a plain name")
            return None
        if _is_dunder(node.id):
            self.grammar(node, f"dunder name '{node.id}'")
        t = self.type(ann) if ann is not None else None
        return Target(node.id, Span.of(node), t)

    def _call_name(self, node: ast.expr) -> list[str] | None:
        return _dotted(node.func) if isinstance(node, ast.Call) else None

    def stmt(self, node: ast.stmt) -> Stmt | None:
        span = Span.of(node)
        if isinstance(node, ast.AnnAssign):
            if node.value is None:
                self.grammar(node, "an annotation without a value")
                return None
            tgt = self.target(node.target, node.annotation)
            if tgt is None:
                return None
            if _is_pl_call(node.value, "yield_"):
                assert isinstance(node.value, ast.Call)
                return Yield([tgt], [self.expr(a) for a in node.value.args], span)
            return Assign(tgt, self.expr(node.value), span)
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                self.grammar(node, "a chained assignment")
                return None
            t = node.targets[0]
            if isinstance(t, ast.Tuple | ast.List):
                tgts = [x for x in (self.target(e) for e in t.elts) if x is not None]
                if _is_pl_call(node.value, "yield_"):
                    assert isinstance(node.value, ast.Call)
                    return Yield(tgts, [self.expr(a) for a in node.value.args], span)
                return Unpack(tgts, self.expr(node.value), span)
            tgt = self.target(t)
            if tgt is None:
                return None
            if _is_pl_call(node.value, "yield_"):
                assert isinstance(node.value, ast.Call)
                return Yield([tgt], [self.expr(a) for a in node.value.args], span)
            return Assign(tgt, self.expr(node.value), span)
        if isinstance(node, ast.Expr):
            v = node.value
            if _is_pl_call(v, "yield_"):
                assert isinstance(v, ast.Call)
                return Yield([], [self.expr(a) for a in v.args], span)
            if _is_pl_call(v, "func_attr"):
                assert isinstance(v, ast.Call)
                d = self.expr(v.args[0]) if v.args else None
                if not isinstance(d, DictExpr):
                    self.err(v, "bad-func-attr", "pl.func_attr takes one dict literal")
                    return None
                return FuncAttr(d, span)
            if _is_pl_call(v, "cond"):
                self.err(v, "misplaced-cond", "pl.cond(...) may only be the first statement of a pl.while_ loop body")
                return None
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                return None  # docstring / string statement: inert
            return ExprStmt(self.expr(v), span)
        if isinstance(node, ast.Return):
            vals: list[Expr] = []
            if node.value is not None:
                if isinstance(node.value, ast.Tuple):
                    vals = [self.expr(e) for e in node.value.elts]
                else:
                    vals = [self.expr(node.value)]
            return Return(vals, span)
        if isinstance(node, ast.For):
            return self.for_stmt(node)
        if isinstance(node, ast.While):
            if node.orelse:
                self.grammar(node.orelse[0], "while ... else")
            return While(self.expr(node.test), [], [], self.block(node.body), span, ssa=False, cond_span=Span.of(node.test))
        if isinstance(node, ast.If):
            return If(self.expr(node.test), self.block(node.body), self.block(node.orelse), span)
        if isinstance(node, ast.With):
            return self.with_stmt(node)
        if isinstance(node, ast.Break):
            return Break(span)
        if isinstance(node, ast.Continue):
            return Continue(span)
        if isinstance(node, ast.Pass):
            return Pass(span)
        what = {
            ast.Import: "an import inside a function",
            ast.ImportFrom: "an import inside a function",
            ast.FunctionDef: "a nested function",
            ast.ClassDef: "a nested class",
            ast.Global: "'global'",
            ast.Nonlocal: "'nonlocal'",
            ast.Delete: "'del'",
            ast.Raise: "'raise'",
            ast.Try: "'try'",
            ast.Assert: "'assert'",
            ast.AugAssign: "an augmented assignment",
            ast.AsyncFunctionDef: "an async function",
        }.get(type(node), f"statement '{type(node).__name__}'")
        self.grammar(node, what)
        return None

    def _loop_target(self, node: ast.expr) -> tuple[Target | None, list[Target]]:
        if isinstance(node, ast.Name):
            return self.target(node), []
        if isinstance(node, ast.Tuple) and len(node.elts) == 2 and isinstance(node.elts[1], ast.Tuple):
            var = self.target(node.elts[0])
            its = [x for x in (self.target(e) for e in node.elts[1].elts) if x is not None]
            return var, its
        self.grammar(node, "this loop target")
        return None, []

    def for_stmt(self, node: ast.For) -> Stmt | None:
        span = Span.of(node)
        header = Span(node.lineno, node.col_offset, node.iter.end_lineno or node.lineno, node.iter.end_col_offset or 0)
        if node.orelse:
            self.grammar(node.orelse[0], "for ... else")
        it = node.iter
        dd = _dotted(it.func) if isinstance(it, ast.Call) else None
        if not isinstance(it, ast.Call) or dd is None or len(dd) != 2 or dd[0] != "pl":
            self.grammar(it, "a loop over something other than pl.range/parallel/unroll/pipeline/while_/spmd/split_aiv")
            return None
        kind = dd[1]
        kwargs = {kw.arg: kw for kw in it.keywords if kw.arg}
        for kw in it.keywords:
            if kw.arg is None:
                self.grammar(kw.value, "**kwargs")
        init_values = []
        if "init_values" in kwargs:
            iv = kwargs["init_values"].value
            if isinstance(iv, ast.Tuple | ast.List):
                init_values = [self.expr(e) for e in iv.elts]
            else:
                self.err(iv, "bad-init-values", "init_values must be a tuple")
        if kind == "while_":
            if not isinstance(node.target, ast.Tuple):
                self.grammar(node.target, "a pl.while_ target that is not a tuple")
                return None
            its = [x for x in (self.target(e) for e in node.target.elts) if x is not None]
            body_nodes = list(node.body)
            cond: Expr = Const(True, span)
            cond_span = span
            if body_nodes and isinstance(body_nodes[0], ast.Expr) and _is_pl_call(body_nodes[0].value, "cond"):
                c = body_nodes[0].value
                assert isinstance(c, ast.Call)
                cond = self.expr(c.args[0]) if c.args else Const(True, Span.of(c))
                cond_span = Span.of(body_nodes[0])
                body_nodes = body_nodes[1:]
            else:
                self.err(node, "missing-cond", "a pl.while_ loop body must start with pl.cond(<condition>)")
            return While(cond, its, init_values, self.block(body_nodes), span, ssa=True, cond_span=cond_span)
        if kind not in LOOP_KINDS:
            self.grammar(it, f"loop iterator pl.{kind}")
            return None
        var, its = self._loop_target(node.target)
        args = [self.expr(a) for a in it.args]
        start: Expr | None = None
        step: Expr | None = None
        if kind in ("spmd", "split_aiv"):
            if not args:
                self.err(it, "wrong-arity", f"pl.{kind} needs a count")
                return None
            stop = args[0]
        else:
            if not 1 <= len(args) <= 3:
                self.err(it, "wrong-arity", f"pl.{kind} takes 1 to 3 positional bounds, got {len(args)}")
                return None
            if len(args) == 1:
                stop = args[0]
            else:
                start, stop = args[0], args[1]
                step = args[2] if len(args) == 3 else None
        extra = {k: self.expr(v.value) for k, v in kwargs.items() if k != "init_values"}
        if len(its) != len(init_values):
            self.err(
                node.target,
                "iter-args-mismatch",
                f"loop declares {len(its)} iter_args but init_values has {len(init_values)} values",
            )
        body = self.block(node.body)
        if its:
            last = trailing_yield(body)
            if last is None:
                self.err(node, "missing-yield", "a loop with iter_args must end with pl.yield_(...)")
            elif len(last.values) != len(its):
                self.err(last.span, "yield-mismatch", f"pl.yield_ gives {len(last.values)} values for {len(its)} iter_args")
        f = For(kind, var, its, start, stop, step, init_values, body, span, extra)
        f.header_span = header
        return f

    def with_stmt(self, node: ast.With) -> Stmt | None:
        span = Span.of(node)
        if len(node.items) != 1:
            self.grammar(node, "a with statement with several items")
            return None
        item = node.items[0]
        ce = item.context_expr
        dd = _dotted(ce.func) if isinstance(ce, ast.Call) else None
        if not isinstance(ce, ast.Call) or dd is None or len(dd) != 2 or dd[0] != "pl" or dd[1] not in SCOPE_KINDS:
            self.grammar(ce, "a with statement other than pl.at/cluster/scope/spmd")
            return None
        as_name = self.target(item.optional_vars) if item.optional_vars is not None else None
        kwargs = {kw.arg: self.expr(kw.value) for kw in ce.keywords if kw.arg}
        args = [self.expr(a) for a in ce.args]
        return Scope(dd[1], kwargs, args, as_name, self.block(node.body), span)

    # ------------------------------------------------------------------ expressions

    def expr(self, node: ast.expr) -> Expr:
        t = type(node)
        if t is ast.Call:  # the most common forms first: op calls and pl.<Enum>.<member>
            return self.call(node)  # type: ignore[arg-type]
        if t is ast.Attribute:
            return self.attribute(node)  # type: ignore[arg-type]
        span = Span.of(node)
        if isinstance(node, ast.Name):
            if _is_dunder(node.id):
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
        dd = _dotted(node)
        if dd is None or dd[0] not in ("pl", "pld"):
            root = dd[0] if dd else "an expression"
            self.grammar(node, f"attribute access on '{root}' (only pl./pld. names are allowed)")
            return Const(None, span)
        if any(_is_dunder(p) for p in dd):
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
        dd = _dotted(node.func)
        if dd is None:
            self.grammar(node.func, "a call of a computed callee")
            return Const(None, span)
        if any(_is_dunder(p) for p in dd):
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
                if not node.args or _dotted(node.args[0]) is None or (_dotted(node.args[0]) or [""])[0] != "self":
                    self.err(node, "bad-submit", f"pl.{name} needs self.<function> as first argument")
                    return Const(None, span)
                fn = (_dotted(node.args[0]) or ["", ""])[-1]
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

    # ------------------------------------------------------------------ types

    def type(self, node: ast.expr) -> Type | None:
        if type(node) is ast.Name and self._forms:
            key = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
            if type(self._forms.get(key)) is not MemRefInfo:
                parsed = self._forms.pop(key, None)
                if parsed is not None:
                    return parsed  # type: ignore[return-value]
        span = Span.of(node)
        if isinstance(node, ast.Attribute | ast.Name):
            dd = _dotted(node)
            if dd in (
                ["pl", "Ptr"],
                ["pl", "MemRefType"],
                ["pl", "UnknownType"],
                ["pl", "PrefetchAsyncContext"],
                ["pl", "AsyncEvent"],
                ["pl", "AsyncSession"],
                ["pld", "WindowBufferType"],
                ["pld", "CommCtxType"],
            ):
                assert dd is not None
                return OpaqueType(dd[-1], span)
            if dd == ["pl", "Tensor"] or dd == ["pl", "Tile"]:
                self.err(node, "bad-type", f"{'.'.join(dd)} needs [shape, dtype]")
                return None
            self.err(node, "unknown-type", f"unknown type '{ast.unparse(node)}'")
            return None
        if isinstance(node, ast.Subscript):
            dd = _dotted(node.value)
            items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            if dd in (["pl", "Tensor"], ["pld", "DistributedTensor"], ["pl", "Tile"]):
                return self._shaped(dd[-1], items, span, distributed=dd[0] == "pld")
            if dd == ["pl", "Scalar"]:
                dt = self._dtype(items[0]) if len(items) == 1 else None
                if len(items) != 1:
                    self.err(node, "bad-type", "pl.Scalar takes exactly one dtype")
                return ScalarType(dt or "INDEX", span)
            if dd == ["pl", "Tuple"]:
                if len(items) == 1 and isinstance(items[0], ast.Tuple) and not items[0].elts:
                    return TupleType([], span)
                return TupleType([t for t in (self.type(i) for i in items) if t is not None], span)
            if dd == ["pl", "Array"]:
                if len(items) < 2:
                    self.err(node, "bad-type", "pl.Array takes dims and a dtype")
                    return None
                dt = self._dtype(items[-1]) or "INT32"
                return ArrayType([self.expr(i) for i in items[:-1]], dt, span)
            if dd in (["pl", "Out"], ["pl", "InOut"]):
                self.err(node, "misplaced-direction", f"{'.'.join(dd)}[...] is only allowed on function parameters")
                return self.type(node.slice)
        self.err(node, "unknown-type", f"unknown type '{ast.unparse(node)[:60]}'")
        return None

    def _dtype(self, node: ast.expr) -> str | None:
        dd = _dotted(node)
        if dd and len(dd) == 2 and dd[0] == "pl":
            if dd[1] in DTYPES:
                return dd[1]
            self.err(node, "unknown-dtype", f"unknown dtype 'pl.{dd[1]}'", "known dtypes: " + ", ".join(sorted(DTYPES)))
            return None
        self.err(node, "unknown-dtype", f"expected a dtype (pl.FP32, ...), got '{ast.unparse(node)[:40]}'")
        return None

    def _dims(self, node: ast.expr) -> list[Expr]:
        if isinstance(node, ast.List | ast.Tuple):
            return [self.expr(e) for e in node.elts]
        self.err(node, "bad-type", "expected a list of dimensions")
        return []

    def _shaped(self, kind: str, items: list[ast.expr], span: Span, distributed: bool) -> Type | None:
        if len(items) < 2:
            self.err(span, "bad-type", f"{kind} needs [shape, dtype]")
            return None
        shape = self._dims(items[0])
        dt = self._dtype(items[1]) or "FP32"
        if kind == "Tile":
            tile = TileType(shape, dt, span)
            for it in items[2:]:
                self._tile_item(tile, it)
            return tile
        tensor = TensorType(shape, dt, span, distributed=distributed)
        for it in items[2:]:
            self._tensor_item(tensor, it)
        return tensor

    def _memref(self, node: ast.expr) -> MemRefInfo | None:
        call = node.value if isinstance(node, ast.Subscript) else node
        if not (isinstance(call, ast.Call) and _dotted(call.func) == ["pl", "MemRef"]):
            return None
        base: str | None = None
        off: Expr | None = None
        size: Expr | None = None
        if call.args:
            b = call.args[0]
            if isinstance(b, ast.Name):
                base = b.id
            elif isinstance(b, ast.Constant) and isinstance(b.value, str):
                base = b.value
            else:
                self.err(b, "bad-memref", "pl.MemRef base must be a name or a string")
        # offsets and sizes are addresses: numerically irrelevant, kept only when they are plain literals
        for i, a in enumerate(call.args[1:3]):
            if isinstance(a, ast.Constant) and isinstance(a.value, int | float):
                if i == 0:
                    off = Const(a.value, Span.of(a))
                else:
                    size = Const(a.value, Span.of(a))
            elif (
                i == 0
                and isinstance(a, ast.Call)
                and not a.keywords
                and len(a.args) == 2
                and _dotted(a.func) == ["pl", "const"]
                and isinstance(a.args[0], ast.Constant)
                and type(a.args[0].value) is int
                and _dotted(a.args[1]) == ["pl", "INT64"]
            ):
                # the byte address after AllocateMemoryAddr: pl.const(N, pl.INT64)
                off = Const(a.args[0].value, Span.of(a.args[0]), "INT64")
        for a in call.args[1:]:
            if isinstance(a, ast.Constant) or (
                isinstance(a, ast.Call)
                and not a.keywords
                and len(a.args) == 2
                and isinstance(a.args[0], ast.Constant)
                and _dotted(a.func) == ["pl", "const"]
            ):
                continue  # the printer's literal forms: nothing to inspect
            for sub in ast.walk(a):
                if isinstance(sub, ast.Name) and _is_dunder(sub.id) or isinstance(sub, ast.Attribute) and _is_dunder(sub.attr):
                    self.grammar(sub, "a dunder name")
        return MemRefInfo(base, off, size, Span.of(node))

    def _view_kwargs(self, node: ast.Call) -> dict[str, ast.expr]:
        for a in node.args:
            self.err(a, "bad-type", "views take keyword arguments only")
        return {kw.arg: kw.value for kw in node.keywords if kw.arg}

    def _placeholder_memref(self, it: ast.expr) -> MemRefInfo | None:
        if type(it) is ast.Name and self._forms:
            key = (it.lineno, it.col_offset)
            if type(self._forms.get(key)) is MemRefInfo:
                return self._forms.pop(key)  # type: ignore[return-value]
        return None

    def _tile_item(self, tile: TileType, it: ast.expr) -> None:
        mr = self._placeholder_memref(it) or self._memref(it)
        if mr is not None:
            tile.memref = mr
            return
        dd = _dotted(it)
        if dd and len(dd) == 3 and dd[0] == "pl" and dd[1] in ("Mem", "MemorySpace") and isinstance(it, ast.Attribute):
            e = self.attribute(it)  # validates the member
            if isinstance(e, EnumRef):
                tile.memspace = e.member
            return
        if isinstance(it, ast.Call) and _dotted(it.func) == ["pl", "TileView"]:
            kw = self._view_kwargs(it)
            if "valid_shape" in kw:
                tile.valid_shape = self._dims(kw["valid_shape"])
            for k, v in kw.items():
                if k == "blayout":
                    e = self.expr(v)
                    tile.blayout = e.member if isinstance(e, EnumRef) else None
                elif k not in ("valid_shape",):
                    self.expr(v)
            return
        self.err(it, "bad-type", f"unexpected tile type item '{ast.unparse(it)[:60]}'")

    def _tensor_item(self, tensor: TensorType, it: ast.expr) -> None:
        mr = self._placeholder_memref(it) or self._memref(it)
        if mr is not None:
            tensor.memref = mr
            return
        if isinstance(it, ast.Call) and _dotted(it.func) == ["pl", "TensorView"]:
            kw = self._view_kwargs(it)
            if "valid_shape" in kw:
                tensor.valid_shape = self._dims(kw["valid_shape"])
            if "layout" in kw:
                e = self.expr(kw["layout"])
                tensor.layout = e.member if isinstance(e, EnumRef) else None
            for k, v in kw.items():
                if k not in ("valid_shape", "layout"):
                    self.expr(v)
            return
        if isinstance(it, ast.Constant) and isinstance(it.value, str):
            return  # "window_buffer=<name>" marker of EXPLICIT dumps
        dd = _dotted(it)
        if dd and len(dd) == 2 and dd[0] == "pl" and dd[1] in BARE_LAYOUTS:
            tensor.layout = dd[1]
            return
        self.err(it, "bad-type", f"unexpected tensor type item '{ast.unparse(it)[:60]}'")


def _decode_error_span(data: bytes, exc: UnicodeDecodeError) -> Span:
    line = data.count(b"\n", 0, exc.start) + 1
    col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1)
    return Span(line, col, line, col + 1)


def read_dump(path: str | Path) -> bytes:
    """A dump file's bytes, at most ``MAX_BYTES + 1`` of them: a bigger file (a sparse 1 GB one)
    is never read whole, and :func:`parse_bytes` refuses what is over the limit. A FIFO, device
    or folder is refused without a blocking read (a FIFO would hang). Raises OSError (unreadable:
    permissions, gone, not a regular file), with ``strerror`` saying why."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        left = MAX_BYTES + 1
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse_bytes(data: bytes, filename: str | None = None) -> ParseResult:
    """Parse raw file content; binary, non-UTF-8 and oversized input become diagnostics."""
    if len(data) > MAX_BYTES:
        return ParseResult(
            None,
            [D.error(None, "too-large", f"file is larger than {MAX_BYTES // 2**20} MiB, the most a pass dump may be; not parsed")],
        )
    if b"\x00" in data[:65536] or b"\x00" in data:
        nul = data.index(b"\x00")
        line = data.count(b"\n", 0, nul) + 1
        return ParseResult(None, [D.error(Span(line, 0, line, 1), "binary", "this is a binary file (NUL byte), not a pass dump")])
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]  # Python and editors accept a UTF-8 signature
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ParseResult(None, [D.error(_decode_error_span(data, exc), "encoding", f"not UTF-8: {exc.reason} at byte {exc.start}")])
    return parse_text(text, filename)


_gc_lock = threading.Lock()
_gc_depth = 0
_gc_was_enabled = False


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building a tree: a parse allocates tens of thousands of
    acyclic objects, and the collections they trigger (gen 2 walks the whole heap of a
    long-running server) cost 15-30% of a parse and its worst outliers. Nested and
    thread-safe; the GC is restored to what it was."""
    global _gc_depth, _gc_was_enabled
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_was_enabled:
                gc.enable()


def parse_text(text: str, filename: str | None = None, *, printer_forms: bool = True) -> ParseResult:
    """Parse dump text into a Program plus every grammar diagnostic found on the way.

    ``printer_forms=False`` reads every annotation through ``ast`` instead of taking the
    :mod:`~pypto_lsp.ir.printer_forms` shortcut; the result is the same, only slower.
    """
    with _gc_paused():
        return _parse_text(text, filename, printer_forms)


def _parse_text(text: str, filename: str | None, printer_forms: bool) -> ParseResult:
    if len(text) > MAX_BYTES:
        return ParseResult(
            None,
            [D.error(None, "too-large", f"file is {len(text) / 1e6:.1f} MB; pass dumps above {MAX_BYTES // 2**20} MiB are not parsed")],
        )
    if "\x00" in text:
        return ParseResult(None, [D.error(None, "binary", "this is a binary file (NUL character), not a pass dump")])
    if text.startswith("\ufeff"):
        text = text[1:]  # a UTF-8 signature, which Python source may carry
    p = _Parser(text, filename)
    try:
        program = p.parse(printer_forms)
        if p._forms:  # a placeholder stood where no type item may: read the text as written
            p = _Parser(text, filename)
            program = p.parse(printer_forms=False)
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = max((exc.offset or 1) - 1, 0)
        end_line = exc.end_lineno or line
        end_col = (
            (exc.end_offset - 1) if exc.end_offset and exc.end_offset > 0 and end_line == line and exc.end_offset - 1 > col else col + 1
        )
        msg = exc.msg
        if isinstance(exc, IndentationError) or "indent" in msg:
            code = "indentation"
        else:
            code = "syntax"
        return ParseResult(None, [D.error(Span(line, col, end_line, end_col), code, f"syntax error: {msg}")])
    except (RecursionError, MemoryError):
        return ParseResult(None, [D.error(None, "too-deep", "expression nesting is too deep to parse")])
    except ValueError as exc:  # e.g. source contains NUL after decoding
        return ParseResult(None, [D.error(None, "syntax", f"cannot parse: {exc}")])
    return ParseResult(program, p.diags)


def loads(text: str, filename: str | None = None) -> Program:
    """Parse a dump; raise :class:`IRSyntaxError`/:class:`IRError` on the first error."""
    res = parse_text(text, filename)
    errs = res.errors
    if errs:
        first = errs[0]
        cls = (
            D.IRSyntaxError
            if first.code in ("syntax", "indentation", "outside-grammar", "binary", "encoding", "too-large", "too-deep")
            else D.IRError
        )
        raise cls(first, filename)
    assert res.program is not None
    return res.program


def load(path: str | Path) -> Program:
    p = Path(path)
    res = parse_bytes(read_dump(p), str(p))
    errs = res.errors
    if errs:
        raise D.IRError(errs[0], str(p))
    assert res.program is not None
    return res.program
