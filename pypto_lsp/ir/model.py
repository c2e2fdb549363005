"""Typed IR for PyPTO pass dumps.

Every node carries a :class:`Span` with 1-based lines and 0-based columns (as
Python's ``ast`` reports them). The model is plain data: no torch, no LSP.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

_tuple_new = tuple.__new__

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """A dump's lines as spans count them and LSP does: only CR, LF and CRLF break a line
    (``str.splitlines`` also breaks at form feeds, U+2028 and more)."""
    return _LINE_BREAK.split(text)


class Span(NamedTuple):
    """1-based lines, 0-based columns (end exclusive), as Python's ``ast`` reports them.

    A named tuple rather than a frozen dataclass: a parse makes tens of thousands,
    and tuple construction is several times cheaper.
    """

    line: int
    col: int
    end_line: int
    end_col: int

    @staticmethod
    def of(node: Any) -> Span:
        try:  # fast path: every ast expr/stmt node has all four (tuple.__new__ skips the Python-level __new__)
            return _tuple_new(
                Span, (node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or node.col_offset + 1)
            )
        except AttributeError:
            pass
        line = getattr(node, "lineno", 1) or 1
        col = getattr(node, "col_offset", 0) or 0
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        if end_col is None:
            end_col = col + 1
        return Span(line, col, end_line, end_col)


NOWHERE = Span(1, 0, 1, 1)


# --------------------------------------------------------------------------- expressions


@dataclass(slots=True)
class Name:
    id: str
    span: Span


@dataclass(slots=True)
class Const:
    """A literal. ``dtype`` is set for ``pl.const(v, pl.T)``; bare ints are INDEX, floats FP32."""

    value: int | float | bool | str | None
    span: Span
    dtype: str | None = None


@dataclass(slots=True)
class DTypeRef:
    """``pl.FP32`` and friends."""

    name: str
    span: Span


@dataclass(slots=True)
class EnumRef:
    """``pl.Mem.Vec``, ``pl.PadValue.zero``, ``pl.adir.input`` ... (``enum`` is the middle segment)."""

    enum: str
    member: str
    span: Span


@dataclass(slots=True)
class BinOp:
    op: str  # python operator symbol: + - * / // % ** & | ^ << >> == != < <= > >= and or
    left: Expr
    right: Expr
    span: Span


@dataclass(slots=True)
class UnaryOp:
    op: str  # "-", "~", "not", "+"
    operand: Expr
    span: Span


@dataclass(slots=True)
class ListExpr:
    """MakeTuple: shapes, offsets and tuples print as Python lists."""

    items: list[Expr]
    span: Span


@dataclass(slots=True)
class TupleExpr:
    items: list[Expr]
    span: Span


@dataclass(slots=True)
class DictExpr:
    keys: list[Expr]
    values: list[Expr]
    span: Span


@dataclass(slots=True)
class Subscript:
    """TupleGetItem: ``x[0]``."""

    value: Expr
    index: Expr
    span: Span


@dataclass(slots=True)
class Intrinsic:
    """Scalar built-ins: ``pl.min``, ``pl.max``, ``pl.cast``, ``abs``."""

    name: str  # "min" | "max" | "cast" | "abs"
    args: list[Expr]
    span: Span


@dataclass(slots=True)
class OpCall:
    """A registered op: ``pl.tile.load(...)``; ``op`` is the IR name (``tile.and`` for ``pl.tile.and_``)."""

    op: str
    printed: str  # as written, e.g. "pl.tile.and_"
    args: list[Expr]
    kwargs: dict[str, Expr]
    span: Span
    name_span: Span
    attrs: DictExpr | None = None


@dataclass(slots=True)
class FuncCall:
    """``self.f(args, attrs={...}, device=...)`` or ``pl.submit(self.f, ...)``."""

    func: str
    args: list[Expr]
    kwargs: dict[str, Expr]
    span: Span
    name_span: Span
    submit: str | None = None  # "submit" | "spmd_submit" for task launches


Expr = Name | Const | DTypeRef | EnumRef | BinOp | UnaryOp | ListExpr | TupleExpr | DictExpr | Subscript | Intrinsic | OpCall | FuncCall


# --------------------------------------------------------------------------- types


@dataclass(slots=True)
class MemRefInfo:
    base: str | None  # variable name or string base
    offset: Expr | None
    size: Expr | None
    span: Span


@dataclass(slots=True)
class TensorType:
    shape: list[Expr]
    dtype: str
    span: Span
    valid_shape: list[Expr] | None = None
    layout: str | None = None  # TensorLayout member, e.g. "ND" / "DN"
    memref: MemRefInfo | None = None
    distributed: bool = False


@dataclass(slots=True)
class TileType:
    shape: list[Expr]
    dtype: str
    span: Span
    memspace: str | None = None
    valid_shape: list[Expr] | None = None
    memref: MemRefInfo | None = None
    blayout: str | None = None


@dataclass(slots=True)
class ScalarType:
    dtype: str
    span: Span


@dataclass(slots=True)
class TupleType:
    items: list[Type]
    span: Span


@dataclass(slots=True)
class ArrayType:
    shape: list[Expr]
    dtype: str
    span: Span


@dataclass(slots=True)
class OpaqueType:
    """``pl.Ptr``, ``pl.MemRefType``, ``pl.UnknownType`` ... (no numeric content)."""

    name: str
    span: Span


Type = TensorType | TileType | ScalarType | TupleType | ArrayType | OpaqueType


# --------------------------------------------------------------------------- statements


@dataclass(slots=True)
class Target:
    name: str
    span: Span
    type: Type | None = None


@dataclass(slots=True)
class Assign:
    target: Target
    value: Expr
    span: Span


@dataclass(slots=True)
class Unpack:
    """``a, b = expr`` (task launches return ``(result, task_id)``)."""

    targets: list[Target]
    value: Expr
    span: Span


@dataclass(slots=True)
class Yield:
    """``pl.yield_(...)``; ``targets`` are the enclosing loop/if's return variables."""

    targets: list[Target]
    values: list[Expr]
    span: Span


@dataclass(slots=True)
class ExprStmt:
    value: Expr
    span: Span


@dataclass(slots=True)
class Return:
    values: list[Expr]
    span: Span


@dataclass(slots=True)
class Break:
    span: Span


@dataclass(slots=True)
class Continue:
    span: Span


@dataclass(slots=True)
class Pass:
    span: Span


@dataclass(slots=True)
class For:
    """``for v[, (iter_args)] in pl.<kind>(...)``.

    ``kind``: range | parallel | unroll | pipeline | spmd | split_aiv.
    For spmd, ``stop`` is the block count; for split_aiv, the lane count.
    """

    kind: str
    var: Target | None
    iter_args: list[Target]
    start: Expr | None
    stop: Expr
    step: Expr | None
    init_values: list[Expr]
    body: list[Stmt]
    span: Span
    kwargs: dict[str, Expr] = field(default_factory=dict)
    header_span: Span = NOWHERE


@dataclass(slots=True)
class While:
    """Plain ``while cond:`` (pre-SSA) or SSA ``for (a, b) in pl.while_(init_values=...)``."""

    cond: Expr
    iter_args: list[Target]
    init_values: list[Expr]
    body: list[Stmt]
    span: Span
    ssa: bool = False
    cond_span: Span = NOWHERE


@dataclass(slots=True)
class If:
    cond: Expr
    then: list[Stmt]
    orelse: list[Stmt]
    span: Span


@dataclass(slots=True)
class Scope:
    """``with pl.at(...)/pl.cluster()/pl.scope()/pl.spmd(...) [as x]:`` — transparent for numerics
    except ``spmd`` (runs the body once per block)."""

    kind: str
    kwargs: dict[str, Expr]
    args: list[Expr]
    as_name: Target | None
    body: list[Stmt]
    span: Span


@dataclass(slots=True)
class FuncAttr:
    attrs: DictExpr
    span: Span


Stmt = Assign | Unpack | Yield | ExprStmt | Return | Break | Continue | Pass | For | While | If | Scope | FuncAttr


# --------------------------------------------------------------------------- functions / program


@dataclass(slots=True)
class Param:
    name: str
    type: Type | None
    direction: str  # "in" | "out" | "inout"
    span: Span


@dataclass(slots=True)
class Function:
    name: str
    kind: str  # Opaque | Orchestration | InCore | AIC | AIV | Group | Spmd | Inline | Graph
    params: list[Param]
    returns: list[Type]
    body: list[Stmt]
    span: Span
    name_span: Span
    level: str | None = None
    role: str | None = None
    attrs: dict[str, Expr] = field(default_factory=dict)
    has_self: bool = True
    abstract: bool = False  # body is ``...``
    first_line: int = 0  # the line of its first decorator, else of its ``def`` (0: not known)
    # every statement of the body, walked once (the IR is never changed once parsed): see statements()
    _walked: tuple[Stmt, ...] | None = field(default=None, init=False, repr=False, compare=False)

    def statements(self) -> tuple[Stmt, ...]:
        """:func:`walk_stmts` of the body, kept on the function: the checks, the memory plan, the
        lowering and the code generator each walk every function, about twenty walks of one body per dump."""
        walked = self._walked
        if walked is None:
            walked = self._walked = tuple(walk_stmts(self.body))
        return walked


@dataclass(slots=True)
class Program:
    name: str
    functions: list[Function]
    dynamic_dims: dict[str, Span]
    span: Span
    filename: str | None = None
    source: str = ""

    def function(self, name: str) -> Function | None:
        for f in self.functions:
            if f.name == name:
                return f
        return None


def entry_function(program: Program) -> Function | None:
    """PyPTO's rule: the only function, else the first Orchestration function by name (byte order).

    A multi-rank program's entry is its HOST orchestrator (``level=pl.Level.HOST``, ``@pl.jit.host``):
    it takes the stacked per-rank tensors and launches the chip programs (pypto
    ``docs/en/user/distributed/07-programming_model.md``)."""
    if len(program.functions) == 1:
        return program.functions[0]
    host = sorted((f for f in program.functions if (f.level or "").upper() == "HOST"), key=lambda f: f.name.encode())
    if host:
        return host[0]
    orch = sorted((f for f in program.functions if f.kind == "Orchestration"), key=lambda f: f.name.encode())
    return orch[0] if orch else None


def trailing_yield(body: list[Stmt]) -> Yield | None:
    """The yield that ends a loop/if body; scopes are transparent (``with pl.scope(): ... pl.yield_``)."""
    while body:
        last = body[-1]
        if isinstance(last, Yield):
            return last
        if isinstance(last, Scope):
            body = last.body
            continue
        return None
    return None


def walk_stmts(body: list[Stmt]) -> Iterator[Stmt]:
    """Yield every statement in ``body``, depth first (parents before children, in order).

    Iterative (an explicit stack), not recursive generators: the checker and codegen walk
    every statement of every function, and nested ``yield from`` costs per level.
    """
    stack: list[Stmt] = list(reversed(body))
    pop, extend = stack.pop, stack.extend
    while stack:
        s: Any = pop()
        yield s
        t = type(s)
        if t is For or t is While or t is Scope:
            extend(reversed(s.body))
        elif t is If:
            extend(reversed(s.orelse))
            extend(reversed(s.then))


def walk_expr(e: Expr) -> Iterator[Expr]:
    """Yield ``e`` and every sub-expression (pre-order), except the ``attrs={...}`` metadata of calls."""
    stack: list[Expr] = [e]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        x: Any = pop()
        yield x
        t = type(x)
        if t is OpCall or t is FuncCall:
            kw = x.kwargs
            if kw:
                extend(reversed([v for k, v in kw.items() if k != "attrs"]))
            extend(reversed(x.args))
        elif t is BinOp:
            push(x.right)
            push(x.left)
        elif t is ListExpr or t is TupleExpr:
            extend(reversed(x.items))
        elif t is UnaryOp:
            push(x.operand)
        elif t is Subscript:
            push(x.index)
            push(x.value)
        elif t is Intrinsic:
            extend(reversed(x.args))
        elif t is DictExpr:
            extend(reversed(x.values))


# scope keywords that only carry scheduling metadata
SCOPE_METADATA = ("optimizations", "deps", "no_dep_args", "dumps")


def stmt_exprs(s: Stmt) -> Iterator[Expr]:
    """The expressions a statement evaluates itself (not those of nested statements)."""
    if isinstance(s, Assign | Unpack | ExprStmt):
        yield s.value
    elif isinstance(s, Yield | Return):
        yield from s.values
    elif isinstance(s, For):
        yield s.stop
        if s.start is not None:
            yield s.start
        if s.step is not None:
            yield s.step
        yield from s.init_values
    elif isinstance(s, While):
        yield s.cond
        yield from s.init_values
    elif isinstance(s, If):
        yield s.cond
    elif isinstance(s, Scope):
        yield from s.args
        for k, v in s.kwargs.items():
            if k not in SCOPE_METADATA:
                yield v


# stmt_subexprs's walks and stmt_reads's names, by statement identity. Each entry holds what it was
# made from, so an id is never taken for another statement's while kept: a one-line statement
# itself; a loop, branch or scope its header's expressions only (the statement would keep its whole
# body alive), which is all its walk depends on.
_SUBEXPRS: dict[int, tuple[object, tuple[Expr, ...]]] = {}
_READS: dict[int, tuple[object, frozenset[str]]] = {}
SUBEXPRS_KEPT = 32768
_BODIED = (For, While, If, Scope)  # statements with a body


def _owner(s: Stmt) -> object:
    return tuple(stmt_exprs(s)) if type(s) in _BODIED else s


def _owned(owner: object, s: Stmt) -> bool:
    if owner is s:
        return True
    if type(owner) is not tuple or type(s) not in _BODIED:
        return False
    header = tuple(stmt_exprs(s))
    return len(header) == len(owner) and all(a is b for a, b in zip(header, owner, strict=True))


def _kept(table: dict[int, tuple[object, Any]], s: Stmt, value: Any) -> None:
    if len(table) >= SUBEXPRS_KEPT:
        table.clear()
    table[id(s)] = (_owner(s), value)


def stmt_subexprs(s: Stmt) -> tuple[Expr, ...]:
    """Every expression ``s`` evaluates itself, with all their sub-expressions: :func:`walk_expr` of
    each of :func:`stmt_exprs`, in that order.

    Kept per statement object: the IR is never changed once parsed, and line reuse
    (:mod:`.line_reuse`) hands the statement of an unchanged line to the next dump as the same
    object, so the checker, the lowering and the code generator walk a statement's expressions once
    for a whole folder rather than once each per dump."""
    hit = _SUBEXPRS.get(id(s))
    if hit is not None and _owned(hit[0], s):
        return hit[1]
    found = tuple([sub for e in stmt_exprs(s) for sub in walk_expr(e)])
    _kept(_SUBEXPRS, s, found)
    return found


def stmt_reads(s: Stmt) -> frozenset[str]:
    """The names ``s``'s own expressions read (every :class:`Name` of :func:`stmt_subexprs`), kept
    per statement object as the walk is."""
    hit = _READS.get(id(s))
    if hit is not None and _owned(hit[0], s):
        return hit[1]
    found = frozenset([sub.id for sub in stmt_subexprs(s) if isinstance(sub, Name)])
    _kept(_READS, s, found)
    return found


def stmt_targets(s: Stmt) -> list[Target]:
    """The names a statement binds (loop variables and iter_args included)."""
    if isinstance(s, Assign):
        return [s.target]
    if isinstance(s, Unpack | Yield):
        return list(s.targets)
    if isinstance(s, For):
        return ([s.var] if s.var else []) + list(s.iter_args)
    if isinstance(s, While):
        return list(s.iter_args)
    if isinstance(s, Scope) and s.as_name is not None:
        return [s.as_name]
    return []


# ---------------------------------------------------------------------- integer constants


def int_literal(e: Any, signed: bool = True) -> int | None:
    """An integer literal's value (a bool is none), or with ``signed`` a negated one (``-3``); else None."""
    if isinstance(e, Const) and type(e.value) is int:
        return e.value
    if signed and isinstance(e, UnaryOp) and e.op in ("-", "USub") and isinstance(e.operand, Const) and type(e.operand.value) is int:
        return -e.operand.value
    return None


def fold_int(e: Any, depth: int = 0) -> int | None:
    """**The one integer constant folding**: the value of a constant integer expression (literals,
    negation, ``+ - * //`` of them), else None; operands past 2**64 or nesting past 32 are not folded."""
    if depth > 32:
        return None
    if isinstance(e, Const):
        v = e.value
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(e, UnaryOp) and e.op == "-":
        v = fold_int(e.operand, depth + 1)
        return -v if v is not None else None
    if isinstance(e, BinOp) and e.op in ("+", "-", "*", "//"):
        a, b = fold_int(e.left, depth + 1), fold_int(e.right, depth + 1)
        if a is None or b is None or abs(a) > 1 << 64 or abs(b) > 1 << 64:
            return None
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        return a // b if b else None
    return None


def fold_ints(dims: list[Any]) -> list[int] | None:
    """:func:`fold_int` of every item (a shape, a window's offsets), None when one does not fold."""
    out = []
    for d in dims:
        v = fold_int(d)
        if v is None:
            return None
        out.append(v)
    return out
