"""Language logic for navigation: hover, go-to-definition, references, outline.

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

from ..ir.catalogue import RESULT_RULES, lookup
from ..ir.model import (
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
    OpaqueType,
    OpCall,
    Param,
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
from ..ir.names import APPROXIMATED_DTYPES, DTYPES, ENUMS

__all__ = [
    "Definition",
    "Occurrence",
    "SymbolIndex",
    "SymbolInfo",
    "definition",
    "document_symbols",
    "hover_text",
    "references",
]

_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")
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
                spans[:] = sorted(set(spans), key=_span_key)
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
        if line.startswith(base, i) and (i + len(base) == len(line) or line[i + len(base)] not in _IDENT_CHARS):
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


def _span_key(s: Span) -> tuple[int, int, int, int]:
    return (s.line, s.col, s.end_line, s.end_col)


def _tail_span(s: Span, name: str) -> Span:
    """``self.f`` -> the span of ``f`` only (what a rename edits)."""
    if s.line == s.end_line and s.end_col - s.col >= len(name):
        return Span(s.line, s.end_col - len(name), s.line, s.end_col)
    return s


def _index(program: Program, index: SymbolIndex | None) -> SymbolIndex:
    if index is not None and index.program is program:
        return index
    return SymbolIndex.build(program)


# --------------------------------------------------------------------------- rendering helpers

_PREC = {
    "or": 1,
    "and": 2,
    "==": 4,
    "!=": 4,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "|": 5,
    "^": 6,
    "&": 7,
    "<<": 8,
    ">>": 8,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "//": 10,
    "%": 10,
    "**": 12,
}


def expr_str(e: Expr | None, depth: int = 0) -> str:
    """Compact DSL rendering of an expression (``pl.const(0, pl.INT64)`` -> ``0``)."""
    if e is None:
        return ""
    if depth > 20:
        return "…"
    d = depth + 1
    if isinstance(e, Name):
        return e.id
    if isinstance(e, Const):
        if isinstance(e.value, str):
            return repr(e.value)
        return "None" if e.value is None else str(e.value)
    if isinstance(e, DTypeRef):
        return f"pl.{e.name}"
    if isinstance(e, EnumRef):
        return f"pl.{e.enum}.{e.member}"
    if isinstance(e, BinOp):
        p = _PREC.get(e.op, 0)
        left, right = expr_str(e.left, d), expr_str(e.right, d)
        if isinstance(e.left, BinOp) and _PREC.get(e.left.op, 0) < p:
            left = f"({left})"
        if isinstance(e.right, BinOp) and _PREC.get(e.right.op, 0) <= p:
            right = f"({right})"
        return f"{left} {e.op} {right}"
    if isinstance(e, UnaryOp):
        sep = " " if e.op == "not" else ""
        inner = expr_str(e.operand, d)
        if isinstance(e.operand, BinOp):
            inner = f"({inner})"
        return f"{e.op}{sep}{inner}"
    if isinstance(e, ListExpr):
        return "[" + ", ".join(expr_str(i, d) for i in e.items) + "]"
    if isinstance(e, TupleExpr):
        items = [expr_str(i, d) for i in e.items]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(e, DictExpr):
        return "{" + ", ".join(f"{expr_str(k, d)}: {expr_str(v, d)}" for k, v in zip(e.keys, e.values)) + "}"
    if isinstance(e, Subscript):
        return f"{expr_str(e.value, d)}[{expr_str(e.index, d)}]"
    if isinstance(e, Intrinsic):
        head = "abs" if e.name == "abs" else f"pl.{e.name}"
        return f"{head}(" + ", ".join(expr_str(a, d) for a in e.args) + ")"
    if isinstance(e, OpCall | FuncCall):
        args = [expr_str(a, d) for a in e.args] + [f"{k}={expr_str(v, d)}" for k, v in e.kwargs.items()]
        head = e.printed if isinstance(e, OpCall) else (f"pl.{e.submit}(self.{e.func}, " if e.submit else f"self.{e.func}(")
        if isinstance(e, OpCall):
            head += "("
        return head + ", ".join(args) + ")"
    return "?"  # pragma: no cover


def _dims(dims: list[Expr]) -> str:
    return "[" + ", ".join(expr_str(x) for x in dims) + "]"


def type_str(t: Type | None) -> str:
    """Short DSL rendering of a type, without memref: ``pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec]``."""
    if t is None:
        return "?"
    if isinstance(t, TensorType):
        head = "pld.DistributedTensor" if t.distributed else "pl.Tensor"
        return f"{head}[{_dims(t.shape)}, pl.{t.dtype}]"
    if isinstance(t, TileType):
        mem = f", pl.Mem.{t.memspace}" if t.memspace else ""
        return f"pl.Tile[{_dims(t.shape)}, pl.{t.dtype}{mem}]"
    if isinstance(t, ScalarType):
        return f"pl.Scalar[pl.{t.dtype}]"
    if isinstance(t, TupleType):
        return "pl.Tuple[" + ", ".join(type_str(i) for i in t.items) + "]"
    if isinstance(t, ArrayType):
        return f"pl.Array[{', '.join(expr_str(x) for x in t.shape)}, pl.{t.dtype}]"
    if isinstance(t, OpaqueType):
        return f"pld.{t.name}" if t.name in ("WindowBufferType", "CommCtxType") else f"pl.{t.name}"
    return "?"  # pragma: no cover


def _param_str(p: Param) -> str:
    t = type_str(p.type)
    if p.direction == "out":
        t = f"pl.Out[{t}]"
    elif p.direction == "inout":
        t = f"pl.InOut[{t}]"
    return f"{p.name}: {t}"


def _num(v: object) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


# --------------------------------------------------------------------------- vocabulary one-liners

DTYPE_DOCS: dict[str, str] = {
    "BOOL": "boolean",
    "INT4": "4-bit signed integer",
    "INT8": "8-bit signed integer",
    "INT16": "16-bit signed integer",
    "INT32": "32-bit signed integer",
    "INT64": "64-bit signed integer",
    "INDEX": "index integer (loop counters, offsets, shapes; 64-bit)",
    "UINT4": "4-bit unsigned integer",
    "UINT8": "8-bit unsigned integer",
    "UINT16": "16-bit unsigned integer",
    "UINT32": "32-bit unsigned integer",
    "UINT64": "64-bit unsigned integer",
    "FP16": "16-bit IEEE-754 half-precision float",
    "BF16": "bfloat16: 16-bit float with FP32's 8-bit exponent and a 7-bit mantissa",
    "FP32": "32-bit IEEE-754 single-precision float",
    "FP4": "4-bit float (E2M1)",
    "FP8E4M3FN": "8-bit float, 4-bit exponent / 3-bit mantissa, finite only (no Inf)",
    "FP8E5M2": "8-bit float, 5-bit exponent / 2-bit mantissa",
    "FP8E8M0": "8-bit exponent-only float (MX block scale)",
    "HF4": "4-bit HiFloat",
    "HF8": "8-bit HiFloat",
    "TASK_ID": "task id returned by a task launch",
}

ENUM_DOCS: dict[str, dict[str, str]] = {
    "Mem": {
        "DDR": "global memory (GM, off-chip); where tensors live",
        "Vec": "vector core's Unified Buffer (UB): operands of vector tile ops",
        "Mat": "cube core's L1 buffer: staging for matmul operands",
        "Left": "L0A: the cube's left (A) matmul operand",
        "Right": "L0B: the cube's right (B) matmul operand",
        "Acc": "L0C: the cube's matmul accumulator / output",
        "Bias": "bias table buffer used by matmul_bias",
        "ScalarLocal": "scalar unit's local memory",
        "LeftScale": "MX block-scale buffer of the left operand",
        "RightScale": "MX block-scale buffer of the right operand",
    },
    "FunctionType": {
        "Opaque": "unclassified function",
        "Orchestration": "orchestration code: schedules kernels and passes tensors between them",
        "InCore": "kernel that runs on one AI core (before it is split into AIC/AIV parts)",
        "AIC": "cube-core kernel (matmul side)",
        "AIV": "vector-core kernel",
        "Group": "co-scheduled group of AIC/AIV kernels launched together",
        "Spmd": "SPMD launch: the body runs once per block",
        "Inline": "helper inlined into its callers",
        "Graph": "graph-level function",
    },
    "Role": {
        "Orchestrator": "schedules work for sub-workers",
        "SubWorker": "does the work scheduled by an orchestrator",
    },
    "SplitMode": {
        "NONE": "no split between the two AIV lanes",
        "UP_DOWN": "the two AIV lanes take the top / bottom halves (rows)",
        "LEFT_RIGHT": "the two AIV lanes take the left / right halves (columns)",
    },
    "TensorLayout": {
        "ND": "row-major N-D layout",
        "DN": "column-major layout (last two dims swapped)",
        "NZ": "fractal Nz blocked layout used by the cube",
        "MX_A_ZZ": "MX scale layout of the left operand",
        "MX_B_NN": "MX scale layout of the right operand",
    },
    "TileLayout": {
        "none_box": "no fractal boxing",
        "row_major": "row-major",
        "col_major": "column-major",
    },
    "PadValue": {
        "null": "padding left undefined",
        "zero": "padding filled with 0",
        "max": "padding filled with the dtype's largest value",
        "min": "padding filled with the dtype's smallest value",
    },
    "AtomicType": {"None_": "plain store", "Add": "atomic add into the destination"},
    "PipeType": {
        "MTE1": "L1 -> L0 move engine",
        "MTE2": "GM -> L1/UB load engine",
        "MTE3": "UB -> GM store engine",
        "M": "cube (matrix) unit",
        "V": "vector unit",
        "S": "scalar unit",
        "FIX": "fixpipe (L0C -> L1/GM)",
        "ALL": "every pipe",
    },
    "Level": {
        "AIV": "a vector core",
        "AIC": "a cube core",
        "CORE_GROUP": "one AIC with its AIV cores",
        "CHIP_DIE": "one chip die",
        "CHIP": "one chip",
        "HOST": "the host",
        "GLOBAL": "every device",
    },
}
ENUM_DOCS["MemorySpace"] = ENUM_DOCS["Mem"]
_ENUM_WHAT = {
    "Mem": "memory space",
    "MemorySpace": "memory space",
    "FunctionType": "function kind",
    "Level": "hierarchy level",
    "Role": "function role",
    "SplitMode": "AIV split mode",
    "TensorLayout": "tensor layout",
    "TileLayout": "tile layout",
    "PadValue": "pad value",
    "AtomicType": "store mode",
    "PipeType": "hardware pipe",
}

CONSTRUCT_DOCS: dict[str, str] = {
    "pl.range": "sequential loop `pl.range([start,] stop[, step][, init_values=...])`",
    "pl.parallel": "loop whose iterations may run in parallel",
    "pl.unroll": "loop the compiler unrolls",
    "pl.pipeline": "software-pipelined loop",
    "pl.spmd": "SPMD launch: the body runs once per block",
    "pl.split_aiv": "the body runs once per AIV lane",
    "pl.while_": "SSA while loop; the body starts with `pl.cond(...)`",
    "pl.cond": "loop condition of a `pl.while_` loop",
    "pl.yield_": "ends a loop/if body: gives the next iter_args, or the results of the if/loop",
    "pl.at": "scope run at a hierarchy level (e.g. one core group)",
    "pl.scope": "plain scope (no numerical effect)",
    "pl.cluster": "cluster scope (no numerical effect)",
    "pl.incore": "in-core scope",
    "pl.auto_incore": "in-core scope chosen by the compiler",
    "pl.const": "typed constant `pl.const(value, dtype)`",
    "pl.submit": "launch a function as a task: returns (result, task id)",
    "pl.spmd_submit": "launch a function as an SPMD task: returns (result, task id)",
    "pl.func_attr": "function attributes",
    "pl.dynamic": "declares a dynamic dimension",
    "pl.Tensor": "tensor type `[shape, dtype, ...]` (global memory)",
    "pl.Tile": "tile type `[shape, dtype, memory, ...]` (on-chip buffer)",
    "pl.Scalar": "scalar type `pl.Scalar[dtype]`",
    "pl.Tuple": "tuple type",
    "pl.Array": "small on-core array type",
    "pl.Ptr": "buffer pointer (from `pl.tile.alloc`)",
    "pl.MemRef": "memory reference `(base, offset, size in bytes)` of an allocated buffer",
    "pl.TileView": "tile view: valid_shape / layout of a tile",
    "pl.TensorView": "tensor view: valid_shape / layout of a tensor",
    "pl.Out": "output parameter (written by the function)",
    "pl.InOut": "input/output parameter (read and written)",
    "pl.function": "function decorator: type, level, role, attrs",
    "pl.program": "program class decorator",
    "pl.split": "split optimisation of a `pl.at` scope",
    "pl.min": "scalar minimum",
    "pl.max": "scalar maximum",
    "pl.cast": "scalar cast",
}

_STATUS_TEXT = {"supported": "supported", "noop": "no-op", "unsupported": "not supported by pypto-lsp yet"}

_DEF_ROLE = {
    "assign": "variable",
    "unpack": "variable (unpacked)",
    "loop_var": "loop variable",
    "iter_arg": "iter_arg (loop-carried)",
    "yield": "result of a loop/if (`pl.yield_` target)",
    "scope_as": "scope handle",
    "dynamic": "dynamic dimension (`pl.dynamic`)",
}


def dtype_doc(name: str) -> str:
    doc = DTYPE_DOCS.get(name, "data type")
    if name in APPROXIMATED_DTYPES:
        doc += " (the executor approximates it with float32)"
    return f"`pl.{name}`: {doc}"


def enum_doc(enum: str, member: str) -> str:
    what = _ENUM_WHAT.get(enum, f"`pl.{enum}` member")
    doc = ENUM_DOCS.get(enum, {}).get(member)
    known = ENUMS.get(enum)
    if doc is None and known is not None and member not in known:
        doc = f"unknown member of pl.{enum}"
    return f"`pl.{enum}.{member}`: {what} {member}" + (f": {doc}" if doc else "")


def op_signature(name: str) -> str | None:
    spec = lookup(name)
    if spec is None:
        return None
    params = [p if i < spec.min_args else p + "?" for i, p in enumerate(spec.params)]
    if spec.variadic:
        params.append("...")
    sig = f"{spec.name}({', '.join(params)})"
    if spec.kwargs:
        sig += " {" + ", ".join(spec.kwargs) + "}"
    return sig


# --------------------------------------------------------------------------- hover


def hover_text(
    program: Program,
    line0: int,
    col0: int,
    stats: dict[str, dict] | None = None,
    index: SymbolIndex | None = None,
) -> str | None:
    """Markdown for the thing under an LSP position, or None."""
    idx = _index(program, index)
    occ = idx.at(line0, col0)
    if occ is not None:
        if occ.kind in (VAR_DEF, VAR_USE):
            return _hover_var(idx, occ.func, occ.name, stats)
        if occ.kind in (FUNC_DEF, FUNC_REF):
            return _hover_function(idx, occ.name)
        if occ.kind == OP:
            return _hover_op(occ.obj if isinstance(occ.obj, OpCall) else None, occ.name)
        if occ.kind == DTYPE:
            return dtype_doc(occ.name)
        if occ.kind == ENUM:
            enum, _, member = occ.name.partition(".")
            return enum_doc(enum, member)
    return _hover_lexical(idx, line0, col0)


def _hover_var(idx: SymbolIndex, func: int, name: str, stats: dict[str, dict] | None) -> str:
    key = idx.resolve(func, name)
    ds = idx.defs.get(key, [])
    fn_name = idx.program.functions[func].name if 0 <= func < len(idx.program.functions) else ""
    out: list[str] = []
    if not ds:
        why = " (a free variable the printer emitted)" if "__FREE_VAR" in name else ""
        out.append(f"**`{name}`**: no definition in `{fn_name}`{why}")
    else:
        d0 = ds[0]
        if d0.kind == "param" and isinstance(d0.node, Param):
            role = f"parameter ({d0.node.direction}) of `{fn_name}`"
        elif d0.kind == "iter_arg" and isinstance(d0.node, For | While):
            loop = d0.node
            head = f"for {loop.var.name}" if isinstance(loop, For) and loop.var is not None else "pl.while_"
            role = f"iter_arg #{d0.index} of `{head}` (line {loop.span.line})"
        else:
            role = _DEF_ROLE.get(d0.kind, "variable")
        out.append(f"**`{name}`**: {role}")
        t, note = idx._type_of(key, 0)
        if t is not None:
            out.append("")
            out.append(f"`{type_str(t)}`" + (f" *({note})*" if note else ""))
            details = _type_details(idx, t)
            if details:
                out.append("")
                out.extend(f"- {x}" for x in details)
        if d0.kind != "param":
            lines = sorted({d.span.line for d in ds})
            out.append("")
            if len(lines) == 1:
                out.append(f"defined at line {lines[0]}")
            else:
                out.append(f"defined {len(ds)}× at lines " + ", ".join(str(x) for x in lines))
        elif len(ds) > 1:  # a parameter re-assigned in a pre-SSA dump
            out.append("")
            out.append("re-assigned at lines " + ", ".join(str(x) for x in sorted({d.span.line for d in ds[1:]})))
    if stats is not None and name in stats:
        out.append("")
        out.append(_stats_line(stats[name]))
    return "\n".join(out)


def _type_details(idx: SymbolIndex, t: Type) -> list[str]:
    out: list[str] = []
    if isinstance(t, TensorType | TileType):
        dyn = [x.id for x in t.shape if isinstance(x, Name)]
        shape = f"shape `{_dims(t.shape)}`"
        if dyn:
            shape += " (dynamic: " + ", ".join(f"`{n}`" for n in dyn) + ")"
        out.append(shape)
        out.append(f"dtype `{t.dtype}`: {DTYPE_DOCS.get(t.dtype, 'data type')}")
        mem = t.memspace if isinstance(t, TileType) else "DDR"
        if mem:
            out.append(f"memory `{mem}`: {ENUM_DOCS['Mem'].get(mem, '')}".rstrip(": "))
        if t.valid_shape is not None:
            out.append(f"valid_shape `{_dims(t.valid_shape)}`")
        layout = t.layout if isinstance(t, TensorType) else t.blayout
        if layout:
            out.append(f"layout `{layout}`")
        if t.memref is not None:
            m = t.memref
            parts = [f"memref base `{m.base}`"]
            if m.offset is not None:
                parts.append(f"offset {expr_str(m.offset)}")
            if m.size is not None:
                parts.append(f"size {expr_str(m.size)} B")
            out.append(", ".join(parts))
    elif isinstance(t, ScalarType):
        out.append(f"dtype `{t.dtype}`: {DTYPE_DOCS.get(t.dtype, 'data type')}")
    return out


def _stats_line(s: dict) -> str:
    parts: list[str] = []
    if "shape" in s:
        parts.append(f"shape `{list(s['shape'])}`")
    if "dtype" in s:
        parts.append(str(s["dtype"]))
    for k in ("min", "max", "mean"):
        if k in s:
            parts.append(f"{k} {_num(s[k])}")
    nan, inf = s.get("nan"), s.get("inf")
    if nan is not None or inf is not None:
        bad = (nan or 0) + (inf or 0)
        parts.append(("⚠ " if bad else "") + f"NaN {nan or 0} · Inf {inf or 0}")
    return "**last run**: " + " · ".join(parts)


def function_detail(fn: Function) -> str:
    parts = [fn.kind]
    if fn.level:
        parts.append(f"level {fn.level}")
    if fn.role:
        parts.append(f"role {fn.role}")
    return " · ".join(parts)


def _hover_function(idx: SymbolIndex, name: str) -> str:
    fn = idx.function_at(name)
    if fn is None:
        return f"**`{name}`**: unknown function (no `def {name}` in this program)"
    head = [f"{fn.kind} function"]
    if fn.level:
        head.append(f"level {fn.level}")
    if fn.role:
        head.append(f"role {fn.role}")
    out = [f"**`{fn.name}`**: " + " · ".join(head)]
    attrs = {k: v for k, v in fn.attrs.items() if k != "name"}
    if attrs:
        out.append("")
        out.append("attrs: " + ", ".join(f"`{k}={expr_str(v)}`" for k, v in attrs.items()))
    params = [_param_str(p) for p in fn.params]
    ret = ""
    if len(fn.returns) == 1:
        ret = f" -> {type_str(fn.returns[0])}"
    elif fn.returns:
        ret = " -> tuple[" + ", ".join(type_str(r) for r in fn.returns) + "]"
    one = f"def {fn.name}({', '.join(params)}){ret}"
    if len(one) > 100 and params:
        one = f"def {fn.name}(\n" + "".join(f"    {p},\n" for p in params) + f"){ret}"
    out += ["", "```python", one, "```"]
    callers = idx.calls.get(name, [])
    if callers:
        names: list[str] = []
        for fi, _ in callers:
            n = idx.program.functions[fi].name
            if n not in names:
                names.append(n)
        out.append("")
        out.append(f"called {len(callers)}× from " + ", ".join(f"`{n}`" for n in names))
    return "\n".join(out)


def _hover_op(call: OpCall | None, name: str) -> str:
    spec = lookup(name)
    printed = call.printed if call is not None else name
    if spec is None:
        return f"**`{printed}`**: unknown op (not in the PyPTO op catalogue)"
    out = [f"**`{op_signature(spec.name)}`**", "", spec.doc, ""]
    if spec.result is not None:
        out.append(f"result: {RESULT_RULES[spec.result]}")
    else:
        out.append("result: given by the assignment's annotation")
    out.append("")
    out.append(f"executor: {_STATUS_TEXT.get(spec.status, spec.status)}")
    return "\n".join(out)


def _word_at(line: str, col: int) -> str:
    if not line:
        return ""
    col = min(col, len(line))
    if col == len(line) or line[col] not in _IDENT_CHARS:
        if col > 0 and line[col - 1] in _IDENT_CHARS:
            col -= 1
        else:
            return ""
    a = col
    while a > 0 and line[a - 1] in _IDENT_CHARS:
        a -= 1
    b = col
    while b < len(line) and line[b] in _IDENT_CHARS:
        b += 1
    return line[a:b].strip(".")


def _hover_lexical(idx: SymbolIndex, line0: int, col0: int) -> str | None:
    """dtypes / enums / DSL words the model keeps no span for (inside type annotations, decorators)."""
    if not 0 <= line0 < len(idx.lines):
        return None
    word = _word_at(idx.lines[line0], col0)
    parts = word.split(".")
    if len(parts) < 2 or parts[0] not in ("pl", "pld"):
        return None
    if len(parts) == 2 and parts[1] in DTYPES:
        return dtype_doc(parts[1])
    if len(parts) == 3 and parts[1] in ENUMS:
        return enum_doc(parts[1], parts[2])
    doc = CONSTRUCT_DOCS.get(word)
    if doc is not None:
        return f"`{word}`: {doc}"
    if len(parts) >= 3 and lookup(word) is not None:
        return _hover_op(None, word)
    return None


# --------------------------------------------------------------------------- definition / references


def definition(program: Program, line0: int, col0: int, index: SymbolIndex | None = None) -> list[Span]:
    """Where the thing under the cursor is defined (all definitions of a re-assigned variable)."""
    idx = _index(program, index)
    occ = idx.at(line0, col0)
    if occ is None:
        return []
    if occ.kind in (VAR_DEF, VAR_USE):
        return sorted((d.span for d in idx.definitions_of(occ.func, occ.name)), key=_span_key)
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
    idx = _index(program, index)
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
    return sorted(set(out), key=_span_key)


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
