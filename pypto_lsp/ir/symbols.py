"""The symbol index of a parsed dump, and the navigation it answers: go-to-definition, references,
outline (the hover text is :mod:`pypto_lsp.server.hover_text`).

Pure functions over the IR of :mod:`pypto_lsp.ir.model`; no JSON-RPC, no LSP
types, no torch (MLIR's language server keeps ``findHover``/``getLocationsOf``
apart from its protocol layer the same way). The LSP glue converts positions
and :class:`~pypto_lsp.ir.model.Span` values.

Positions taken here are LSP style: 0-based line and 0-based character. IR
spans are 1-based lines with 0-based columns, so IR line = ``line0 + 1``.

A :class:`SymbolIndex` is built once per parse. It records every leaf the
requests care about (variable definitions and uses, function definitions and
call sites, op callee names, dtype and enum references) with its span, sorted,
so finding what sits under the cursor is one binary search, and definitions /
uses are dictionary look-ups keyed by (function, name). Each function has its
own namespace; ``pl.dynamic`` dims declared at module level are visible in all
of them.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from .model import (
    ArrayType,
    Assign,
    BinOp,
    Const,
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
    OpCall,
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
from .printer import expr_str

__all__ = [
    "DTYPE",
    "ENUM",
    "FUNC_DEF",
    "FUNC_REF",
    "IDENT_CHARS",
    "MODULE",
    "OP",
    "VAR_DEF",
    "VAR_USE",
    "Definition",
    "Occurrence",
    "SymbolIndex",
    "SymbolInfo",
    "definition",
    "document_symbols",
    "function_detail",
    "index_for",
    "references",
    "span_key",
]

IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")
_COL_BITS = 20  # occurrence key = line << 20 | col (columns stay far below 2**20)

# occurrence kinds
VAR_DEF = "var_def"
VAR_USE = "var_use"
FUNC_DEF = "func_def"
FUNC_REF = "func_ref"
OP = "op"
DTYPE = "dtype"
ENUM = "enum"

MODULE = -1  # function index of module-level names (pl.dynamic dims)


# --------------------------------------------------------------------------- public data


@dataclass(frozen=True, slots=True)
class SymbolInfo:
    """One outline entry (maps onto an LSP DocumentSymbol)."""

    name: str
    kind: str  # "function" | "loop" | "scope" | "if" | "variable"
    detail: str
    span: Span  # whole construct
    selection: Span  # the name (function name / loop var / scope keyword)
    children: list[SymbolInfo] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Definition:
    """One place a variable gets a value.

    ``kind``: param | assign | unpack | loop_var | iter_arg | yield | scope_as | dynamic.
    ``node`` is the Param / statement that defines it (For/While for loop vars and
    iter_args); ``index`` the position among that node's targets.
    """

    name: str
    span: Span
    kind: str
    func: int
    type: Type | None = None
    node: object | None = None
    index: int = 0


class Occurrence:
    """A leaf under the cursor: a variable def/use, a function def/ref, an op name, a dtype or enum."""

    __slots__ = ("col", "end_col", "end_line", "func", "kind", "line", "name", "obj")

    def __init__(self, span: Span, kind: str, func: int, name: str, obj: object = None) -> None:
        self.line = span.line
        self.col = span.col
        self.end_line = span.end_line
        self.end_col = span.end_col
        self.kind = kind
        self.func = func
        self.name = name
        self.obj = obj

    @property
    def span(self) -> Span:
        return Span(self.line, self.col, self.end_line, self.end_col)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Occurrence({self.kind} {self.name!r} @{self.line}:{self.col}-{self.end_line}:{self.end_col} f{self.func})"


# --------------------------------------------------------------------------- the index


class SymbolIndex:
    """Per-parse record of definitions, uses and cursor targets (built once, queried many times)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.lines: list[str] = split_lines(program.source) if program.source else []
        self.occurrences: list[Occurrence] = []
        self._keys: list[int] = []
        # (function index, name) -> definitions / use spans; function index -1 = module level
        self.defs: dict[tuple[int, str], list[Definition]] = {}
        self.uses: dict[tuple[int, str], list[Span]] = {}
        self.functions: dict[str, int] = {}
        # function name -> (caller function index, span of the callee name only)
        self.calls: dict[str, list[tuple[int, Span]]] = {}
        self.op_sites: dict[str, list[Span]] = {}

    # ------------------------------------------------------------------ construction

    @staticmethod
    def build(program: Program) -> SymbolIndex:
        idx = SymbolIndex(program)
        idx._build()
        return idx

    def _build(self) -> None:
        p = self.program
        for name, span in p.dynamic_dims.items():
            self._def(Definition(name, span, "dynamic", MODULE))
        for fi, fn in enumerate(p.functions):
            self.functions.setdefault(fn.name, fi)
        for fi, fn in enumerate(p.functions):
            self.occurrences.append(Occurrence(fn.name_span, FUNC_DEF, fi, fn.name, fn))
            self._function(fi, fn)
        # names no function defines but the module declares (pl.dynamic) resolve to the module
        if p.dynamic_dims:
            for (fi, name), spans in list(self.uses.items()):
                if fi != MODULE and name in p.dynamic_dims and (fi, name) not in self.defs:
                    self.uses.setdefault((MODULE, name), []).extend(spans)
        for spans in self.uses.values():
            if len(spans) > 1:
                spans[:] = sorted(set(spans), key=span_key)
        occ = self.occurrences
        occ.sort(key=lambda o: (o.line, o.col))
        self._keys = [o.line << _COL_BITS | o.col for o in occ]

    def _def(self, d: Definition) -> None:
        self.defs.setdefault((d.func, d.name), []).append(d)
        self.occurrences.append(Occurrence(d.span, VAR_DEF, d.func, d.name, d))

    def _target(self, fi: int, t: Target, kind: str, node: object, index: int = 0) -> None:
        self._def(Definition(t.name, t.span, kind, fi, t.type, node, index))
        if t.type is not None:
            self._type(fi, t.type)

    def _use(self, fi: int, name: str, span: Span) -> None:
        lst = self.uses.get((fi, name))
        if lst is None:
            self.uses[(fi, name)] = [span]
        else:
            lst.append(span)
        self.occurrences.append(Occurrence(span, VAR_USE, fi, name))

    def _function(self, fi: int, fn: Function) -> None:
        for p in fn.params:
            nspan = Span(p.span.line, p.span.col, p.span.line, p.span.col + len(p.name))
            self._def(Definition(p.name, nspan, "param", fi, p.type, p))
            if p.type is not None:
                self._type(fi, p.type)
        for r in fn.returns:
            self._type(fi, r)
        for v in fn.attrs.values():
            self._expr(fi, v)
        self._block(fi, fn.body)

    def _block(self, fi: int, body: list[Stmt]) -> None:
        ex = self._expr
        for s in body:
            t = type(s)
            if t is Assign:
                assert isinstance(s, Assign)
                self._target(fi, s.target, "assign", s)
                ex(fi, s.value)
            elif t is Yield:
                assert isinstance(s, Yield)
                for i, tg in enumerate(s.targets):
                    self._target(fi, tg, "yield", s, i)
                for v in s.values:
                    ex(fi, v)
            elif t is ExprStmt:
                assert isinstance(s, ExprStmt)
                ex(fi, s.value)
            elif t is For:
                assert isinstance(s, For)
                if s.var is not None:
                    self._target(fi, s.var, "loop_var", s)
                for i, tg in enumerate(s.iter_args):
                    self._target(fi, tg, "iter_arg", s, i)
                for e in (s.start, s.stop, s.step):
                    if e is not None:
                        ex(fi, e)
                for e in s.init_values:
                    ex(fi, e)
                for e in s.kwargs.values():
                    ex(fi, e)
                self._block(fi, s.body)
            elif t is Unpack:
                assert isinstance(s, Unpack)
                for i, tg in enumerate(s.targets):
                    self._target(fi, tg, "unpack", s, i)
                ex(fi, s.value)
            elif t is Return:
                assert isinstance(s, Return)
                for e in s.values:
                    ex(fi, e)
            elif t is If:
                assert isinstance(s, If)
                ex(fi, s.cond)
                self._block(fi, s.then)
                self._block(fi, s.orelse)
            elif t is Scope:
                assert isinstance(s, Scope)
                for e in s.args:
                    ex(fi, e)
                for e in s.kwargs.values():
                    ex(fi, e)
                if s.as_name is not None:
                    self._target(fi, s.as_name, "scope_as", s)
                self._block(fi, s.body)
            elif t is While:
                assert isinstance(s, While)
                for i, tg in enumerate(s.iter_args):
                    self._target(fi, tg, "iter_arg", s, i)
                for e in s.init_values:
                    ex(fi, e)
                ex(fi, s.cond)
                self._block(fi, s.body)
            elif t is FuncAttr:
                pass  # merged into Function.attrs, walked there

    def _expr(self, fi: int, e: Expr) -> None:
        t = type(e)
        if t is Const:
            return
        if t is Name:
            assert isinstance(e, Name)
            self._use(fi, e.id, e.span)
        elif t is OpCall:
            assert isinstance(e, OpCall)
            self.occurrences.append(Occurrence(e.name_span, OP, fi, e.op, e))
            self.op_sites.setdefault(e.op, []).append(e.name_span)
            for a in e.args:
                self._expr(fi, a)
            for k, v in e.kwargs.items():
                if k == "peer_func" and type(v) is Const:
                    assert isinstance(v, Const)
                    self._peer_func(fi, v)
                else:
                    self._expr(fi, v)
            if e.attrs is not None:
                self._expr(fi, e.attrs)
        elif t is BinOp:
            assert isinstance(e, BinOp)
            self._expr(fi, e.left)
            self._expr(fi, e.right)
        elif t is ListExpr or t is TupleExpr:
            assert isinstance(e, ListExpr | TupleExpr)
            for i in e.items:
                self._expr(fi, i)
        elif t is DTypeRef:
            assert isinstance(e, DTypeRef)
            self.occurrences.append(Occurrence(e.span, DTYPE, fi, e.name, e))
        elif t is EnumRef:
            assert isinstance(e, EnumRef)
            self.occurrences.append(Occurrence(e.span, ENUM, fi, f"{e.enum}.{e.member}", e))
        elif t is FuncCall:
            assert isinstance(e, FuncCall)
            self.occurrences.append(Occurrence(e.name_span, FUNC_REF, fi, e.func, e))
            self.calls.setdefault(e.func, []).append((fi, _tail_span(e.name_span, e.func)))
            for a in e.args:
                self._expr(fi, a)
            for v in e.kwargs.values():
                self._expr(fi, v)
        elif t is UnaryOp:
            assert isinstance(e, UnaryOp)
            self._expr(fi, e.operand)
        elif t is Subscript:
            assert isinstance(e, Subscript)
            self._expr(fi, e.value)
            self._expr(fi, e.index)
        elif t is Intrinsic:
            assert isinstance(e, Intrinsic)
            for a in e.args:
                self._expr(fi, a)
        elif t is DictExpr:
            assert isinstance(e, DictExpr)
            for v in e.values:
                self._expr(fi, v)

    def _peer_func(self, fi: int, c: Const) -> None:
        if not isinstance(c.value, str) or c.value not in self.functions:
            return
        s = c.span
        if s.line != s.end_line or s.end_col - s.col != len(c.value) + 2:
            return
        inner = Span(s.line, s.col + 1, s.line, s.end_col - 1)
        self.occurrences.append(Occurrence(inner, FUNC_REF, fi, c.value, c))
        self.calls.setdefault(c.value, []).append((fi, inner))

    def _type(self, fi: int, t: Type) -> None:
        tt = type(t)
        if tt is TensorType or tt is TileType:
            assert isinstance(t, TensorType | TileType)
            for d in t.shape:
                self._expr(fi, d)
            if t.valid_shape:
                for d in t.valid_shape:
                    self._expr(fi, d)
            if t.memref is not None:
                self._memref(fi, t.memref)
        elif tt is TupleType:
            assert isinstance(t, TupleType)
            for i in t.items:
                self._type(fi, i)
        elif tt is ArrayType:
            assert isinstance(t, ArrayType)
            for d in t.shape:
                self._expr(fi, d)

    def _memref(self, fi: int, m: MemRefInfo) -> None:
        if m.offset is not None:
            self._expr(fi, m.offset)
        if m.size is not None:
            self._expr(fi, m.size)
        base = m.base
        if not base or not 0 < m.span.line <= len(self.lines):
            return
        # the model keeps only the base's text: find it after "pl.MemRef(" (string bases are quoted)
        line = self.lines[m.span.line - 1]
        i = line.find("(", m.span.col)
        if i < 0:
            return
        i += 1
        while i < len(line) and line[i] == " ":
            i += 1
        if line.startswith(base, i) and (i + len(base) == len(line) or line[i + len(base)] not in IDENT_CHARS):
            self._use(fi, base, Span(m.span.line, i, m.span.line, i + len(base)))

    # ------------------------------------------------------------------ queries

    def at(self, line0: int, col0: int) -> Occurrence | None:
        """The leaf under an LSP position (0-based line and character); a cursor just after a word counts."""
        line = line0 + 1
        key = line << _COL_BITS | col0
        i = bisect_right(self._keys, key) - 1
        if i < 0:
            return None
        occ = self.occurrences[i]
        end = (occ.end_line, occ.end_col)
        if (line, col0) < end:
            return occ
        if (line, col0) == end:  # cursor right after the identifier
            return occ
        return None

    def resolve(self, func: int, name: str) -> tuple[int, str]:
        """The namespace a name lives in: its function's, else the module's pl.dynamic dims."""
        if (func, name) in self.defs:
            return (func, name)
        if (MODULE, name) in self.defs:
            return (MODULE, name)
        return (func, name)

    def definitions_of(self, func: int, name: str) -> list[Definition]:
        return self.defs.get(self.resolve(func, name), [])

    def uses_of(self, func: int, name: str) -> list[Span]:
        return self.uses.get(self.resolve(func, name), [])

    def function_at(self, name: str) -> Function | None:
        fi = self.functions.get(name)
        return self.program.functions[fi] if fi is not None else None

    def source(self, span: Span) -> str:
        """Source text of a one-line span ('' when it spans lines or the source is missing)."""
        if span.line != span.end_line or not 0 < span.line <= len(self.lines):
            return ""
        return self.lines[span.line - 1][span.col : span.end_col]

    # ------------------------------------------------------------------ types

    def type_of(self, func: int, name: str) -> tuple[Type | None, str]:
        """Declared or inferred type of a variable, with a note saying where an inferred type came from."""
        return self._type_of(self.resolve(func, name), 0)

    def _type_of(self, key: tuple[int, str], depth: int) -> tuple[Type | None, str]:
        ds = self.defs.get(key, [])
        for d in ds:
            if d.type is not None:
                return d.type, ""
        if depth > 12:
            return None, ""
        for d in ds:
            t, note = self._infer(d, depth)
            if t is not None:
                return t, note
        return None, ""

    def _infer(self, d: Definition, depth: int) -> tuple[Type | None, str]:
        node = d.node
        if d.kind == "loop_var":
            return ScalarType("INDEX", d.span), "loop counter"
        if d.kind == "iter_arg" and isinstance(node, For | While):
            last = trailing_yield(node.body)
            if last is not None and d.index < len(last.targets) and last.targets[d.index].type is not None:
                rv = last.targets[d.index]
                return rv.type, f"type of the loop's return var `{rv.name}`"
            if d.index < len(node.init_values):
                t, _ = self._expr_type(d.func, node.init_values[d.index], depth)
                if t is not None:
                    return t, "type of the init value"
            return None, ""
        if d.kind == "yield" and isinstance(node, Yield) and d.index < len(node.values):
            t, _ = self._expr_type(d.func, node.values[d.index], depth)
            return t, "type of the yielded value" if t is not None else ""
        if d.kind == "assign" and isinstance(node, Assign):
            t, _ = self._expr_type(d.func, node.value, depth)
            return t, "type of the assigned value" if t is not None else ""
        if d.kind == "unpack" and isinstance(node, Unpack) and isinstance(node.value, FuncCall):
            call = node.value
            callee = self.function_at(call.func)
            if call.submit and d.index == 1:
                return ScalarType("TASK_ID", d.span), "task id of the launch"
            if callee is not None and d.index < len(callee.returns):
                return callee.returns[d.index], f"return type of `{callee.name}`"
        return None, ""

    def _expr_type(self, func: int, e: Expr, depth: int) -> tuple[Type | None, str]:
        if isinstance(e, Name):
            return self._type_of(self.resolve(func, e.id), depth + 1)
        if isinstance(e, FuncCall):
            callee = self.function_at(e.func)
            if callee is not None and callee.returns:
                return callee.returns[0], ""
        if isinstance(e, Const) and e.dtype is not None:
            return ScalarType(e.dtype, e.span), ""
        return None, ""


def span_key(s: Span) -> tuple[int, int, int, int]:
    return (s.line, s.col, s.end_line, s.end_col)


def _tail_span(s: Span, name: str) -> Span:
    """``self.f`` -> the span of ``f`` only (what a rename edits)."""
    if s.line == s.end_line and s.end_col - s.col >= len(name):
        return Span(s.line, s.end_col - len(name), s.line, s.end_col)
    return s


def index_for(program: Program, index: SymbolIndex | None) -> SymbolIndex:
    """``index`` when it was built for ``program``, else a new index."""
    if index is not None and index.program is program:
        return index
    return SymbolIndex.build(program)


def function_detail(fn: Function) -> str:
    parts = [fn.kind]
    if fn.level:
        parts.append(f"level {fn.level}")
    if fn.role:
        parts.append(f"role {fn.role}")
    return " · ".join(parts)


# --------------------------------------------------------------------------- definition / references


def definition(program: Program, line0: int, col0: int, index: SymbolIndex | None = None) -> list[Span]:
    """Where the thing under the cursor is defined (all definitions of a re-assigned variable)."""
    idx = index_for(program, index)
    occ = idx.at(line0, col0)
    if occ is None:
        return []
    if occ.kind in (VAR_DEF, VAR_USE):
        return sorted((d.span for d in idx.definitions_of(occ.func, occ.name)), key=span_key)
    if occ.kind in (FUNC_DEF, FUNC_REF):
        fn = idx.function_at(occ.name)
        return [fn.name_span] if fn is not None else []
    return []


def references(
    program: Program,
    line0: int,
    col0: int,
    include_declaration: bool = True,
    index: SymbolIndex | None = None,
) -> list[Span]:
    """Every use (and definition) of the variable / function / op under the cursor, in source order.

    Function call sites are reported as the span of the name after ``self.``.
    """
    idx = index_for(program, index)
    occ = idx.at(line0, col0)
    if occ is None:
        return []
    out: list[Span] = []
    if occ.kind in (VAR_DEF, VAR_USE):
        out.extend(idx.uses_of(occ.func, occ.name))
        if include_declaration:
            out.extend(d.span for d in idx.definitions_of(occ.func, occ.name))
    elif occ.kind in (FUNC_DEF, FUNC_REF):
        out.extend(s for _, s in idx.calls.get(occ.name, []))
        fn = idx.function_at(occ.name)
        if include_declaration and fn is not None:
            out.append(fn.name_span)
    elif occ.kind == OP:
        out.extend(idx.op_sites.get(occ.name, []))
    return sorted(set(out), key=span_key)


# --------------------------------------------------------------------------- outline


def document_symbols(program: Program) -> list[SymbolInfo]:
    """Functions with their loops, ifs and scopes as a tree (assignments left out)."""
    lines = split_lines(program.source) if program.source else []
    out: list[SymbolInfo] = []
    for fn in program.functions:
        out.append(SymbolInfo(fn.name, "function", function_detail(fn), fn.span, fn.name_span, _outline(fn.body, lines)))
    return out


def _kw_span(span: Span, word: str) -> Span:
    """The keyword a statement starts with (``for``, ``while``, ``with``)."""
    return Span(span.line, span.col, span.line, span.col + len(word))


def _outline(body: list[Stmt], lines: list[str]) -> list[SymbolInfo]:
    out: list[SymbolInfo] = []
    for s in body:
        if isinstance(s, For):
            its = [SymbolInfo(t.name, "variable", "iter_arg", t.span, t.span, []) for t in s.iter_args]
            bounds = [expr_str(x) for x in (s.start, s.stop, s.step) if x is not None]
            if s.start is None and s.step is None:
                bounds = [expr_str(s.stop)]
            bounds += [f"{k}={expr_str(v)}" for k, v in s.kwargs.items()]
            detail = f"pl.{s.kind}({', '.join(bounds)})"
            if s.iter_args:
                detail += " carrying " + ", ".join(t.name for t in s.iter_args)
            name = f"for {s.var.name}" if s.var is not None else "for"
            sel = s.var.span if s.var is not None else _kw_span(s.span, "for")
            out.append(SymbolInfo(name, "loop", detail, s.span, sel, its + _outline(s.body, lines)))
        elif isinstance(s, While):
            its = [SymbolInfo(t.name, "variable", "iter_arg", t.span, t.span, []) for t in s.iter_args]
            if s.ssa:
                detail = f"pl.while_ while {expr_str(s.cond)}"
                if s.iter_args:
                    detail += " carrying " + ", ".join(t.name for t in s.iter_args)
                sel = s.iter_args[0].span if s.iter_args else _kw_span(s.span, "for")
            else:
                detail = f"while {expr_str(s.cond)}"
                sel = _kw_span(s.span, "while")
            out.append(SymbolInfo("while", "loop", detail, s.span, sel, its + _outline(s.body, lines)))
        elif isinstance(s, If):
            cond = expr_str(s.cond)
            if len(cond) > 60:
                cond = cond[:57] + "..."
            line = lines[s.span.line - 1] if 0 < s.span.line <= len(lines) else ""
            kw = "elif" if line.startswith("elif", s.span.col) else "if"
            sel = Span(s.span.line, s.span.col, s.span.line, s.span.col + len(kw))
            children = _outline(s.then, lines) + _outline(s.orelse, lines)
            out.append(SymbolInfo(f"{kw} {cond}", "if", "if/else" if s.orelse else "if", s.span, sel, children))
        elif isinstance(s, Scope):
            word = f"pl.{s.kind}"
            line = lines[s.span.line - 1] if 0 < s.span.line <= len(lines) else ""
            at = line.find(word, s.span.col)
            if at >= 0:
                sel = Span(s.span.line, at, s.span.line, at + len(word))
            else:
                sel = _kw_span(s.span, "with")
            args = [expr_str(a) for a in s.args] + [f"{k}={expr_str(v)}" for k, v in s.kwargs.items()]
            detail = f"{word}({', '.join(args)})"
            name = word
            children = []
            if s.as_name is not None:
                detail += f" as {s.as_name.name}"
                name += f" as {s.as_name.name}"
                children.append(SymbolInfo(s.as_name.name, "variable", "scope handle", s.as_name.span, s.as_name.span, []))
            out.append(SymbolInfo(name, "scope", detail, s.span, sel, children + _outline(s.body, lines)))
    return out
