"""IR -> a standalone PyTorch script, with a source map back to the dump.

One IR statement becomes one (or a few) lines of Python. Every identifier in
the output is either a sanitised IR name or a ``_pl_`` runtime name, and every
literal is produced here with ``repr`` of a value we parsed: no text of the dump
is copied into the script. The script imports its runtime from
:mod:`pypto_lsp.exec.runtime`; ``exec(code, ns)`` then ``ns[entry](*tensors)``
runs the program, mutating output tensors in place.
"""

from __future__ import annotations

import keyword
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..ir import alloc_budget, trace_keys
from ..ir.catalogue import NEEDS_RESULT_TYPE, lookup
from ..ir.check import transport_split_codes
from ..ir.invariance import same_path_every_call
from ..ir.memory import VIEW_OPS, MemoryPlan, operand_roles, plan_program
from ..ir.model import (
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
    Name,
    OpCall,
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
    Type,
    UnaryOp,
    Unpack,
    While,
    Yield,
    entry_function,
    stmt_exprs,
    stmt_targets,
    trailing_yield,
    walk_expr,
    walk_stmts,
)
from ..ir.names import SPLIT_MODE_CODE
from ..ir.tasks import sites_by_call

RUNTIME_MODULE = "pypto_lsp.exec.runtime"

# names the generated code uses itself; IR names equal to one of these get a suffix
_RESERVED = frozenset(
    {"range", "min", "max", "abs", "int", "float", "bool", "len", "None", "True", "False", "print", "self", "object", "type"}
)

if TYPE_CHECKING:
    from ..analysis.sweep_plan import SweepPlan


# ops whose result is an operand's buffer (a view or the same tensor): no allocation to check
_NO_NEW_BUFFER = frozenset(
    {"tensor.view", "tensor.transpose", "tile.transpose", "tile.set_validshape", "tensor.set_validshape", "tile.fillpad_inplace"}
)

# ops whose result is their destination tensor after a write into part of it
WRITES_INTO = frozenset(
    {"tile.store", "tensor.assemble", "tile.assemble", "tensor.write", "tile.write", "tile.scatter_update", "tensor.scatter_update"}
)


class CodegenError(Exception):
    def __init__(self, message: str, span: Span | None) -> None:
        super().__init__(message)
        self.span = span


@dataclass(slots=True)
class GeneratedCode:
    """The script, its source map and what the runner needs to call it."""

    source: str
    filename: str
    line_map: list[Span | None]  # index = generated line - 1
    entry: str | None
    functions: dict[str, str]  # IR function name -> python name
    output_writes: dict[str, list[Span]] = field(default_factory=dict)  # entry param -> statements writing it
    op_symbols: dict[str, str] = field(default_factory=dict)  # IR op name -> the script's name for its kernel (observers wrap them)

    def ir_span(self, gen_line: int) -> Span | None:
        if 1 <= gen_line <= len(self.line_map):
            return self.line_map[gen_line - 1]
        return None


def _sanitize(name: str) -> str:
    s = re.sub(r"\W", "_", name)
    if not s or s[0].isdigit():
        s = "v_" + s
    if keyword.iskeyword(s) or s in _RESERVED or s.startswith("_pl_"):
        s = s + "_v"
    return s


def _literal(v: object) -> str:
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "float('nan')"
        if math.isinf(v):
            return "float('inf')" if v > 0 else "float('-inf')"
        return repr(v)
    if isinstance(v, str):
        return repr(v)
    raise CodegenError(f"cannot emit literal of type {type(v).__name__}", None)


def _op_symbol(op: str) -> str:
    return "_pl_op_" + re.sub(r"\W", "_", op)


class _Frame:
    """A loop or if whose ``pl.yield_`` assigns carried/return values."""

    def __init__(self, kind: str, carried: list[str], targets: list[Target] | None = None) -> None:
        self.kind = kind  # "loop" | "if"
        self.carried = carried  # python names the yield assigns
        self.targets = targets or []  # their IR targets (a loop's iter_args)


class _FunctionGen:
    def __init__(self, gen: _ProgramGen, fn: Function) -> None:
        self.gen = gen
        self.fn = fn
        self.names: dict[str, str] = {}
        self.types: dict[str, Type] = {}
        self.frames: list[_Frame] = []
        self.defined: set[str] = set()
        self.cube: set[str] = set()  # split_aiv function: names only lane 0 computes (ir.cube_side)
        self.carry_types: dict[str, Type] | None = None  # unannotated iter_args (traced code only)
        self.sweep_mode = False  # emitting a sweep's body (see sweep_loop): ops over all iterations
        self.sweep_dead = False  # ... a statement of it whose value nothing uses
        self.sweep_dead_ids: set[int] = set()
        self.mem = gen.memory_plan.functions.get(fn.name) if gen.memory_plan is not None else None
        if self.mem is not None and self.mem.empty:
            self.mem = None
        self.mem_sites: list[str] = []  # site literals of this function's memory plan
        self.mem_site_of: dict[int, int] = {}  # id(statement or op) -> its site (a body emitted twice shares them)
        for p in fn.params:
            self.defined.add(p.name)
            if p.type is not None:
                self.types[p.name] = p.type
        for s in walk_stmts(fn.body):
            for t in stmt_targets(s):
                self.defined.add(t.name)
                if t.type is not None:
                    self.types.setdefault(t.name, t.type)

    def py(self, name: str) -> str:
        p = self.names.get(name)
        if p is None:
            p = _sanitize(name)
            taken = set(self.names.values())
            base, i = p, 1
            while p in taken:
                p = f"{base}_{i}"
                i += 1
            self.names[name] = p
        return p

    def emit(self, indent: int, text: str, span: Span | None) -> None:
        self.gen.lines.append(("    " * indent + text, span))

    # ------------------------------------------------------------------ function

    def generate(self) -> None:
        fn = self.fn
        params = [self.py(p.name) for p in fn.params]
        pyname = self.gen.fn_names[fn.name]
        lanes = _split_aiv_function(fn)
        if lanes is not None:
            # An authored split region outlined as a whole function (pass LowerAutoVectorSplit):
            # its body is the per-lane vector code, so run it once per AIV lane.
            self.emit(0, f"def {pyname}(*_pl_args):", fn.name_span)
            self.emit(1, f"return _pl_rt.run_split_aiv({pyname}_lane, 2, {lanes}, _pl_args)", fn.name_span)
            self.emit(0, "", None)
            pyname = pyname + "_lane"
            from ..ir.cube_side import cube_names

            self.cube = cube_names(fn)
        self.emit(0, f"def {pyname}({', '.join(params)}):", fn.name_span)
        self.emit(1, f"_pl_calls[{_literal(fn.name)}] += 1", fn.name_span)  # for the per-function lens
        if self.cube:
            self.emit(1, "_pl_cube = _pl_rt.runs_cube()", fn.name_span)
        plan_at = self.placeholder(1, fn.name_span) if self.mem is not None else -1  # the frame line: once the sites are known
        body_start = len(self.gen.lines)
        if self.gen.entry is fn:
            for p in fn.params:
                if isinstance(p.type, ScalarType):
                    self.emit(1, f"{self.py(p.name)} = _pl_rt.scalar_arg({self.py(p.name)})", p.span)
        # dynamic dims: bind each symbol from the first parameter that declares it
        bound: set[str] = set()
        for p in fn.params:
            if isinstance(p.type, TensorType | TileType):
                for i, d in enumerate(p.type.shape):
                    if isinstance(d, Name) and d.id not in bound and d.id not in self.defined:
                        bound.add(d.id)
                        self.emit(1, f"{self.py(d.id)} = _pl_rt.dim({self.py(p.name)}, {i})", p.span)
        self.defined |= bound
        for p in fn.params:
            if isinstance(p.type, TensorType | TileType) and p.type.valid_shape is not None:
                v = self.dims(p.type.valid_shape)
                if v is not None:
                    self.emit(1, f"{self.py(p.name)} = _pl_rt.with_valid({self.py(p.name)}, {v})", p.span)
        self.block(fn.body, 1)
        if len(self.gen.lines) == body_start:
            self.emit(1, "pass", fn.span)
        self.emit(0, "", None)
        if self.mem is not None:
            core = _literal(self.mem.core)
            sites = "(" + "".join(x + ", " for x in self.mem_sites) + ")"
            # with sweeps on (not traced, not exact), a kernel whose every call takes the same path
            # is checked in the arenas until one call met no hazard (memory.Session.frame)
            same = ", True" if self.gen.sweeps and same_path_every_call(fn) else ""
            plan = self.gen.constant(f"_pl_mem.Plan({_literal(fn.name)}, {core}, {sites}{same})")
            self.fill(plan_at, 1, f"_pl_m = _pl_mem_session.frame({plan})")

    # ------------------------------------------------------------------ statements

    def block(self, body: list[Stmt], indent: int) -> None:
        start = len(self.gen.lines)
        for s in body:
            self.stmt(s, indent)
        if len(self.gen.lines) == start:
            self.emit(indent, "pass", None)

    def mem_site(
        self,
        key: int,
        kind: str,
        name: str,
        line: int,
        space: str,
        start: int,
        nbytes: int,
        dtype: str,
        shape: tuple[int, ...],
        memref: str,
        operands: list[str],
        scratch: list[int],
        view_op: bool,
        pipe: tuple[int, int, int] | None,
    ) -> int:
        """Add a site literal to this function's memory plan; its index. ``key``: the id of the
        statement or op it belongs to (a body emitted twice, as a peeled loop is, shares its sites)."""
        known = self.mem_site_of.get(key)
        if known is not None:
            return known
        ops = "(" + "".join(_literal(o) + ", " for o in operands) + ")"
        scr = "(" + "".join(f"{i}, " for i in scratch) + ")"
        shp = "(" + "".join(f"{d}, " for d in shape) + ")"
        pp = "None" if pipe is None else f"({pipe[0]}, {pipe[1]}, {pipe[2]})"
        self.mem_sites.append(
            f"({_literal(kind)}, {_literal(name)}, {line}, {_literal(space)}, {start}, {nbytes}, {_literal(dtype)}, {shp}, "
            f"{_literal(memref)}, {ops}, {scr}, {view_op}, {pp})"
        )
        self.mem_site_of[key] = len(self.mem_sites) - 1
        return len(self.mem_sites) - 1

    def mem_reads(self, e: Expr, line: int) -> tuple[list[str], list[str], list[int]]:
        """Python names, IR names and scratch positions of the operands of ``e`` that may be placed tiles."""
        if self.mem is None or not isinstance(e, OpCall):
            return [], [], []
        roles = operand_roles(e, self.mem.types)
        return [self.py(n) for _, n, _ in roles], [n for _, n, _ in roles], [k for k, (_, _, r) in enumerate(roles) if r == "scratch"]

    def stmt(self, s: Stmt, ind: int) -> None:
        if self.sweep_mode:
            self.sweep_dead = id(s) in self.sweep_dead_ids
        if isinstance(s, Assign):
            value = self.checked(self.expr(s.value, s.target.type), s.target)
            if self.gen.sanitize and isinstance(s.value, OpCall) and s.value.op == "tensor.create":
                value = self.fresh_tensor(s.value, value, s.target.name, s.span.line)
            # see validate.localize: every assigned value, with its IR name and line -- except a
            # destination after a write into part of it, whose state depends on how writes are cut
            if self.gen.trace and not (isinstance(s.value, OpCall) and s.value.op in WRITES_INTO):
                ops = self._ops(s.value)
                if isinstance(s.value, FuncCall):  # see trace_hooks.CALL
                    ops = ops[:-1] + "'<call>', )"
                value = f"_pl_tr({value}, {_literal(s.target.name)}, {s.span.line}, {ops})"
            elif self.gen.trace:  # a write into part of a tensor: what it depends on, not its value
                value = f"_pl_tw({value}, ({_literal(s.target.name)},), {s.span.line}, {self._ops(s.value)})"
            if self.mem is not None and not self.sweep_mode:  # a batched body leaves the arenas alone (exec.sweep)
                value = self.mem_assign(s, value, ind)
            # (split_aiv functions run before InitMemRef, so cube values are never placed)
            if s.target.name in self.cube:
                value = f"({value}) if _pl_cube else None"  # cube work: lane 0 alone
            self.alloc_guard(s, ind)
            self.emit(ind, f"{self.py(s.target.name)} = {value}", s.span)
        elif isinstance(s, ExprStmt) and self.mem is not None and not self.sweep_mode and isinstance(s.value, OpCall):
            self.mem_read_stmt(s.value, s.span, ind)
            self.emit(ind, self.expr(s.value), s.span)
        elif isinstance(s, Unpack):
            value = self.expr(s.value)
            names = ", ".join(self.py(t.name) for t in s.targets)
            if self.gen.trace:
                ir_names = "".join(_literal(t.name) + ", " for t in s.targets)
                value = f"_pl_tw({value}, ({ir_names}), {s.span.line}, {self._ops(s.value)})"
            self.emit(ind, f"{names}, = {value}", s.span)
        elif isinstance(s, Yield):
            self.yield_stmt(s, ind)
        elif isinstance(s, ExprStmt):
            self.emit(ind, self.expr(s.value), s.span)
        elif isinstance(s, Return):
            if not s.values:
                self.emit(ind, "return None", s.span)
            elif len(s.values) == 1:
                self.emit(ind, f"return {self.expr(s.values[0])}", s.span)
            else:
                self.emit(ind, f"return ({', '.join(self.expr(v) for v in s.values)},)", s.span)
        elif isinstance(s, Break):
            self.emit(ind, "break", s.span)
        elif isinstance(s, Continue):
            self.emit(ind, "continue", s.span)
        elif isinstance(s, Pass):
            self.emit(ind, "pass", s.span)
        elif isinstance(s, FuncAttr):
            return
        elif isinstance(s, For):
            self.for_stmt(s, ind)
        elif isinstance(s, While):
            self.while_stmt(s, ind)
        elif isinstance(s, If):
            self.if_stmt(s, ind)
        elif isinstance(s, Scope):
            self.scope_stmt(s, ind)
        else:  # pragma: no cover - the parser produces no other statement
            raise CodegenError(f"unsupported statement {type(s).__name__}", getattr(s, "span", None))

    def fresh_tensor(self, e: OpCall, value: str, name: str, line: int) -> str:
        """A global buffer the sanitizer follows (exec.sanitizer): unwritten unless ``init_value``."""
        manual = e.kwargs.get("manual_dep")
        md = isinstance(manual, Const) and bool(manual.value)
        hook = "created" if "init_value" in e.kwargs else "fresh"
        return f"_pl_san.{hook}({value}, {line}, {_literal(name)}, {md})"

    def alloc_guard(self, s: Assign, ind: int) -> None:
        """Before an op allocating a result whose shape depends on runtime values (dynamic dims,
        scalar parameters): the budget check of :mod:`pypto_lsp.ir.alloc_budget`. Static shapes were checked
        before the run (validate.budget) and get nothing here."""
        v = s.value
        if not isinstance(v, OpCall) or v.op in WRITES_INTO or v.op in VIEW_OPS or v.op in _NO_NEW_BUFFER:
            return
        spec = lookup(v.op)
        t = s.target.type
        if spec is not None and spec.result == "create" and v.args and isinstance(v.args[0], ListExpr | TupleExpr):
            shape, dt = list(v.args[0].items), v.kwargs.get("dtype")
            dtype = dt.name if isinstance(dt, DTypeRef) else (t.dtype if isinstance(t, TensorType | TileType) else "FP32")
        elif isinstance(t, TensorType | TileType):
            shape, dtype = t.shape, t.dtype
        else:
            return
        dims = self.dims(shape)
        if dims is None or all(isinstance(d, Const) for d in shape):
            return
        temps = spec.temp_bytes if spec is not None else 0
        what = f"{s.target.name}: {v.printed}" if v.printed else s.target.name
        site = self.gen.constant(f"({alloc_budget.itemsize(dtype) + temps}, {_literal(what)}, {_literal(dtype)}, {temps})")
        self.gen.uses_alloc_guard = True
        self.emit(ind, f"_pl_ab.check({dims}, {site})", s.span)

    def mem_read_stmt(self, e: OpCall, span: Span, ind: int) -> None:
        py, names, scratch = self.mem_reads(e, span.line)
        if py:
            idx = self.mem_site(id(e), "r", e.op, span.line, "", 0, 0, "", (), "", names, scratch, False, None)
            self.emit(ind, f"_pl_m.rd({idx}, {', '.join(py)})", span)

    def mem_assign(self, s: Assign, value: str, ind: int) -> str:
        """``value`` wrapped so the result lands in its bytes (and its operands are checked)."""
        assert self.mem is not None
        site = self.mem.sites.get(id(s))
        pop = self.mem.pops.get(id(s))
        py, names, scratch = self.mem_reads(s.value, s.span.line)
        if site is not None:
            v = s.value
            view = isinstance(v, OpCall) and v.op in VIEW_OPS and bool(v.args) and isinstance(v.args[0], Name) and bool(names)
            view = view and isinstance(v, OpCall) and isinstance(v.args[0], Name) and names[0] == v.args[0].id
            idx = self.mem_site(
                id(s),
                "w",
                site.name,
                site.line,
                site.space,
                site.start,
                site.nbytes,
                site.dtype,
                site.shape,
                site.memref(),
                names,
                scratch,
                view,
                None,
            )
            return f"_pl_m.wr({value}, {idx}{''.join(', ' + p for p in py)})"
        if pop is not None:
            r = self.mem.reserves[pop.reserve]
            memref = f"pipe '{r.name}'"
            idx = self.mem_site(
                id(s),
                "p",
                pop.name,
                pop.line,
                pop.space,
                r.start,
                pop.nbytes,
                pop.dtype,
                pop.shape,
                memref,
                [],
                [],
                False,
                (pop.reserve, r.slot_size, r.slot_num),
            )
            return f"_pl_m.pop({value}, {idx})"
        if py and isinstance(s.value, OpCall):
            self.mem_read_stmt(s.value, s.span, ind)
        return value

    def yield_stmt(self, s: Yield, ind: int) -> None:
        if not self.frames:
            # a function-level yield prints as return; a stray one is a static error
            self.emit(ind, "_pl_rt.fail('pl.yield_ outside a loop or if')", s.span)
            return
        frame = self.frames[-1]
        values = [self.expr(v) for v in s.values]
        if self.gen.trace:
            # what the yield hands on (to the next iteration, out of the loop or if) is a value of its line
            handed = s.targets if frame.kind == "if" else frame.targets
            hook = "_pl_tr" if frame.kind == "if" else "_pl_ty"  # to the next iteration: see trace_hooks
            if len(handed) == len(values):
                values = [self._traced(v, t, s.span.line, self._ops(e), hook) for v, t, e in zip(values, handed, s.values, strict=True)]
        if frame.kind == "if":
            names = [self.py(t.name) for t in s.targets]
            if len(names) != len(values):
                self.emit(ind, f"_pl_rt.fail('pl.yield_ gives {len(values)} values for {len(names)} return variables')", s.span)
                return
            if names:
                # simultaneous assignment: a permuting yield must read the old values
                self.emit(ind, f"{', '.join(names)}, = ({', '.join(values)},)", s.span)
            return
        if not frame.carried:
            if values:
                self.emit(ind, f"({', '.join(values)},)", s.span)
            return
        if len(frame.carried) != len(values):
            self.emit(ind, f"_pl_rt.fail('pl.yield_ gives {len(values)} values for {len(frame.carried)} iter_args')", s.span)
            return
        self.emit(ind, f"{', '.join(frame.carried)}, = ({', '.join(values)},)", s.span)

    def _ops(self, *exprs: Expr | None) -> str:
        """The IR names ``exprs`` read, as a tuple literal (for the localisation hooks)."""
        return "(" + "".join(_literal(n) + ", " for n in trace_keys.operands(self.defined, *exprs)) + ")"

    def _traced(self, value: str, target: Target, line: int, ops: str, hook: str = "_pl_tr") -> str:
        """``value`` bound to ``target`` through the localisation hook; a tensor (whose state
        depends on how writes into it are cut) only passes on what it depends on."""
        if self.carry_types is None:
            self.carry_types = trace_keys.carried_types(self.fn, self.types)
        if trace_keys.is_tensor(self.types.get(target.name) or target.type or self.carry_types.get(target.name)):
            return f"_pl_tw({value}, ({_literal(target.name)},), {line}, {ops})"
        return f"{hook}({value}, {_literal(target.name)}, {line}, {ops})"

    def _init_carried(
        self, ind: int, carried: list[str], iter_args: list[Target], inits: list[str], init_exprs: list[Expr], span: Span
    ) -> None:
        if self.gen.trace and len(iter_args) == len(inits):
            inits = [self._traced(v, t, span.line, self._ops(e)) for v, t, e in zip(inits, iter_args, init_exprs, strict=True)]
        self.emit(ind, f"{', '.join(carried)}, = ({', '.join(inits)},)", span)

    def _after_loop(self, trailing: Yield | None, carried: list[str], ind: int, span: Span, iter_args: list[Target] | None = None) -> None:
        if trailing is None or not trailing.targets:
            return
        names = [self.py(t.name) for t in trailing.targets]
        if len(names) == len(carried):
            values = carried
            if self.gen.trace and iter_args is not None and len(iter_args) == len(carried):
                values = [
                    self._traced(c, t, trailing.span.line, f"({_literal(a.name)},)")
                    for c, t, a in zip(carried, trailing.targets, iter_args, strict=True)
                ]
            self.emit(ind, f"{', '.join(names)}, = ({', '.join(values)},)", span)
            for t in trailing.targets:
                if isinstance(t.type, TensorType | TileType) and t.type.valid_shape is not None:
                    v = self.dims(t.type.valid_shape)
                    if v is not None:
                        self.emit(ind, f"{self.py(t.name)} = _pl_rt.with_valid({self.py(t.name)}, {v})", span)

    def for_stmt(self, s: For, ind: int) -> None:
        carried = [self.py(t.name) for t in s.iter_args]
        if carried:
            inits = [self.expr(v) for v in s.init_values]
            if len(inits) != len(carried):
                self.emit(ind, f"_pl_rt.fail('loop has {len(carried)} iter_args but {len(inits)} init values')", s.header_span)
                return
            self._init_carried(ind, carried, s.iter_args, inits, s.init_values, s.header_span)
        var = self.py(s.var.name) if s.var is not None else "_pl_unused"
        outer = ind
        peel: bool | tuple[str, list[tuple[int, str]]] = False
        if self.batched_loop(s, carried, var, ind):
            ind += 1  # the loop as written runs in the else branch of the batched one
        elif (peel := self.pipe_loop(s, carried, var, ind)) is True:
            ind += 1  # likewise (exec.pipebatch)
        elif not peel and self.sweep_loop(s, carried, ind):
            ind += 1  # likewise (exec.sweep)
        if isinstance(peel, tuple):  # placed tiles: a Peel iterates the range (exec.pipebatch.Peel)
            name, batched_call = peel
            peel_at = self.placeholder(ind, s.header_span)
            self.emit(ind, f"for {var} in {name}:", s.header_span)
            for d, t in batched_call:
                self.emit(ind + d, t, s.header_span)
            self.frames.append(_Frame("loop", carried, s.iter_args))
            self.block(s.body, ind + 1)
            self.frames.pop()
            self.fill(peel_at, ind, f"{name} = _pl_pb.Peel({self._range(s)}, _pl_mem_session, _pl_m, {self._pop_sites(s.body)})")
            self._after_loop(trailing_yield(s.body), carried, outer, s.header_span, s.iter_args)
            return
        if s.kind == "spmd":
            it = f"_pl_rt.spmd_blocks({self.expr(s.stop)})"
        elif s.kind == "split_aiv":
            mode = s.kwargs.get("mode")
            code = SPLIT_MODE_CODE.get(mode.member, 0) if isinstance(mode, EnumRef) else 0
            it = f"_pl_rt.split_aiv_lanes({self.expr(s.stop)}, {code})"
        else:
            it = self._range(s)
        counter = None
        if self.gen.trace and s.kind not in ("spmd", "split_aiv"):
            # how often the loop ran is compared too (localisation): keyed by its variable
            key = s.var.name if s.var is not None else (s.iter_args[0].name if s.iter_args else None)
            if key is not None:
                counter = self.gen.next_counter()
                tail = trailing_yield(s.body)
                carried_ir = "".join(_literal(a.name) + ", " for a in s.iter_args)
                results = "".join(_literal(t.name) + ", " for t in (tail.targets if tail is not None else []))
                ops = self._ops(s.start, s.stop, s.step)
                self.emit(
                    ind, f"{counter} = _pl_loop({_literal(key)}, {s.header_span.line}, {ops}, ({carried_ir}), ({results}))", s.header_span
                )
                it = f"{counter}({it})"
        self.emit(ind, f"for {var} in {it}:", s.header_span)
        self.frames.append(_Frame("loop", carried, s.iter_args))
        self.block(s.body, ind + 1)
        self.frames.pop()
        if counter is not None:
            self.emit(ind, f"{counter}.done()", s.header_span)
        self._after_loop(trailing_yield(s.body), carried, outer, s.header_span, s.iter_args)

    def _range(self, s: For) -> str:
        start = self.expr(s.start) if s.start is not None else "0"
        step = self.expr(s.step) if s.step is not None else "1"
        return f"range({start}, {self.expr(s.stop)}, {step})"

    def placeholder(self, ind: int, span: Span) -> int:
        """An empty line to :meth:`fill` once what it needs is known (the memory sites of a body)."""
        self.emit(ind, "", span)
        return len(self.gen.lines) - 1

    def fill(self, at: int, ind: int, text: str) -> None:
        self.gen.lines[at] = ("    " * ind + text, self.gen.lines[at][1])

    def _pop_sites(self, body: list[Stmt]) -> str:
        """The memory sites of the pops of ``body`` (emitted already), as a tuple literal."""
        assert self.mem is not None
        return "(" + "".join(f"{self.mem_site_of[id(st)]}, " for st in body if id(st) in self.mem.pops and id(st) in self.mem_site_of) + ")"

    def batched_loop(self, s: For, carried: list[str], var: str, ind: int) -> bool:
        """A K-chunk accumulation loop as one batched call (see :mod:`.batching`), the loop
        itself emitted by the caller in its ``else:``; False when the loop must run as written."""
        from ..analysis import batching_plan as batching

        plan = batching.plan_loop(s, self.fn) if self.gen.batching else None
        if plan is None:
            return False
        if not carried:  # before ConvertToSSA: the accumulators are the names the body rebinds
            carried = [self.py(a.name) for a in plan if a.name is not None]

        def spec(w: batching.Window) -> str:
            offs = "".join((_literal(o) if isinstance(o, int) else self.expr(o)) + ", " for o in w.offsets)
            return f"{self.py(w.source)}, ({offs}), {w.shape!r}"

        specs = "".join(f"({spec(a.lhs)}, {spec(a.rhs)}), " for a in plan)
        trips = batching.loop_range(s)
        assert trips is not None
        self.emit(ind, f"_pl_b = _pl_bt.kchunk(({''.join(c + ', ' for c in carried)}), ({specs}), {len(trips)})", s.header_span)
        self.emit(ind, "if _pl_b is not None:", s.header_span)
        self.emit(ind + 1, f"{', '.join(carried)}, = _pl_b", s.header_span)
        self.emit(ind + 1, f"{var} = {trips[-1]}", s.header_span)
        self.emit(ind, "else:", s.header_span)
        self.gen.uses_batching = True
        return True

    def pipe_loop(self, s: For, carried: list[str], var: str, ind: int) -> bool | tuple[str, list[tuple[int, str]]]:
        """A loop on one end of a cross-core pipe as one call (see :mod:`.pipebatch`), the loop
        itself emitted by the caller in its ``else:``; False when the loop must run as written.

        With the memory model on placed tiles: the name of a :class:`.pipebatch.Peel` the caller
        iterates instead of the range, and the lines (indent, text) of the batched call the caller
        puts at the top of the body."""
        from ..analysis import pipebatch_plan as pipebatch

        if not self.gen.sweeps or not self.gen.check_shapes or self.cube or (self.mem is None and not self.gen.batching):
            return False
        trips = pipebatch.loop_range(s)
        peel = f"_pl_pk{len(self.gen.lines)}" if self.mem is not None else None
        chunks = f"{peel}.count" if peel is not None else str(len(trips or ()))
        push = pipebatch.plan_push_loop(s, self.fn) if not carried else None
        pop = None if push is not None else pipebatch.plan_pop_loop(s, self.fn) if carried else None
        if trips is None or (push is None and pop is None):
            return False
        if push is not None:
            specs = ""
            for (lhs, rhs), (ldt, rdt) in zip(push.products, push.dtypes, strict=True):
                specs += "(" + self._window_spec(lhs, ldt) + ", " + self._window_spec(rhs, rdt) + "), "
            order = "".join(f"{i}, " for i in push.order)
            from ..analysis.sweep_plan import racy_peer

            paced = ", paced=True" if racy_peer(self.gen.program, self.fn) else ""
            first = f", first={peel}.first" if peel is not None else ""
            call = [(0, f"if _pl_pb.push_loop(({specs}), ({order}), {chunks}{paced}{first}):")]
        else:
            assert pop is not None
            steps = ""
            for slot, p_name, p_type, op, a_name, a_type, first_ in pop.steps:
                steps += f"({slot}, {self._check_args(p_type)}, {_literal(p_name)}, {_literal(op)}, "
                steps += f"{self._check_args(a_type)}, {_literal(a_name)}, {first_}), "
            inits = "".join(c + ", " for c in carried)
            call = [
                (0, f"_pl_b = _pl_pb.pop_accumulate(({inits}), {chunks}, ({steps}), {pop.split}, {pop.pid})"),
                (0, "if _pl_b is not None:"),
                (1, f"{', '.join(carried)}, = _pl_b"),
            ]
        self.gen.uses_pipebatch = True
        if peel is not None:
            # placed tiles: the first and last iterations run in the arenas, the middle batched
            # when they met no hazard (see pipebatch.Peel); the call sits at the top of the body
            return peel, [(1, f"if {peel}.batch:")] + [(d + 2, t) for d, t in call] + [(3, f"{peel}.take()"), (3, "continue")]
        for d, t in call:
            self.emit(ind + d, t, s.header_span)
        self.emit(ind + 1, f"{var} = {trips[-1]}", s.header_span)
        self.emit(ind, "else:", s.header_span)
        return True

    def sweep_loop(self, s: For, carried: list[str], ind: int) -> bool:
        """A loop nest whose iterations are independent, its body emitted once over all iterations
        (see :mod:`.sweep`), the loop itself emitted by the caller in its ``else:``; False when the
        loop must run as written."""
        from ..analysis import sweep_plan as sweep

        if not self.gen.sweeps or not self.gen.check_shapes or self.cube:
            return False
        plan = sweep.plan_sweep(s, self.fn, self.gen.program, self.types)
        if plan is None:
            return False
        writes = ""
        for written, w in plan.writes:
            parts = sweep.window_parts(w)
            value = w.args[0] if w.op == "tile.store" else w.args[1]
            shape = sweep.static_shape(self.types.get(value.id)) if isinstance(value, Name) else None
            if parts is None or shape is None:
                return False
            offs = "[" + ", ".join(self.expr(o) for o in parts[0]) + "]"
            writes += f"({self.py(written)}, {offs}, {shape!r}), "
        ranges = "".join(f"({t.start}, {t.stop}, {t.step}), " for t in plan.trips)
        paced = ", paced=True" if plan.paced else ""
        self.emit(ind, f"_pl_sw = _pl_swp.Sweep(({ranges}), {plan.pop_first!r}{paced})", s.header_span)
        self._sweep_head(plan, ind, per_item=None)
        reads = "".join(self.py(n) + ", " for n in plan.reads)
        self.emit(ind, f"if _pl_sw.ready(({reads}), ({writes})):", s.header_span)
        if self.mem is None:
            self._sweep_batched(plan, carried, ind + 1, s)
        else:
            # placed tiles: the first and last iterations run one by one in the arenas, the middle
            # batched when the first ones met no hazard (see Sweep.peeled)
            peel_at = self.placeholder(ind + 1, s.header_span)
            self.emit(ind + 2, "if _pl_it is None:", s.header_span)
            self._sweep_head(plan, ind + 3, per_item=None)
            self._sweep_batched(plan, carried, ind + 3, s)
            self.emit(ind + 2, "else:", s.header_span)
            self._sweep_head(plan, ind + 3, per_item="_pl_it")
            self.block(plan.body, ind + 3)
            for name, final in zip(carried, plan.finals, strict=True):
                self.emit(ind + 3, f"{name} = {self.py(final)}", s.header_span)
            self.fill(peel_at, ind + 1, f"for _pl_it in _pl_sw.peeled(_pl_mem_session, _pl_m, {self._pop_sites(plan.body)}):")
        for loop, trips in zip(plan.loops, plan.trips, strict=True):
            assert loop.var is not None
            self.emit(ind + 1, f"{self.py(loop.var.name)} = {trips[-1]}", loop.header_span)
        self.emit(ind, "else:", s.header_span)
        self.gen.uses_sweep = True
        return True

    def _sweep_head(self, plan: SweepPlan, ind: int, per_item: str | None) -> None:
        """A sweep's loop variables (all iterations, or one: ``per_item`` names the tuple of its
        values), each inner level's carried values handed on from its outer level, the scalars."""
        names = [self.py(loop.var.name) for loop in plan.loops if loop.var is not None]
        if per_item is not None:
            self.emit(ind, f"{', '.join(names)}, = {per_item}", plan.loops[0].header_span)
        for level, loop in enumerate(plan.loops):
            if per_item is None:
                self.emit(ind, f"{names[level]} = _pl_sw.var({level})", loop.header_span)
            if level > 0 and loop.iter_args:
                inner = ", ".join(self.py(a.name) for a in loop.iter_args)
                outer = ", ".join(self.py(a.name) for a in plan.loops[level - 1].iter_args)
                self.emit(ind, f"{inner}, = ({outer},)", loop.header_span)
        for _level, st in plan.scalars:
            self.stmt(st, ind)

    def _sweep_batched(self, plan: SweepPlan, carried: list[str], ind: int, s: For) -> None:
        """A sweep's body over its iterations, chunk by chunk; the carried values after it."""
        self.emit(ind, "while _pl_sw.next():", s.header_span)
        self.sweep_mode, self.sweep_dead_ids = True, plan.dead
        try:
            self.block(plan.body, ind + 1)
        finally:
            self.sweep_mode = self.sweep_dead = False
        for name, final in zip(carried, plan.finals, strict=True):
            self.emit(ind, f"{name} = {self.py(final)}", s.header_span)

    def _window_spec(self, w: object, dtype: str) -> str:
        from ..analysis.batching_plan import Window

        assert isinstance(w, Window)
        offs = "".join((_literal(o) if isinstance(o, int) else self.expr(o)) + ", " for o in w.offsets)
        return f"{self.py(w.source)}, ({offs}), {w.shape!r}, {self.gen.dtype(dtype)}"

    def _check_args(self, t: TensorType | TileType) -> str:
        """``shape, dtype, valid`` as :meth:`checked` passes them to ``check_value``."""
        valid = self.dims(t.valid_shape) if t.valid_shape is not None else "None"
        if valid is None or (t.valid_shape is not None and _same_dims(t.valid_shape, t.shape)):
            valid = "None"
        return f"{self.loose_dims(t.shape)}, {self.gen.dtype(t.dtype)}, {valid}"

    def while_stmt(self, s: While, ind: int) -> None:
        if not s.ssa:
            self.emit(ind, f"while {self.expr(s.cond)}:", s.cond_span)
            self.frames.append(_Frame("loop", []))
            self.block(s.body, ind + 1)
            self.frames.pop()
            return
        carried = [self.py(t.name) for t in s.iter_args]
        inits = [self.expr(v) for v in s.init_values]
        if len(inits) != len(carried):
            self.emit(ind, f"_pl_rt.fail('while loop has {len(carried)} iter_args but {len(inits)} init values')", s.span)
            return
        if carried:
            self._init_carried(ind, carried, s.iter_args, inits, s.init_values, s.span)
        self.emit(ind, "while True:", s.span)
        self.emit(ind + 1, f"if not ({self.expr(s.cond)}):", s.cond_span)
        self.emit(ind + 2, "break", s.cond_span)
        self.frames.append(_Frame("loop", carried, s.iter_args))
        self.block(s.body, ind + 1)
        self.frames.pop()
        self._after_loop(trailing_yield(s.body), carried, ind, s.span, s.iter_args)

    def if_stmt(self, s: If, ind: int) -> None:
        self.emit(ind, f"if {self.expr(s.cond)}:", s.span)
        self.frames.append(_Frame("if", []))
        key = trace_keys.branch_key(s) if self.gen.trace else None
        if key is not None:  # which way it went is compared too (localisation)
            self.emit(ind + 1, f"_pl_br({_literal(key)}, {s.span.line}, True, {self._ops(s.cond)})", s.span)
        self.block(s.then, ind + 1)
        if s.orelse or key is not None:
            self.emit(ind, "else:", s.span)
            if key is not None:
                self.emit(ind + 1, f"_pl_br({_literal(key)}, {s.span.line}, False, {self._ops(s.cond)})", s.span)
            if s.orelse:
                self.block(s.orelse, ind + 1)
        self.frames.pop()

    def scope_stmt(self, s: Scope, ind: int) -> None:
        if s.as_name is not None:
            self.emit(ind, f"{self.py(s.as_name.name)} = None", s.span)
        if s.kind == "spmd":
            count = self.expr(s.args[0]) if s.args else self.expr(s.kwargs.get("core_num", Const(1, s.span)))
            self.emit(ind, f"for _pl_unused in _pl_rt.spmd_blocks({count}):", s.span)
            self.block(s.body, ind + 1)
            return
        # pl.at / pl.cluster / pl.scope: transparent for numerics
        start = len(self.gen.lines)
        for b in s.body:
            self.stmt(b, ind)
        if len(self.gen.lines) == start:
            self.emit(ind, "pass", s.span)

    # ------------------------------------------------------------------ types

    def dims(self, dims: list[Expr]) -> str | None:
        """A tuple expression for ``dims``; None when a dim names something unbound here."""
        parts = []
        for d in dims:
            for sub in walk_expr(d):
                if isinstance(sub, Name) and sub.id not in self.defined:
                    return None
                if isinstance(sub, OpCall | FuncCall):
                    return None
            parts.append(self.expr(d))
        return "(" + "".join(p + ", " for p in parts) + ")"

    def checked(self, value: str, target: Target) -> str:
        t = target.type
        if not isinstance(t, TensorType | TileType):
            return value
        valid = self.dims(t.valid_shape) if t.valid_shape is not None else "None"
        if valid is None or (t.valid_shape is not None and _same_dims(t.valid_shape, t.shape)):
            valid = "None"  # a valid region equal to the shape is no region at all
        if not self.gen.check_shapes:
            return value if valid == "None" else f"_pl_rt.with_valid({value}, {valid})"
        shape = self.loose_dims(t.shape)
        check = "_pl_sw.chk" if self.sweep_mode else "_pl_chk"
        return f"{check}({value}, {shape}, {self.gen.dtype(t.dtype)}, {valid}, {_literal(target.name)})"

    def loose_dims(self, dims: list[Expr]) -> str:
        """Like :meth:`dims` but unbound dims become None (not checked)."""
        parts = []
        for d in dims:
            ok = all(not (isinstance(x, Name) and x.id not in self.defined) and not isinstance(x, OpCall | FuncCall) for x in walk_expr(d))
            parts.append(self.expr(d) if ok else "None")
        return "(" + "".join(p + ", " for p in parts) + ")"

    def rtype(self, t: Type | None) -> str:
        if isinstance(t, TensorType | TileType):
            shape = self.dims(t.shape) or "None"
            valid = self.dims(t.valid_shape) if t.valid_shape is not None else None
            layout = _literal(t.layout) if isinstance(t, TensorType) else _literal(t.blayout)
            space = _literal(t.memspace) if isinstance(t, TileType) else "'DDR'"
            return f"_pl_rt.ResultType({shape}, {self.gen.dtype(t.dtype)}, {valid or 'None'}, {layout}, {space})"
        if isinstance(t, ScalarType):
            return f"_pl_rt.ResultType(None, {self.gen.dtype(t.dtype)}, None, None, None)"
        return "None"

    # ------------------------------------------------------------------ expressions

    def expr(self, e: Expr, target_type: Type | None = None) -> str:
        if isinstance(e, Name):
            return self.py(e.id)
        if isinstance(e, Const):
            return _literal(e.value)
        if isinstance(e, DTypeRef):
            return self.gen.dtype(e.name)
        if isinstance(e, EnumRef):
            return _literal(e.member)
        if isinstance(e, BinOp):
            return f"({self.expr(e.left)} {e.op} {self.expr(e.right)})"
        if isinstance(e, UnaryOp):
            op = "not " if e.op == "not" else e.op
            return f"({op}{self.expr(e.operand)})"
        if isinstance(e, ListExpr):
            return "[" + ", ".join(self.expr(i) for i in e.items) + "]"
        if isinstance(e, TupleExpr):
            return "(" + "".join(self.expr(i) + ", " for i in e.items) + ")"
        if isinstance(e, DictExpr):
            return "{" + ", ".join(f"{self.expr(k)}: {self.expr(v)}" for k, v in zip(e.keys, e.values, strict=False)) + "}"
        if isinstance(e, Subscript):
            return f"{self.expr(e.value)}[{self.expr(e.index)}]"
        if isinstance(e, Intrinsic):
            args = [self.expr(a) for a in e.args]
            if e.name in ("min", "max", "abs"):
                return f"{e.name}({', '.join(args)})"
            if e.name == "cast":
                dt = e.args[1].name if len(e.args) > 1 and isinstance(e.args[1], DTypeRef) else "FP32"
                return f"_pl_rt.scalar_cast({args[0] if args else 'None'}, {_literal(dt)})"
            return "None"  # pl.split(...), pl.MemRef(...): inert DSL constructs
        if isinstance(e, OpCall):
            return self.op_call(e, target_type)
        if isinstance(e, FuncCall):
            return self.func_call(e)
        raise CodegenError(f"unsupported expression {type(e).__name__}", getattr(e, "span", None))

    def op_call(self, e: OpCall, target_type: Type | None) -> str:
        sym = self.gen.use_op(e.op)
        args = [self.expr(a) for a in e.args]
        for k, v in e.kwargs.items():
            args.append(f"{_sanitize(k) if not k.isidentifier() else k}={self.expr(v)}")
        if e.op in self.gen.needs_rtype:
            rt = self.rtype(target_type)
            if rt != "None" and _is_static(target_type):
                rt = self.gen.constant(rt)  # built once at module level, not per call
            args.append(f"_rtype={rt}")
        if e.op in ("tile.aic_gather", "tensor.aic_gather"):
            args.append(f"_site={self.gen.next_site()}")
        if self.sweep_mode:  # over all iterations of a sweep (exec.sweep)
            return f"_pl_sw.op({sym}, {_literal(e.op)}, {self.sweep_dead}, {', '.join(args)})"
        return f"{sym}({', '.join(args)})"

    def func_call(self, e: FuncCall) -> str:
        site = self.gen.task_sites.get(id(e)) if self.gen.sanitize else None
        if site is None:
            return self._func_call(e, [self.expr(a) for a in e.args])
        # one runtime task (exec.sanitizer): the sanitizer derives its dependencies, then calls it
        # with the arguments it was given (a call the runtime may run later keeps its arguments)
        args = [self.expr(a) for a in e.args]
        n = len(args)
        inner = self._func_call(e, [f"_pl_a{i}" for i in range(n)], task_id=False)
        params = ", ".join(f"_pl_a{i}" for i in range(n))
        thunk = f"(lambda {params}: {inner})" if n else f"(lambda: {inner})"
        tuple_args = "(" + "".join(a + ", " for a in args) + ")"
        deps = e.kwargs.get("deps")
        dep_s = f", {self.expr(deps)}" if deps is not None else ""
        if e.submit is not None:
            return f"_pl_san.submit({site.index}, {tuple_args}, {thunk}{dep_s})"
        return f"_pl_san.task({site.index}, {tuple_args}, {thunk}{dep_s})"

    def _func_call(self, e: FuncCall, args: list[str], task_id: bool = True) -> str:
        callee = self.gen.program.function(e.func)
        if callee is None:
            call = f"_pl_rt.missing_function({_literal(e.func)})"
        else:
            pyname = self.gen.fn_names[e.func]
            attrs = e.kwargs.get("attrs")
            core_num: Expr | None = None
            if isinstance(attrs, DictExpr):
                for k, v in zip(attrs.keys, attrs.values, strict=False):
                    if isinstance(k, Const) and k.value == "core_num":
                        core_num = v
            if "core_num" in e.kwargs:
                core_num = e.kwargs["core_num"]
            meta = self.gen.group_meta.get(e.func)
            tuple_args = "(" + "".join(a + ", " for a in args) + ")"
            if meta is not None:
                aic, aiv, split, dual = meta
                group = f"{_literal(e.func)}, {self.gen.fn_names[aic]}, {self.gen.fn_names[aiv]}"
                if core_num is not None:
                    launcher = f"_pl_rt.group_launcher({group}, {split}, {dual})"
                    call = f"_pl_rt.run_spmd({launcher}, {self.expr(core_num)}, {tuple_args})"
                else:
                    call = f"_pl_rt.run_group({group}, {tuple_args}, split={split}, dual_aiv_dispatch={dual})"
            elif core_num is not None:
                call = f"_pl_rt.run_spmd({pyname}, {self.expr(core_num)}, {tuple_args})"
            else:
                call = f"{pyname}({', '.join(args)})"
        if e.submit is not None and task_id:
            return f"({call}, None)"
        return call


def _is_static(t: Type | None) -> bool:
    """A type whose shape and valid shape are literal ints (its ResultType is a constant)."""
    if isinstance(t, TensorType | TileType):
        dims = list(t.shape) + list(t.valid_shape or [])
        return all(isinstance(d, Const) and isinstance(d.value, int) for d in dims)
    return isinstance(t, ScalarType)


def _same_dims(a: list[Expr], b: list[Expr]) -> bool:
    return len(a) == len(b) and all(
        isinstance(x, Const) and isinstance(y, Const) and x.value == y.value or isinstance(x, Name) and isinstance(y, Name) and x.id == y.id
        for x, y in zip(a, b, strict=True)
    )


def _split_aiv_function(fn: Function) -> int | None:
    """The split code when ``fn`` is a lane-parametric split_aiv function body, else None."""
    flag = fn.attrs.get("split_aiv")
    if not (isinstance(flag, Const) and flag.value) or fn.kind not in ("InCore", "Opaque"):
        return None
    has_marker = False
    for s in walk_stmts(fn.body):
        if isinstance(s, For) and s.kind == "split_aiv":
            return None  # the region is an explicit loop: the loop runs the lanes
        for e in stmt_exprs(s):
            for sub in walk_expr(e):
                if isinstance(sub, OpCall) and sub.op in ("tile.aiv_shard", "tile.aic_gather", "tensor.aiv_shard", "tensor.aic_gather"):
                    has_marker = True
    return _split_of(fn) or 1 if has_marker else None


def _split_of(fn: Function) -> int:
    v = fn.attrs.get("split")
    if isinstance(v, EnumRef):
        return SPLIT_MODE_CODE.get(v.member, 0)
    if isinstance(v, Const) and isinstance(v.value, int):
        return v.value
    return 0


def group_metadata(program: Program) -> dict[str, tuple[str, str, int, bool]]:
    """Group name -> (aic function, aiv function, split code, dual_aiv_dispatch) (reference §2.3)."""
    meta: dict[str, tuple[str, str, int, bool]] = {}
    for g in program.functions:
        if g.kind != "Group":
            continue
        aic = program.function(g.name + "_aic")
        aiv = program.function(g.name + "_aiv")
        if aic is None or aiv is None:
            continue
        splits = set(transport_split_codes(aic)) | set(transport_split_codes(aiv))
        if len(splits) > 1:
            # conflicting split codes: keep the largest; the checker reports it on the group
            split = max(splits)
        elif splits:
            split = splits.pop()
        else:
            split = _split_of(g) or _split_of(aiv)
        dual_v = aiv.attrs.get("dual_aiv_dispatch")
        dual = bool(isinstance(dual_v, Const) and dual_v.value)
        meta[g.name] = (aic.name, aiv.name, split, dual)
    return meta


class _ProgramGen:
    def __init__(
        self,
        program: Program,
        check_shapes: bool,
        entry: str | None,
        trace: bool = False,
        memory_plan: MemoryPlan | None = None,
        exact: bool | None = None,
        sanitize: bool = False,
    ) -> None:
        self.program = program
        self.check_shapes = check_shapes
        self.trace = trace
        self.memory_plan = memory_plan if memory_plan is not None and memory_plan.placed else None
        self.lines: list[tuple[str, Span | None]] = []
        self.ops: dict[str, str] = {}
        self.dtypes: dict[str, str] = {}
        self.sites = 0
        self.constants: dict[str, str] = {}
        self.fn_names: dict[str, str] = {}
        taken: set[str] = set()
        for f in program.functions:
            base = "_pl_fn_" + re.sub(r"\W", "_", f.name)
            name, i = base, 1
            while name in taken:
                name = f"{base}_{i}"
                i += 1
            taken.add(name)
            self.fn_names[f.name] = name
        if entry is not None:
            self.entry = program.function(entry)
            if self.entry is None:
                raise CodegenError(f"entry function '{entry}' is not in the program", None)
        else:
            self.entry = entry_function(program)
        self.group_meta = group_metadata(program)
        self.sanitize = sanitize
        self.task_sites = sites_by_call(program) if sanitize else {}
        self.needs_rtype = NEEDS_RESULT_TYPE
        from ..analysis import batching_plan as batching

        # batched loops (see .batching): never traced, never exact, never with the memory model on placed tiles
        # (the memory model on a program whose plan places nothing leaves the script values-only)
        self.batching = not trace and not batching.exact(exact) and self.memory_plan is None
        # sweeps run on placed dumps too: their first and last iterations in the arenas (Sweep.peeled)
        self.sweeps = not trace and not batching.exact(exact)
        self.uses_batching = False
        self.uses_alloc_guard = False  # a site of a runtime-sized allocation (see alloc_guard)
        self.uses_pipebatch = False
        self.uses_sweep = False

    def use_op(self, op: str) -> str:
        sym = self.ops.get(op)
        if sym is None:
            sym = _op_symbol(op)
            self.ops[op] = sym
        return sym

    def dtype(self, name: str) -> str:
        sym = self.dtypes.get(name)
        if sym is None:
            sym = "_pl_dt_" + re.sub(r"\W", "_", name)
            self.dtypes[name] = sym
        return sym

    def constant(self, expr: str) -> str:
        """A module-level name for a constant expression (deduplicated)."""
        name = self.constants.get(expr)
        if name is None:
            name = f"_pl_k{len(self.constants)}"
            self.constants[expr] = name
        return name

    def next_site(self) -> int:
        self.sites += 1
        return self.sites

    def next_counter(self) -> str:
        """A fresh local name for a loop's trip counter (traced code only)."""
        self.sites += 1
        return f"_pl_trip{self.sites}"

    def generate(self, filename: str) -> GeneratedCode:
        body_lines: list[tuple[str, Span | None]] = []
        for f in self.program.functions:
            self.lines = []
            _FunctionGen(self, f).generate()
            body_lines.extend(self.lines)
        head: list[tuple[str, Span | None]] = [
            # ascii() escapes every line terminator: a file name can never end the comment
            (f"# generated by pypto-lsp from {ascii(self.program.filename or '<dump>')}", None),
            (f"# program {ascii(self.program.name)}; entry: {ascii(self.entry.name if self.entry else None)}", None),
            (f"import {RUNTIME_MODULE} as _pl_rt", None),
            ("_pl_chk = _pl_rt.check_value", None),
            ("_pl_calls = _pl_rt.call_counter()", None),
        ]
        if self.memory_plan is not None:
            # tiles in per-core byte arenas where the IR places them (pypto_lsp.exec.memory)
            head.append(("import pypto_lsp.exec.memory as _pl_mem", None))
            head.append(("_pl_mem_session = _pl_mem.Session()", None))
        if self.uses_batching:
            head.append(("import pypto_lsp.exec.batching as _pl_bt", None))
        if self.uses_alloc_guard:
            head.append(("import pypto_lsp.ir.alloc_budget as _pl_ab", None))
        if self.uses_pipebatch:
            head.append(("import pypto_lsp.exec.pipebatch as _pl_pb", None))
        if self.uses_sweep:
            head.append(("import pypto_lsp.exec.sweep as _pl_swp", None))
        for name, sym in sorted(self.dtypes.items()):
            head.append((f"{sym} = _pl_rt.dtype({_literal(name)})", None))
        for op, sym in sorted(self.ops.items()):
            head.append((f"{sym} = _pl_rt.kernel({_literal(op)})", None))
        for expr, sym in self.constants.items():
            head.append((f"{sym} = {expr}", None))
        head.append(("", None))
        tail: list[tuple[str, Span | None]] = [("# IR names of the functions", None)]
        for f in self.program.functions:
            # an alias must not rebind a name the script itself uses (builtins, _pl_ runtime names)
            if f.name.isidentifier() and not keyword.iskeyword(f.name) and f.name not in _RESERVED and not f.name.startswith("_pl"):
                tail.append((f"{f.name} = {self.fn_names[f.name]}", None))
        all_lines = head + body_lines + tail
        source = "\n".join(t for t, _ in all_lines) + "\n"
        return GeneratedCode(
            source=source,
            filename=filename,
            line_map=[s for _, s in all_lines],
            entry=self.entry.name if self.entry else None,
            functions=dict(self.fn_names),
            output_writes=output_writes(self.program, self.entry),
            op_symbols=dict(self.ops),
        )


def output_writes(program: Program, entry: Function | None) -> dict[str, list[Span]]:
    """For each output parameter of the entry, the statements that write it.

    A numeric mismatch is reported there: the store/assemble into the parameter
    (followed through SSA names and through calls that pass it on), else the
    entry's return.
    """
    out: dict[str, list[Span]] = {}
    if entry is None:
        return out
    writers = tuple(sorted(WRITES_INTO))
    for p in entry.params:
        if p.direction == "in":
            continue
        spans: list[Span] = []
        _collect_writes(program, entry, p.name, spans, writers, depth=0, seen=set())
        if not spans:
            for s in walk_stmts(entry.body):
                if isinstance(s, Return):
                    spans.append(s.span)
        out[p.name] = spans
    return out


def _collect_writes(
    program: Program, fn: Function, name: str, spans: list[Span], writers: tuple[str, ...], depth: int, seen: set[tuple[str, str]]
) -> None:
    if depth > 8 or (fn.name, name) in seen:
        return
    seen.add((fn.name, name))
    aliases = {name}
    changed = True
    stmts = list(walk_stmts(fn.body))
    # names that hold (a view of) the parameter: SSA renames, iter_args, yields
    while changed:
        changed = False
        for s in stmts:
            if isinstance(s, For | While):
                for t, v in zip(s.iter_args, s.init_values, strict=False):
                    if isinstance(v, Name) and v.id in aliases and t.name not in aliases:
                        aliases.add(t.name)
                        changed = True
            if isinstance(s, Assign):
                v = s.value
                if (
                    (isinstance(v, Name) and v.id in aliases)
                    or (isinstance(v, OpCall) and v.op in writers and _written_name(v) in aliases)
                    or (isinstance(v, FuncCall) and any(isinstance(a, Name) and a.id in aliases for a in v.args))
                ):
                    if s.target.name not in aliases:
                        aliases.add(s.target.name)
                        changed = True
            if isinstance(s, Yield):
                for t, v in zip(s.targets, s.values, strict=False):
                    if isinstance(v, Name) and v.id in aliases and t.name not in aliases:
                        aliases.add(t.name)
                        changed = True
    for s in stmts:
        for e in stmt_exprs(s):
            for sub in walk_expr(e):
                if isinstance(sub, OpCall) and sub.op in writers and _written_name(sub) in aliases:
                    spans.append(s.span)
                elif isinstance(sub, FuncCall):
                    callee = program.function(sub.func)
                    if callee is None:
                        continue
                    targets = [callee]
                    for suffix in ("_aic", "_aiv"):
                        member = program.function(sub.func + suffix)
                        if member is not None and callee.kind == "Group":
                            targets.append(member)
                    for i, a in enumerate(sub.args):
                        if isinstance(a, Name) and a.id in aliases:
                            for c in targets:
                                if i < len(c.params):
                                    _collect_writes(program, c, c.params[i].name, spans, writers, depth + 1, seen)


def _written_name(op: OpCall) -> str | None:
    idx = 2 if op.op == "tile.store" else 0
    if len(op.args) > idx and isinstance(op.args[idx], Name):
        a = op.args[idx]
        assert isinstance(a, Name)
        return a.id
    return None


def generate(
    program: Program,
    check_shapes: bool = True,
    entry: str | None = None,
    filename: str | None = None,
    trace: bool = False,
    memory: bool = True,
    memory_plan: MemoryPlan | None = None,
    exact: bool | None = None,
    sanitize: bool = False,
) -> GeneratedCode:
    """Generate the script for ``program`` (see module docstring).

    ``trace``: pass every assigned value through ``_pl_tr(value, ir_name, ir_line)``, a
    function the runner puts in the script's namespace (see :mod:`pypto_lsp.validate.localize`).
    ``memory``: when the dump places tiles (from InitMemRef on), run them in per-core byte
    arenas where the IR puts them and check every read (:mod:`pypto_lsp.exec.memory`); the
    runner may replace ``_pl_mem_session`` to collect the findings.
    ``exact``: every loop as written (no batched loops, :mod:`.batching`); None: the process default.
    ``sanitize``: every task call and global buffer goes through ``_pl_san``, the run's
    :class:`~pypto_lsp.exec.sanitizer.Sanitizer` (the runner puts it in the namespace).
    """
    fname = filename or f"<pypto-lsp:{program.filename or program.name}>"
    plan = (memory_plan or plan_program(program)) if memory else None
    return _ProgramGen(program, check_shapes, entry, trace, plan, exact, sanitize).generate(fname)


def torch_codegen(program: Program, check_shapes: bool = True) -> str:
    """PyPTO-compatible: the standalone script text."""
    return generate(program, check_shapes).source
