"""Where the IR puts each tile: a static memory plan per function, and the checks it allows.

From InitMemRef on, every on-chip tile carries ``pl.MemRef(base, offset, size)`` and each
base is a ``base: pl.Ptr = pl.tile.alloc(pl.Mem.<Space>, SIZE)`` of its function (pass-dump
reference §4.8). Before AllocateMemoryAddr the offsets are all 0 and a buffer is identified
by its base (MemoryReuse gives tiles whose lifetimes do not overlap the same base); after it
the offset is the tile's byte address in its core's memory space. A program is *addressed*
when any on-chip MemRef has a non-zero offset (AllocateMemoryAddr runs over the whole
program; a program whose every tile is at 0 has one buffer per space and function, where
both readings agree).

The plan gives every placed assignment a byte range ``[start, start + footprint)`` in a
per-function address space per memory space: the real address when addressed, else a
virtual layout that puts each base in its own region. The footprint is what the tile's shape
and dtype occupy, not the MemRef size (the buffer's). Pipes: the consumer reserves the slot
ring (``system.reserve_buffer``; Vec on the AIV, Mat on the AIC) and the k-th popped tile
lives in slot ``k mod slot_num`` at ``base + (k mod slot_num) * slot_size``.

Static findings (the runtime ones live in :mod:`pypto_lsp.exec.memory`): ``capacity`` (a
buffer beyond its memory space), ``bounds`` (a tile larger than its MemRef/alloc) and
``pipe-slot`` (a placed tile inside a reserved pipe ring). No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from . import catalogue
from . import diagnostics as D
from .model import (
    Assign,
    Const,
    EnumRef,
    ExprStmt,
    For,
    Function,
    Name,
    OpCall,
    Program,
    ScalarType,
    Span,
    Stmt,
    TensorType,
    TileType,
    Type,
    While,
    int_literal,
    stmt_targets,
)

KB = 1024

# Per-core capacity of each on-chip memory space, in bytes, from PyPTO's backend descriptions:
# hw-native-sys/pypto src/backend/common/soc.cpp (commit e2d0f78ae6d7), Create910BSoC() and
# Create950SoC(), the ``Mem(MemorySpace::X, bytes, alignment)`` of the CUBE (AIC) and VECTOR
# (AIV) cores. Vec is the usable size there (the physical UB is 8 KB larger; PTO-ISA reserves
# the top, pto-isa#170). The L0 figures are repeated in include/pypto/backend/*/backend_*_handler.h.
CAPACITIES: dict[str, dict[str, int]] = {
    "910B": {"Mat": 512 * KB, "Left": 64 * KB, "Right": 64 * KB, "Acc": 128 * KB, "Bias": 1 * KB, "Vec": 184 * KB},
    "950": {
        "Mat": 512 * KB,
        "Left": 64 * KB,
        "Right": 64 * KB,
        "Acc": 256 * KB,
        "Bias": 4 * KB,
        "LeftScale": 4 * KB,
        "RightScale": 4 * KB,
        "Vec": 240 * KB,
    },
}
_BACKEND_ALIASES = {"910B": "910B", "ASCEND910B": "910B", "A2": "910B", "A3": "910B", "950": "950", "ASCEND950": "950", "A5": "950"}

AIC_SPACES = frozenset({"Mat", "Left", "Right", "Acc", "Bias", "LeftScale", "RightScale"})
ON_CHIP = AIC_SPACES | {"Vec"}

# Bits per element on the hardware (torch widens some of these; the footprint is the hardware's).
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "INT4": 4,
    "UINT4": 4,
    "FP4": 4,
    "HF4": 4,
    "INT8": 8,
    "UINT8": 8,
    "FP8E4M3FN": 8,
    "FP8E5M2": 8,
    "FP8E8M0": 8,
    "HF8": 8,
    "INT16": 16,
    "UINT16": 16,
    "FP16": 16,
    "BF16": 16,
    "INT32": 32,
    "UINT32": 32,
    "FP32": 32,
    "INT64": 64,
    "UINT64": 64,
    "INDEX": 64,
    "TASK_ID": 64,
}

# ops whose result is their operand's bytes seen another way (when the IR places it there)
# tile.tget_scale_addr binds an MX scale tile's address and returns that tile (pypto matmul_mx.cpp:
# output_reuses_input(0)): its result is the same bytes, not a write.
VIEW_OPS = frozenset(
    {"tile.reshape", "tile.move", "tile.transpose_view", "tile.slice", "tile.extract", "tensor.reshape", "tile.tget_scale_addr"}
)

POP_SPACE = {"tile.tpop_from_aic": "Vec", "tile.tpop_from_aiv": "Mat"}
_VIRTUAL_ALIGN = 64


class BackendError(ValueError):
    pass


def capacities(backend: str | None = None) -> dict[str, int]:
    """Capacity per memory space: of ``backend``, or the largest over PyPTO's backends."""
    if backend:
        key = _BACKEND_ALIASES.get(backend.strip().upper().replace("_", "").replace("-", ""))
        if key is None:
            raise BackendError(f"unknown backend {backend!r}: expected one of {sorted(CAPACITIES)}")
        return dict(CAPACITIES[key])
    out: dict[str, int] = {}
    for caps in CAPACITIES.values():
        for space, n in caps.items():
            out[space] = max(out.get(space, 0), n)
    return out


class Hazard(TypedDict, total=False):
    """One memory or sanitizer finding as it travels (``validate --json``, the worker, the server).

    Every finding has ``kind``, ``line``, ``name``, ``other_line``, ``other_name``, ``space``, ``core``,
    ``range`` and ``message``; a race adds ``tensor``, ``region``, ``race`` (RAW/WAR/WAW), ``tasks``,
    ``calls``, ``direction`` and ``other_order``; an ``uninitialised`` value's path adds ``related``
    (the lines it flowed through, first read first)."""

    kind: str  # overwrite | pipe-slot | capacity | bounds | race | uninitialised | out-of-bounds
    line: int
    name: str
    other_line: int | None
    other_name: str | None
    space: str
    core: str
    range: list[int]
    message: str
    tensor: str
    region: str
    race: str
    tasks: list[int]
    calls: list[str]
    direction: str
    other_order: dict[str, Any]
    related: list[int]


@dataclass(frozen=True, slots=True)
class Finding:
    """One memory hazard, static or found while running (``validate --json``'s ``memory.hazards``)."""

    kind: str  # overwrite | pipe-slot | capacity | bounds
    line: int
    name: str
    other_line: int | None
    other_name: str | None
    space: str
    core: str
    start: int
    end: int
    message: str

    def to_json(self) -> Hazard:
        return {
            "kind": self.kind,
            "line": self.line,
            "name": self.name,
            "other_line": self.other_line,
            "other_name": self.other_name,
            "space": self.space,
            "core": self.core,
            "range": [self.start, self.end],
            "message": self.message,
        }

    @staticmethod
    def from_json(d: dict[str, object]) -> Finding:
        r = d.get("range") or [0, 0]
        assert isinstance(r, list)
        ol = d.get("other_line")
        on = d.get("other_name")
        return Finding(
            str(d["kind"]),
            int(d["line"]),  # type: ignore[call-overload]
            str(d["name"]),
            int(ol) if ol is not None else None,  # type: ignore[call-overload]
            str(on) if on is not None else None,
            str(d.get("space", "")),
            str(d.get("core", "")),
            int(r[0]),
            int(r[1]),
            str(d.get("message", "")),
        )


@dataclass(slots=True)
class Site:
    """A placed assignment: its value's bytes."""

    name: str
    line: int
    span: Span
    space: str
    base: str
    start: int  # byte address (addressed) or virtual address
    nbytes: int  # footprint: shape x dtype
    dtype: str
    shape: tuple[int, ...]
    memref_offset: int
    memref_size: int | None
    alloc_size: int | None

    def memref(self) -> str:
        size = "?" if self.memref_size is None else str(self.memref_size)
        return f"MemRef({self.base}, {self.memref_offset}, {size})"


@dataclass(slots=True)
class Reserve:
    """A pipe's slot ring, reserved by the consumer."""

    name: str
    var: str
    line: int
    space: str
    start: int  # byte address (addressed) or virtual address
    size: int
    slot_size: int
    slot_num: int
    direction: str  # "c2v" (popped on the AIV) | "v2c" (popped on the AIC)
    pid: int
    placed: bool  # the base is a real address


@dataclass(slots=True)
class PopSite:
    name: str
    line: int
    space: str
    reserve: int  # index into FunctionPlan.reserves
    nbytes: int
    dtype: str
    shape: tuple[int, ...]


@dataclass(slots=True)
class FunctionPlan:
    name: str
    core: str  # "AIC" | "AIV"
    sites: dict[int, Site] = field(default_factory=dict)  # id(Assign) -> site
    pops: dict[int, PopSite] = field(default_factory=dict)  # id(Assign) -> pop site
    reserves: list[Reserve] = field(default_factory=list)
    types: dict[str, Type] = field(default_factory=dict)  # every typed name of the function

    @property
    def empty(self) -> bool:
        return not self.sites and not self.pops


@dataclass(slots=True)
class MemoryPlan:
    addressed: bool
    functions: dict[str, FunctionPlan]
    findings: list[Finding]
    capacities: dict[str, int]

    @property
    def placed(self) -> bool:
        """Some tile carries a MemRef (from InitMemRef on): the memory model runs.

        Pipe rings alone (reserve_buffer before InitMemRef) do not count: nothing is placed yet."""
        return any(f.sites for f in self.functions.values())


def footprint(t: TileType) -> int | None:
    """Bytes a tile occupies: its static shape times its dtype's size (None if not static)."""
    bits = DTYPE_BITS.get(t.dtype)
    if bits is None:
        return None
    n = 1
    for d in t.shape:
        v = int_literal(d, signed=False)
        if v is None:
            return None
        n *= v
    return (n * bits + 7) // 8


def _shape(t: TileType) -> tuple[int, ...]:
    return tuple(int_literal(d, signed=False) or 0 for d in t.shape)


def _kw_int(op: OpCall, key: str) -> int | None:
    v = op.kwargs.get(key)
    if isinstance(v, Const) and type(v.value) is int:
        return v.value
    return None


def _core_of(fn: Function) -> str:
    return "AIC" if fn.kind == "AIC" else "AIV"


def _is_addressed(program: Program) -> bool:
    """Whether the on-chip MemRef offsets are addresses (AllocateMemoryAddr has run).

    Before it, an offset is a place inside its own base: every base holds the tile it was made for
    at offset 0, and a subview (a slice, a part of a split tile) sits at a non-zero offset inside it.
    After it, the offset is the byte address, and every base but the one at address 0 starts above
    0. So the offsets are addresses when some base's tiles all sit above 0; a subview's non-zero
    offset inside a base that also holds a tile at 0, or a user's ``reserve_buffer(base=...)`` (an
    address the user pins, before the compiler has placed anything else), says nothing. Reading
    placeholders as addresses would put every base at 0 and report overlaps between distinct
    buffers that do not exist.
    """
    lowest: dict[tuple[str, str], int] = {}  # (function, base) -> its tiles' lowest offset
    for fn in program.functions:
        for s in fn.statements():
            if isinstance(s, Assign) and isinstance(s.target.type, TileType):
                m = s.target.type.memref
                if m is None or m.base is None or m.offset is None:
                    continue
                off = int_literal(m.offset, signed=False)
                if off is None:
                    continue
                key = (fn.name, m.base)
                lowest[key] = min(lowest.get(key, off), off)
    return any(off > 0 for off in lowest.values())


def plan_program(program: Program, backend: str | None = None) -> MemoryPlan:
    """The memory plan of every function (see module docstring) and its static findings."""
    caps = capacities(backend)
    addressed = _is_addressed(program)
    plans: dict[str, FunctionPlan] = {}
    findings: list[Finding] = []
    for fn in program.functions:
        plans[fn.name] = _plan_function(fn, addressed, caps, findings)
    return MemoryPlan(addressed, plans, findings, caps)


def _plan_function(fn: Function, addressed: bool, caps: dict[str, int], findings: list[Finding]) -> FunctionPlan:
    core = _core_of(fn)
    plan = FunctionPlan(fn.name, core)
    allocs: dict[str, tuple[str, int | None, Span]] = {}  # base -> (space, size, span)
    stmts: list[Stmt] = list(fn.statements())
    for p in fn.params:
        if p.type is not None:
            plan.types[p.name] = p.type
    for s in stmts:
        for tg in stmt_targets(s):
            if tg.type is not None:
                plan.types.setdefault(tg.name, tg.type)
        if isinstance(s, Assign) and isinstance(s.value, OpCall) and s.value.op in ("tile.alloc", "tensor.alloc"):
            args = s.value.args
            space = args[0].member if args and isinstance(args[0], EnumRef) else None
            size = int_literal(args[1], signed=False) if len(args) > 1 else None
            if space is not None:
                allocs[s.target.name] = (space, size, s.span)
    # iter_args have no annotation: they take their init value's type
    for s in stmts:
        if isinstance(s, For | While):
            for ia, iv in zip(s.iter_args, s.init_values, strict=False):
                if ia.type is None and isinstance(iv, Name) and iv.id in plan.types:
                    plan.types[ia.name] = plan.types[iv.id]
    virtual: dict[tuple[str, str], int] = {}  # (space, base) -> virtual start (not addressed)
    vtop: dict[str, int] = {}

    def vstart(space: str, base: str, size: int) -> int:
        key = (space, base)
        if key not in virtual:
            top = vtop.get(space, 0)
            virtual[key] = top
            vtop[space] = top + -(-max(size, 1) // _VIRTUAL_ALIGN) * _VIRTUAL_ALIGN
        return virtual[key]

    # pipes: reserve_buffer and the initialize_pipe naming it
    reserves_by_var: dict[str, Reserve] = {}
    for s in stmts:
        if isinstance(s, Assign) and isinstance(s.value, OpCall) and s.value.op == "system.reserve_buffer":
            op = s.value
            size = _kw_int(op, "size")
            if size is None:
                continue
            name_v = op.kwargs.get("name")
            rname = name_v.value if isinstance(name_v, Const) and isinstance(name_v.value, str) else s.target.name
            base = _kw_int(op, "base")
            space = "Mat" if core == "AIC" else "Vec"
            placed = addressed and base is not None and base >= 0
            start = base if placed and base is not None else vstart(space, "<pipe " + rname + ">", size)
            reserves_by_var[s.target.name] = Reserve(rname, s.target.name, s.span.line, space, start, size, size, 1, "", 0, placed)
    for s in stmts:
        if (
            isinstance(s, ExprStmt)
            and isinstance(s.value, OpCall)
            and s.value.op in ("system.aiv_initialize_pipe", "system.aic_initialize_pipe")
        ):
            op = s.value
            # the consumer's own ring: AIV pops c2v (arg 0), AIC pops v2c (arg 1)
            idx = 0 if op.op == "system.aiv_initialize_pipe" else 1
            arg = op.args[idx] if len(op.args) > idx else None
            if not isinstance(arg, Name) or arg.id not in reserves_by_var:
                continue
            r = reserves_by_var[arg.id]
            slot_size = _kw_int(op, "slot_size")
            slot_num = _kw_int(op, "slot_num")
            if slot_size and slot_num and slot_size > 0 and slot_num > 0:
                r.slot_size, r.slot_num = slot_size, slot_num
            r.direction = "c2v" if idx == 0 else "v2c"
            r.pid = _kw_int(op, "id") or 0
            if r not in plan.reserves:
                plan.reserves.append(r)
    for r in reserves_by_var.values():
        if r not in plan.reserves:
            r.direction = "c2v" if core == "AIV" else "v2c"
            plan.reserves.append(r)

    for s in stmts:
        if not isinstance(s, Assign):
            continue
        tt = s.target.type
        if not isinstance(tt, TileType):
            continue
        t = tt
        v = s.value
        if isinstance(v, OpCall) and v.op in POP_SPACE and t.memref is None:
            pid = _kw_int(v, "id") or 0
            want = "c2v" if v.op == "tile.tpop_from_aic" else "v2c"
            ri = next((i for i, r in enumerate(plan.reserves) if r.direction == want and r.pid == pid), None)
            nb = footprint(t)
            if ri is not None and nb is not None:
                plan.pops[id(s)] = PopSite(s.target.name, s.span.line, plan.reserves[ri].space, ri, nb, t.dtype, _shape(t))
            continue
        m = t.memref
        if m is None or m.base is None or m.base not in allocs:
            continue  # GM tensors have string bases; an unknown base is the checker's business
        a_space, a_size, _a_span = allocs[m.base]
        space = t.memspace or a_space
        if space not in ON_CHIP:
            continue
        nb = footprint(t)
        off = int_literal(m.offset, signed=False) if m.offset is not None else 0
        if nb is None or off is None:
            continue
        msize = int_literal(m.size, signed=False) if m.size is not None else None
        if addressed:
            start = off
        else:
            start = vstart(space, m.base, max(a_size or 0, msize or 0, nb)) + off
        site = Site(s.target.name, s.span.line, s.target.span, space, m.base, start, nb, t.dtype, _shape(t), off, msize, a_size)
        plan.sites[id(s)] = site
        _static_checks(site, addressed, caps, plan, core, findings)
    return plan


def _static_checks(site: Site, addressed: bool, caps: dict[str, int], plan: FunctionPlan, core: str, out: list[Finding]) -> None:
    limit = site.memref_size if site.memref_size is not None else site.alloc_size
    if limit is not None and site.nbytes > limit:
        out.append(
            Finding(
                "bounds",
                site.line,
                site.name,
                None,
                None,
                site.space,
                core,
                site.start + limit,
                site.start + site.nbytes,
                f"'{site.name}' needs {site.nbytes} bytes ({list(site.shape)} {site.dtype}) but its {site.memref()} holds {limit}",
            )
        )
    elif site.memref_size is not None and site.alloc_size is not None and site.memref_size > site.alloc_size:
        out.append(
            Finding(
                "bounds",
                site.line,
                site.name,
                None,
                None,
                site.space,
                core,
                site.start + site.alloc_size,
                site.start + site.memref_size,
                f"'{site.name}': {site.memref()} is larger than its buffer '{site.base}' ({site.alloc_size} bytes)",
            )
        )
    if not addressed:
        return
    cap = caps.get(site.space)
    end = site.start + max(site.nbytes, site.memref_size or 0)
    if cap is not None and end > cap:
        out.append(
            Finding(
                "capacity",
                site.line,
                site.name,
                None,
                None,
                site.space,
                core,
                max(site.start, cap),
                end,
                f"'{site.name}' at {site.memref()} ends at byte {end}, beyond the {cap // KB} KB of {site.space} on the {core}",
            )
        )
    for r in plan.reserves:
        if not r.placed or r.space != site.space:
            continue
        lo, hi = max(site.start, r.start), min(site.start + site.nbytes, r.start + r.size)
        if lo < hi:
            out.append(
                Finding(
                    "pipe-slot",
                    site.line,
                    site.name,
                    r.line,
                    r.name,
                    site.space,
                    core,
                    lo,
                    hi,
                    f"'{site.name}' at {site.memref()} lies inside the pipe buffer '{r.name}' "
                    f"({site.space} [{r.start}, {r.start + r.size}), {r.slot_num} slot(s) of {r.slot_size} bytes, line {r.line}): "
                    f"a tile pushed into slot {(lo - r.start) // max(r.slot_size, 1)} overwrites it",
                )
            )


_SEVERITY = {"capacity": D.ERROR, "bounds": D.ERROR, "pipe-slot": D.WARNING}


def check_memory(program: Program, backend: str | None = None) -> list[D.Diagnostic]:
    """Static memory diagnostics: ``memory-capacity`` and ``memory-bounds`` (errors: the dump
    cannot run as placed), ``memory-pipe-slot`` (a warning: the run shows what it breaks)."""
    plan = plan_program(program, backend)
    return findings_to_diagnostics(plan.findings, program)


def findings_to_diagnostics(findings: list[Finding], program: Program | None = None) -> list[D.Diagnostic]:
    out: list[D.Diagnostic] = []
    spans = _line_spans(program) if program is not None else {}
    for f in findings:
        span = spans.get(f.line, Span(f.line, 0, f.line, 1))
        d = D.Diagnostic(span, _SEVERITY.get(f.kind, D.ERROR), f"memory-{f.kind}", f.message)
        if f.other_line is not None:
            d.related.append(D.Related(f"'{f.other_name}'", None, spans.get(f.other_line, Span(f.other_line, 0, f.other_line, 1))))
        out.append(d)
    return out


def _line_spans(program: Program) -> dict[int, Span]:
    spans: dict[int, Span] = {}
    for fn in program.functions:
        for s in fn.statements():
            sp = getattr(s, "span", None)
            if isinstance(sp, Span) and sp.line not in spans:
                spans[sp.line] = sp
    return spans


def operand_roles(op: OpCall, types: dict[str, Type]) -> list[tuple[int, str, str]]:
    """(argument index, name, "read" | "scratch") for each operand that may be a placed tile."""
    spec = catalogue.OPS.get(op.op)
    params = spec.params if spec is not None else ()
    out: list[tuple[int, str, str]] = []
    for i, a in enumerate(op.args):
        if not isinstance(a, Name):
            continue
        t = types.get(a.id)
        if isinstance(t, ScalarType | TensorType) or (t is not None and not isinstance(t, TileType)):
            continue
        pname = params[i] if i < len(params) else ""
        out.append((i, a.id, "scratch" if pname.rstrip("?").startswith("tmp") else "read"))
    return out
