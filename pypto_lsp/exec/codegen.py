"""IR -> a standalone PyTorch script, with a source map back to the dump.

One IR statement becomes one (or a few) lines of Python. Every identifier in
the output is either a sanitised IR name or a ``_pl_`` runtime name, and every
literal is produced here with ``repr`` of a value we parsed: no text of the dump
is copied into the script. The script imports its runtime from
:mod:`pypto_lsp.exec.runtime`; ``exec(code, ns)`` then ``ns[entry](*tensors)``
runs the program, mutating output tensors in place.

What the script does -- which loops run batched, as a pipe transfer or a sweep, what is traced,
which tiles live in the arenas, which calls the sanitizer sees -- is decided before a line is
printed, by :func:`pypto_lsp.analysis.lowering.lower_program`; this module prints those decisions
(``_FunctionGen.low``) and makes none of its own.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Any

from ..analysis.groups import group_metadata
from ..analysis.lowering import KChunk, Lowering, Options, PipePop, PipePush, Sweep, lower_program
from ..analysis.output_writes import output_writes
from ..ir import trace_keys
from ..ir.catalogue import NEEDS_RESULT_TYPE, WRITES_INTO
from ..ir.memory import MemoryPlan, plan_program
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
    stmt_targets,
    trailing_yield,
    walk_expr,
)
from ..ir.names import SPLIT_MODE_CODE
from ..ir.tasks import sites_by_call
from .codegen_checks import CheckLowering
from .codegen_loops import LoopLowering
from .codegen_memory import MemoryLowering, site_literal
from .codegen_ranks import host_wrapper, is_host, is_multi_rank, named_operand, task_scope
from .codegen_tasks import TaskLowering
from .codegen_text import RESERVED, CodegenError, Frame, code_key, is_static, literal, op_symbol, py_name, stop_lines

RUNTIME_MODULE = "pypto_lsp.exec.runtime"
_IMPORT = re.compile(r"^import (pypto_lsp(?:\.\w+)+) as (_pl_\w+)$")

# names the generated code uses itself; IR names equal to one of these get a suffix


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
    # the script as it runs: ``source`` with its import lines blank; the runner puts ``modules``
    # (alias -> module) in its namespace, so the executed code looks nothing up by module path
    executable: str = ""
    modules: dict[str, str] = field(default_factory=dict)
    # the debugger's (exec.frames): def -> IR function, its locals -> IR names, lines with a hook
    py_functions: dict[str, str] = field(default_factory=dict)
    local_names: dict[str, dict[str, str]] = field(default_factory=dict)
    stop_lines: frozenset[int] = frozenset()
    # the first line of each top-level block (the head, each function, the tail): what
    # exec.script_code compiles and reuses one by one
    blocks: tuple[int, ...] = ()
    # constants the runner builds itself (name -> what exec.memory.build makes of it), their
    # lines blank in ``executable`` as imports are: a memory plan spelt out is a few kB of text
    # per kernel that every dump would otherwise compile again (its sites name IR lines)
    built: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)

    def ir_span(self, gen_line: int) -> Span | None:
        if 1 <= gen_line <= len(self.line_map):
            return self.line_map[gen_line - 1]
        return None


class _FunctionGen:
    def __init__(self, gen: _ProgramGen, fn: Function, task_adds: dict[int, bool] | None = None) -> None:
        self.gen = gen
        self.fn = fn
        # the kernel's ``__tasks`` variant: its body over every task of a loop at once (exec.sweep's task
        # sweep; analysis.task_sweep_plan), its ordered adds (ids) printed as Sweep.ordered_add
        self.task_adds = task_adds
        self.low = gen.lowering.functions[fn.name]  # what runs and how (analysis.lowering): printed here
        self.names: dict[str, str] = {}
        self.types: dict[str, Type] = dict(self.low.types)
        self.frames: list[Frame] = []
        self.defined: set[str] = set()
        self.cube: set[str] = set()  # split_aiv function: names only lane 0 computes (ir.cube_side)
        self.carry_types: dict[str, Type] | None = None  # unannotated iter_args (traced code only)
        self.sweep_mode = False  # emitting a sweep's body (see sweep_loop): ops over all iterations
        self.sweep_dead = False  # ... a statement of it whose value nothing uses
        self.sweep_dead_ids: set[int] = set()
        self.mem = self.low.memory if task_adds is None else None  # (a task sweep's variant: values only)
        self.mem_site_values: list[dict[str, Any]] = []  # the sites of this function's memory plan, as keywords
        self.loops = LoopLowering(self)  # batched loops, pipe loops, sweeps (exec.codegen_loops)
        self.memory = MemoryLowering(self)  # memory sites, allocation guards (exec.codegen_memory)
        self.tasks = TaskLowering(self)  # task launches: groups, SPMD, the sanitizer, predicates (exec.codegen_tasks)
        self.checks = CheckLowering(self)  # the annotation checks of assignments, result types (exec.codegen_checks)
        self.mem_site_of: dict[int, int] = {}  # id(statement or op) -> its site (a body emitted twice shares them)
        for p in fn.params:
            self.defined.add(p.name)
        for s in fn.statements():
            for t in stmt_targets(s):
                self.defined.add(t.name)

    def py(self, name: str) -> str:
        p = self.names.get(name)
        if p is None:
            p = py_name(name)
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
        lanes = self.low.lanes
        if lanes is not None:
            # An authored split region outlined as a whole function (pass LowerAutoVectorSplit):
            # its body is the per-lane vector code, so run it once per AIV lane.
            self.emit(0, f"def {pyname}(*_pl_args):", fn.name_span)
            self.emit(1, f"return _pl_rt.run_split_aiv({pyname}_lane, 2, {lanes}, _pl_args)", fn.name_span)
            self.emit(0, "", None)
            self.gen.py_functions[pyname] = fn.name
            pyname = pyname + "_lane"
            self.cube = set(self.low.cube)
        if is_host(fn):  # a multi-rank program's host: every rank joined at its end (exec.ranks)
            self.gen.py_functions[pyname] = fn.name
            pyname = host_wrapper(self, pyname, fn)
        if self.task_adds is not None:
            pyname += "__tasks"
            params.insert(0, "_pl_sweep")
            self.sweep_mode = True  # every statement over all tasks; its loops as written (for_stmt)
        self.gen.py_functions[pyname] = fn.name
        self.gen.local_names[pyname] = self.names  # filled as the body is printed
        self.emit(0, f"def {pyname}({', '.join(params)}):", fn.name_span)
        if self.task_adds is None:  # (a task sweep counts its tasks once it ran: exec.codegen_loops)
            self.emit(1, f"_pl_calls[{literal(fn.name)}] += 1", fn.name_span)  # for the per-function lens
        if self.cube:
            self.emit(1, "_pl_cube = _pl_rt.runs_cube()", fn.name_span)
        plan_at = self.loops.placeholder(1, fn.name_span) if self.mem is not None else -1  # the frame line: once the sites are known
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
            core = literal(self.mem.core)
            sites = "(" + "".join(site_literal(v) + ", " for v in self.mem_site_values) + ")"
            # a kernel whose every call takes the same path is checked in the arenas until one call
            # met no hazard (memory.Session.frame; analysis.lowering decides when)
            same = ", True" if self.low.same_path else ""
            plan = self.gen.constant(
                f"_pl_mem.Plan(function={literal(fn.name)}, core={core}, sites={sites}{same.replace(', ', ', same_path=')})",
                built=(
                    "plan",
                    {"function": fn.name, "core": self.mem.core, "sites": tuple(self.mem_site_values), "same_path": self.low.same_path},
                ),
            )
            self.loops.fill(plan_at, 1, f"_pl_m = _pl_mem_session.frame({plan})")
            if self.low.same_path:
                # its code and placements: a proof kept across runs (memory.Session.frame); none if shared
                kw, key = self.gen.built[plan][1], code_key(self.gen.lines, self.gen.constants)
                kw["key"] = key if kw.get("key", key) == key else None

    # ------------------------------------------------------------------ statements

    def block(self, body: list[Stmt], indent: int) -> None:
        start = len(self.gen.lines)
        for s in body:
            self.stmt(s, indent)
        if len(self.gen.lines) == start:
            self.emit(indent, "pass", None)

    def stmt(self, s: Stmt, ind: int) -> None:
        if self.sweep_mode:
            self.sweep_dead = id(s) in self.sweep_dead_ids
        if isinstance(s, Assign):
            if self.task_adds is not None and id(s) in self.task_adds:
                value = self.checks.checked(self.loops.ordered_add(s), s.target)
                self.emit(ind, f"{self.py(s.target.name)} = {value}", s.span)
                return
            value = self.checks.checked(self.expr(s.value, s.target.type), s.target)
            if self.gen.sanitize and isinstance(s.value, OpCall) and s.value.op == "tensor.create":
                value = self.memory.fresh_tensor(s.value, value, s.target.name, s.span.line)
            # see validate.localize: every assigned value, with its IR name and line -- except a
            # destination after a write into part of it, whose state depends on how writes are cut
            if self.gen.trace and not (isinstance(s.value, OpCall) and s.value.op in WRITES_INTO):
                ops = self._ops(s.value)
                if isinstance(s.value, FuncCall):  # see trace_hooks.CALL
                    ops = ops[:-1] + "'<call>', )"
                value = f"_pl_tr({value}, {literal(s.target.name)}, {s.span.line}, {ops})"
            elif self.gen.trace:  # a write into part of a tensor: what it depends on, not its value
                value = f"_pl_tw({value}, ({literal(s.target.name)},), {s.span.line}, {self._ops(s.value)})"
            if self.mem is not None and not self.sweep_mode:  # a batched body leaves the arenas alone (exec.sweep)
                value = self.memory.mem_assign(s, value, ind)
            # (split_aiv functions run before InitMemRef, so cube values are never placed)
            if s.target.name in self.cube:
                value = f"({value}) if _pl_cube else None"  # cube work: lane 0 alone
            self.memory.alloc_guard(s, ind)
            self.emit(ind, f"{self.py(s.target.name)} = {value}", s.span)
        elif isinstance(s, ExprStmt) and self.mem is not None and not self.sweep_mode and isinstance(s.value, OpCall):
            self.memory.mem_read_stmt(s.value, s.span, ind)
            self.emit(ind, self.expr(s.value), s.span)
            self._reached(s, ind)
        elif isinstance(s, Unpack):
            value = self.expr(s.value)
            names = ", ".join(self.py(t.name) for t in s.targets)
            if self.gen.trace:
                ir_names = "".join(literal(t.name) + ", " for t in s.targets)
                value = f"_pl_tw({value}, ({ir_names}), {s.span.line}, {self._ops(s.value)})"
            self.emit(ind, f"{names}, = {value}", s.span)
        elif isinstance(s, Yield):
            self.yield_stmt(s, ind)
        elif isinstance(s, ExprStmt):
            self.emit(ind, self.expr(s.value), s.span)
            self._reached(s, ind)
        elif isinstance(s, Return):
            self._reached(s, ind)
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

    def _reached(self, s: ExprStmt | Return, ind: int) -> None:
        """Traced code: ``_pl_at(line)`` after a statement that binds nothing, before a return (a
        line the debugger can stop on; see exec.trace_hooks)."""
        if self.gen.trace:
            self.emit(ind, f"_pl_at({s.span.line})", s.span)

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
        return "(" + "".join(literal(n) + ", " for n in trace_keys.operands(self.defined, *exprs)) + ")"

    def _traced(self, value: str, target: Target, line: int, ops: str, hook: str = "_pl_tr") -> str:
        """``value`` bound to ``target`` through the localisation hook; a tensor (whose state
        depends on how writes into it are cut) only passes on what it depends on."""
        if self.carry_types is None:
            self.carry_types = trace_keys.carried_types(self.fn, self.types)
        if trace_keys.is_tensor(self.types.get(target.name) or target.type or self.carry_types.get(target.name)):
            return f"_pl_tw({value}, ({literal(target.name)},), {line}, {ops})"
        return f"{hook}({value}, {literal(target.name)}, {line}, {ops})"

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
                    self._traced(c, t, trailing.span.line, f"({literal(a.name)},)")
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
        # decided by analysis.lowering; printed here (a task sweep's kernel runs its loops as written)
        strategy = self.low.loop(s) if self.task_adds is None else None
        tasks = self.gen.lowering.task_sweeps.loops.get(id(s)) if self.task_adds is None else None
        rest: range | None = None  # the trips the loop as written runs (a task sweep's: those of its sweep)
        if tasks is not None:
            rest = self.loops.task_sweep_loop(s, tasks, carried, var, ind)
            ind += 1  # the loop as written runs in the else branch (exec.sweep: Sweep.tasks_ready)
        elif isinstance(strategy, KChunk):
            self.loops.batched_loop(s, strategy, carried, var, ind)
            ind += 1  # the loop as written runs in the else branch of the batched one
        elif isinstance(strategy, PipePush | PipePop):
            if (peel := self.loops.pipe_loop(s, strategy, carried, var, ind)) is True:
                ind += 1  # likewise (exec.pipebatch)
        elif isinstance(strategy, Sweep):
            self.loops.sweep_loop(s, strategy, carried, ind)
            ind += 1  # likewise (exec.sweep)
        if isinstance(peel, tuple):  # placed tiles: a Peel iterates the range (exec.pipebatch.Peel)
            name, batched_call = peel
            peel_at = self.loops.placeholder(ind, s.header_span)
            self.emit(ind, f"for {var} in {name}:", s.header_span)
            for d, t in batched_call:
                self.emit(ind + d, t, s.header_span)
            self.frames.append(Frame("loop", carried, s.iter_args))
            self.block(s.body, ind + 1)
            self.frames.pop()
            self.loops.fill(
                peel_at, ind, f"{name} = _pl_pipebatch.Peel({self._range(s)}, _pl_mem_session, _pl_m, {self.loops.pop_sites(s.body)})"
            )
            self._after_loop(trailing_yield(s.body), carried, outer, s.header_span, s.iter_args)
            return
        if s.kind == "spmd":
            it = f"_pl_rt.spmd_blocks({self.expr(s.stop)})"
        elif s.kind == "split_aiv":
            mode = s.kwargs.get("mode")
            code = SPLIT_MODE_CODE.get(mode.member, 0) if isinstance(mode, EnumRef) else 0
            it = f"_pl_rt.split_aiv_lanes({self.expr(s.stop)}, {code})"
        elif rest is not None:
            it = f"range({rest.start}, {rest.stop}, {rest.step})"
        else:
            it = self._range(s)
        counter = None
        if self.gen.trace and s.kind not in ("spmd", "split_aiv"):
            # how often the loop ran is compared too (localisation): keyed by its variable
            key = s.var.name if s.var is not None else (s.iter_args[0].name if s.iter_args else None)
            if key is not None:
                counter = self.gen.next_counter()
                tail = trailing_yield(s.body)
                carried_ir = "".join(literal(a.name) + ", " for a in s.iter_args)
                results = "".join(literal(t.name) + ", " for t in (tail.targets if tail is not None else []))
                ops = self._ops(s.start, s.stop, s.step)
                self.emit(
                    ind, f"{counter} = _pl_loop({literal(key)}, {s.header_span.line}, {ops}, ({carried_ir}), ({results}))", s.header_span
                )
                it = f"{counter}({it})"
        self.emit(ind, f"for {var} in {it}:", s.header_span)
        self.frames.append(Frame("loop", carried, s.iter_args))
        self.block(s.body, ind + 1)
        self.frames.pop()
        if counter is not None:
            self.emit(ind, f"{counter}.done()", s.header_span)
        if tasks is not None:
            self.loops.task_sweep_tail(s, tasks, carried, var, outer)
        self._after_loop(trailing_yield(s.body), carried, outer, s.header_span, s.iter_args)

    def _range(self, s: For) -> str:
        start = self.expr(s.start) if s.start is not None else "0"
        step = self.expr(s.step) if s.step is not None else "1"
        return f"range({start}, {self.expr(s.stop)}, {step})"

    def while_stmt(self, s: While, ind: int) -> None:
        if not s.ssa:
            self.emit(ind, f"while {self.expr(s.cond)}:", s.cond_span)
            self.frames.append(Frame("loop", []))
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
        self.frames.append(Frame("loop", carried, s.iter_args))
        self.block(s.body, ind + 1)
        self.frames.pop()
        self._after_loop(trailing_yield(s.body), carried, ind, s.span, s.iter_args)

    def if_stmt(self, s: If, ind: int) -> None:
        self.emit(ind, f"if {self.expr(s.cond)}:", s.span)
        self.frames.append(Frame("if", []))
        key = trace_keys.branch_key(s) if self.gen.trace else None
        if key is not None:  # which way it went is compared too (localisation)
            self.emit(ind + 1, f"_pl_br({literal(key)}, {s.span.line}, True, {self._ops(s.cond)})", s.span)
        self.block(s.then, ind + 1)
        if s.orelse or key is not None:
            self.emit(ind, "else:", s.span)
            if key is not None:
                self.emit(ind + 1, f"_pl_br({literal(key)}, {s.span.line}, False, {self._ops(s.cond)})", s.span)
            if s.orelse:
                self.block(s.orelse, ind + 1)
        self.frames.pop()

    def scope_stmt(self, s: Scope, ind: int) -> None:
        if task_scope(self, s, ind):  # a multi-rank program's task scope (deferred completion)
            return
        if s.as_name is not None:  # ``with pl.at(...)/pl.spmd(...) as tid``: the task id of the launch
            self.emit(ind, f"{self.py(s.as_name.name)} = _pl_rt.task_id()", s.span)
        if s.kind == "spmd":
            count = self.expr(s.args[0]) if s.args else self.expr(s.kwargs.get("core_num", Const(1, s.span)))
            predicate = s.kwargs.get("predicate")
            if predicate is not None:  # not dispatched when the predicate is false at the dispatch point
                self.emit(ind, f"if _pl_rt.holds({self.expr(predicate)}):", s.span)
                ind += 1
            self.emit(ind, f"for _pl_unused in _pl_rt.spmd_blocks({count}):", s.span)
            self.block(s.body, ind + 1)
            if predicate is not None:
                self.emit(ind - 1, "else:", s.span)
                self.tasks.retired(s, ind)
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
            for sub in () if type(d) is Const else walk_expr(d):  # most dims: a literal (nothing to look up)
                if isinstance(sub, Name) and sub.id not in self.defined:
                    return None
                if isinstance(sub, OpCall | FuncCall):
                    return None
            parts.append(self.expr(d))
        return "(" + "".join(p + ", " for p in parts) + ")"

    # ------------------------------------------------------------------ expressions

    def expr(self, e: Expr, target_type: Type | None = None) -> str:
        if isinstance(e, Name):
            return self.py(e.id)
        if isinstance(e, Const):
            return literal(e.value)
        if isinstance(e, DTypeRef):
            return self.gen.dtype(e.name)
        if isinstance(e, EnumRef):
            return literal(e.member)
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
                return f"_pl_rt.scalar_cast({args[0] if args else 'None'}, {literal(dt)})"
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
            args.append(f"{py_name(k) if not k.isidentifier() else k}={self.expr(v)}")
        if e.op in self.gen.needs_rtype:
            rt = self.checks.rtype(target_type)
            if rt != "None" and is_static(target_type):
                rt = self.gen.constant(rt)  # built once at module level, not per call
            args.append(f"_rtype={rt}")
        if e.op in ("tile.aic_gather", "tensor.aic_gather"):
            args.append(f"_site={self.gen.next_site()}")
        args += named_operand(self, e)  # a deadlock names its signal
        if self.sweep_mode:  # over all iterations of a sweep (exec.sweep)
            return f"_pl_sweep.op({sym}, {literal(e.op)}, {self.sweep_dead}, {', '.join(args)})"
        return f"{sym}({', '.join(args)})"

    def func_call(self, e: FuncCall) -> str:
        return self.tasks.call(e)

    def call_of(self, e: FuncCall, args: list[str], task_id: bool = True) -> str:
        """The call itself, with these argument expressions (``exec.codegen_ranks`` prints through it)."""
        return self.tasks.launch(e, args, task_id)


class _ProgramGen:
    def __init__(self, program: Program, entry: str | None, lowering: Lowering) -> None:
        self.program = program
        self.lowering = lowering
        self.check_shapes = lowering.options.check_shapes
        self.trace = lowering.options.trace
        self.memory_plan = lowering.memory
        self.lines: list[tuple[str, Span | None]] = []
        self.ops: dict[str, str] = {}
        self.dtypes: dict[str, str] = {}
        self.sites = 0
        self.constants: dict[str, str] = {}
        self.check_specs: dict[str, str] = {}  # name -> (shape, dtype, valid) of a static annotation (check_spec)
        self.built: dict[str, tuple[str, dict[str, Any]]] = {}  # GeneratedCode.built
        self.fn_names: dict[str, str] = {}
        self.py_functions: dict[str, str] = {}
        self.local_names: dict[str, dict[str, str]] = {}
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
        self.multi_rank = is_multi_rank(program)
        self.sanitize = lowering.options.sanitize
        self.task_sites = sites_by_call(program) if self.sanitize else {}
        self.needs_rtype = NEEDS_RESULT_TYPE
        self.uses_batching = False
        self.uses_alloc_guard = False  # a site of a runtime-sized allocation (see alloc_guard)
        self.uses_pipebatch = False
        self.uses_sweep = False

    def use_op(self, op: str) -> str:
        sym = self.ops.get(op)
        if sym is None:
            sym = op_symbol(op)
            self.ops[op] = sym
        return sym

    def dtype(self, name: str) -> str:
        sym = self.dtypes.get(name)
        if sym is None:
            sym = "_pl_dt_" + re.sub(r"\W", "_", name)
            self.dtypes[name] = sym
        return sym

    def constant(self, expr: str, built: tuple[str, dict[str, Any]] | None = None) -> str:
        """A module-level name for a constant expression (deduplicated). ``built``: the same value
        as :func:`pypto_lsp.exec.memory.build` makes it, which the runner does instead of ``expr``."""
        name = self.constants.get(expr)
        if name is None:
            name = f"_pl_k{len(self.constants)}"
            self.constants[expr] = name
            if built is not None:
                self.built[name] = built
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
        fn_starts: list[int] = []  # each function's first line in body_lines (0-based)
        for f in self.program.functions:
            self.lines = []
            _FunctionGen(self, f).generate()
            fn_starts.append(len(body_lines))
            body_lines.extend(self.lines)
        for name, adds in self.lowering.task_sweeps.kernels.items():  # their __tasks variants
            kernel = self.program.function(name)
            assert kernel is not None
            self.lines = []
            _FunctionGen(self, kernel, adds).generate()
            fn_starts.append(len(body_lines))
            body_lines.extend(self.lines)
            self.uses_sweep = True
        head: list[tuple[str, Span | None]] = [
            # ascii() escapes every line terminator: a file name can never end the comment
            (f"# generated by pypto-lsp from {ascii(self.program.filename or '<dump>')}", None),
            (f"# program {ascii(self.program.name)}; entry: {ascii(self.entry.name if self.entry else None)}", None),
            (f"import {RUNTIME_MODULE} as _pl_rt", None),  # (see GeneratedCode.modules)
            ("_pl_chk = _pl_rt.check_value", None),
            ("_pl_chs = _pl_rt.check_spec", None),
            ("_pl_calls = _pl_rt.call_counter()", None),
        ]
        if self.memory_plan is not None:
            # tiles in per-core byte arenas where the IR places them (pypto_lsp.exec.memory)
            head.append(("import pypto_lsp.exec.memory as _pl_mem", None))
            head.append(("_pl_mem_session = _pl_mem.Session()", None))
        if self.uses_batching:
            head.append(("import pypto_lsp.exec.batching as _pl_kchunk", None))
        if self.uses_alloc_guard:
            head.append(("import pypto_lsp.ir.alloc_budget as _pl_ab", None))
        if self.uses_pipebatch:
            head.append(("import pypto_lsp.exec.pipebatch as _pl_pipebatch", None))
        if self.uses_sweep:
            head.append(("import pypto_lsp.exec.sweep as _pl_sweeps", None))
        for name, sym in sorted(self.dtypes.items()):
            head.append((f"{sym} = _pl_rt.dtype({literal(name)})", None))
        for op, sym in sorted(self.ops.items()):
            head.append((f"{sym} = _pl_rt.kernel({literal(op)})", None))
        for sym, spec in sorted(self.check_specs.items()):
            head.append((f"{sym} = {spec}", None))
        for expr, sym in self.constants.items():
            head.append((f"{sym} = {expr}", None))
        built = {f"{sym} = {expr}" for expr, sym in self.constants.items() if sym in self.built}
        head.append(("", None))
        tail: list[tuple[str, Span | None]] = [("# IR names of the functions", None)]
        for f in self.program.functions:
            # an alias must not rebind a name the script itself uses (builtins, _pl_ runtime names)
            if f.name.isidentifier() and not keyword.iskeyword(f.name) and f.name not in RESERVED and not f.name.startswith("_pl"):
                tail.append((f"{f.name} = {self.fn_names[f.name]}", None))
        all_lines = head + body_lines + tail
        blocks = (1, *(len(head) + 1 + i for i in fn_starts), len(head) + len(body_lines) + 1)
        source = "\n".join(t for t, _ in all_lines) + "\n"
        # the script as it runs: its import lines blank (same line numbers), the modules handed in
        modules = {m.group(2): m.group(1) for t, _ in head if (m := _IMPORT.match(t))}
        executable = "\n".join("" if _IMPORT.match(t) or t in built else t for t, _ in all_lines) + "\n"
        return GeneratedCode(
            source=source,
            filename=filename,
            line_map=[s for _, s in all_lines],
            entry=self.entry.name if self.entry else None,
            functions=dict(self.fn_names),
            output_writes=output_writes(self.program, self.entry),
            op_symbols=dict(self.ops),
            executable=executable,
            modules=modules,
            py_functions=dict(self.py_functions),
            local_names={f: {py: ir for ir, py in names.items()} for f, names in self.local_names.items()},
            stop_lines=stop_lines(source) if self.trace else frozenset(),
            blocks=tuple(sorted(set(blocks))),
            built=dict(self.built),
        )


def generate(
    program: Program,
    check_shapes: bool = True,
    entry: str | None = None,
    filename: str | None = None,
    trace: bool = False,
    memory: bool = True,
    memory_plan: MemoryPlan | None = None,
    exact: bool = False,
    sanitize: bool = False,
    lowering: Lowering | None = None,
) -> GeneratedCode:
    """Generate the script for ``program`` (see module docstring).

    ``trace``: pass every assigned value through ``_pl_tr(value, ir_name, ir_line)``, a
    function the runner puts in the script's namespace (see :mod:`pypto_lsp.validate.localize`).
    ``memory``: when the dump places tiles (from InitMemRef on), run them in per-core byte
    arenas where the IR puts them and check every read (:mod:`pypto_lsp.exec.memory`); the
    runner may replace ``_pl_mem_session`` to collect the findings.
    ``exact``: every loop as written (no batched loops, :mod:`.batching`).
    ``sanitize``: every task call and global buffer goes through ``_pl_san``, the run's
    :class:`~pypto_lsp.exec.sanitizer.Sanitizer` (the runner puts it in the namespace).
    ``lowering``: the decisions made already (:func:`pypto_lsp.analysis.lowering.lower_program`);
    by default made here from the arguments above. This function only prints them.
    """
    fname = filename or f"<pypto-lsp:{program.filename or program.name}>"
    if lowering is None:
        plan = (memory_plan or plan_program(program)) if memory else None
        lowering = lower_program(program, Options(trace=trace, exact=exact, check_shapes=check_shapes, sanitize=sanitize), plan)
    return _ProgramGen(program, entry, lowering).generate(fname)


def torch_codegen(program: Program, check_shapes: bool = True) -> str:
    """PyPTO-compatible: the standalone script text."""
    return generate(program, check_shapes).source
