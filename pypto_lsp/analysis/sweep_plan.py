"""Loop nests whose iterations are independent, run once over all iterations ("sweeps").

The loop this recognises sweeps a window across a tensor: every iteration reads windows at
offsets affine in the loop variables, computes, and writes its result into its own window of a
tensor the loop carries (disjoint from every other iteration's), or hands tiles over a
cross-core pipe. The down projection of a decoder layer after ExpandMixedKernel, both sides::

    for dob, (d,) in pl.range(32, init_values=(d0,)):            # AIV: push, pop, add, store
        for doff, (d2,) in pl.range(0, 128, 64, init_values=(d,)):
            d1 = dob * 128 + doff
            prev = pl.tile.load(d2, [0, d1], [16, 64], [16, 64])
            pl.tile.tpush_to_aic(x, split=0)                     # x computed before the loop
            t = pl.tile.tpop_from_aic(split=0)
            nxt = pl.tile.add(prev, t)
            d3 = pl.tile.store(nxt, [0, d1], d2)
            pl.yield_(d3)
        pl.yield_(...)

    for ... (the same nest on the AIC):                          # AIC: pop, matmul, push
            w = pl.tile.load(w_down, [o0, d1], [64, 64], [64, 64])
            a = pl.tile.tpop_from_aiv(split=0)
            t = pl.tile.matmul(pl.tile.move(a), pl.tile.move(w))
            pl.tile.tpush_to_aiv(t, split=0)

The codegen (:meth:`pypto_lsp.exec.codegen_loops.LoopLowering.sweep_loop`) emits the body once with
every value carrying a leading iteration axis: the loop variables and the scalars affine in them
are :class:`Ix` (one int per iteration), tiles are :class:`Batch` (stacked, or a list when the
items differ), what does not depend on the iteration is computed once. :meth:`Sweep.op` runs an
op over all iterations: windows moving contiguously along one axis are one strided view, the
elementwise ops and matmuls run on the stacked tiles in one call (the same kernel: torch
broadcasts over the new axis), the writes into the carried tensor are one strided copy, pushes
and pops move all iterations' tiles at once; any other case runs the kernel per iteration. The
loop as written stays in the ``else`` branch: :meth:`Sweep.ready` takes it when the write
windows overlap or a tensor the body reads shares storage with one it writes.

Why the results are the loop's:

* the iterations are independent: every write goes to a window of a carried tensor that no
  other iteration writes (checked at run time), the carried tensor is read only in the window
  the same iteration writes (checked when planning), and no other tensor the body reads shares
  its storage (checked at run time);
* pipe traffic keeps each FIFO's order: a body has at most one push and one pop per pipe. A
  body that pushes before it pops pushes all iterations' tiles, then pops all (pushes never
  block: FIFOs are unbounded, so the peer has at least what it had per iteration). A body that
  pops first runs in chunks of as many iterations as the peer has already sent (it never waits
  for a tile the peer would only send after one of this body's pushes). With a pipe in the
  body the peer kernel of the group may not write GM, and the body reads GM only through
  parameters declared ``In`` (or its own carried tensor), so no interleaving can change a read;
* elementwise ops are exact per element whatever the batch; a batched matmul gives each tile's
  own product bit for bit (a product with one row or one column runs tile by tile: BLAS sums a
  matrix-vector product in another order); the both-paths test in
  ``tests/conformance/test_batching.py`` runs every fixture dump both ways and compares the bits;
* checks: each site is checked for every iteration (at once when the items are stacked: one
  dtype, one shape). A statement whose value nothing uses (dead code, e.g. the idle AIV lane's
  add of tiles with an empty valid region) runs for the first iteration of each chunk only, to
  check its site.

With the memory model on a placed program, :meth:`Sweep.peeled` runs the first and last
iterations one by one in the arenas (each placed tile written into its bytes, every operand
checked) and the middle ones batched when the first met no hazard. Not used for traced runs or
with ``exact``: :mod:`.batching` decides for both.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..ir.model import (
    Assign,
    BinOp,
    Const,
    DTypeRef,
    EnumRef,
    Expr,
    ExprStmt,
    For,
    Function,
    If,
    ListExpr,
    Name,
    OpCall,
    Program,
    ScalarType,
    Stmt,
    TensorType,
    TileType,
    TupleExpr,
    Yield,
    stmt_exprs,
    stmt_subexprs,
    stmt_targets,
    walk_expr,
    walk_stmts,
)
from .batching_plan import const_int, loop_range, used_after

__all__ = ["SweepPlan", "plan_sweep"]

# ops that write into their destination tensor (the result is that tensor): the destination
# argument's position
WRITES = {"tile.store": 2, "tensor.assemble": 0, "tile.assemble": 0}
WINDOWS = {"tile.load", "tensor.slice", "tile.slice"}
PUSHES = {"tile.tpush_to_aic": "to_aic", "tile.tpush_to_aiv": "to_aiv"}
POPS = {"tile.tpop_from_aic": "to_aiv", "tile.tpop_from_aiv": "to_aic"}
FREES = {"system.tfree_to_aic", "system.tfree_to_aiv"}
# ops never batched (state across iterations or cores besides the pipes handled here)
_NEVER = ("system.", "tile.aic_gather", "tile.aiv_shard", "tensor.aic_gather", "tensor.aiv_shard")
_WRITES_ANY = frozenset(
    {"tile.store", "tensor.assemble", "tile.assemble", "tensor.write", "tile.write", "tile.scatter_update", "tensor.scatter_update"}
)
_AFFINE_OPS = {"+", "-", "*"}
# the most iterations one sweep batches, and the most bytes one of its written windows may take over
# all of them (a longer nest or a bigger window runs as written: the stacked tiles would not fit)
MAX_ITERATIONS = 4096
MAX_BATCH_BYTES = 256 << 20


@dataclass(slots=True)
class SweepPlan:
    """What the codegen needs to emit a sweep of ``loops`` (outermost first)."""

    loops: list[For]
    trips: list[range]
    scalars: list[tuple[int, Assign]]  # (nest level, statement): the affine scalars, in order
    body: list[Stmt]  # the innermost body's other statements (no scalars, no trailing yield)
    finals: list[str]  # per carried slot: the IR name holding its value after the last iteration
    writes: list[tuple[str, OpCall]]  # (IR name of the tensor written, write op)
    reads: list[str]  # tensors the body reads that are neither carried nor made in the body
    pop_first: tuple[str, int, int] | None  # the pipe a pop-first body is chunked by (op, split, id)
    dead: set[int] = field(default_factory=set)  # ids of statements whose value nothing uses
    paced: bool = False  # push one tile at a time (the consumers race: see racy_peer)


def _lit_int(e: Expr | None, default: int | None = None) -> int | None:
    if e is None:
        return default
    return const_int(e)


def _pipe_kwargs(e: OpCall) -> tuple[int, int] | None:
    """``(split, id)`` of a pipe op whose split is a literal 0 and id a literal (else None)."""
    if set(e.kwargs) - {"split", "id"}:
        return None
    split = _lit_int(e.kwargs.get("split"), 0)
    pid = _lit_int(e.kwargs.get("id"), 0)
    if split != 0 or pid is None:
        return None
    return split, pid


def static_shape(t: Any) -> tuple[int, ...] | None:
    if not isinstance(t, TensorType | TileType):
        return None
    dims = [const_int(d) for d in t.shape]
    return None if any(d is None for d in dims) else tuple(d for d in dims if d is not None)


def _peer(program: Program, fn: Function) -> Function | None:
    """The other kernel of ``fn``'s group (``g_aic`` <-> ``g_aiv``), if any."""
    for mine, other in (("_aic", "_aiv"), ("_aiv", "_aic")):
        if fn.name.endswith(mine):
            base = fn.name[: -len(mine)]
            if program.function(base) is not None:
                return program.function(base + other)
    return None


# the last program asked about, and its answers by function name (the lowering and the sweep plans
# ask for every pipe loop of a function: one answer per function)
_RACY: tuple[Program, dict[str, bool]] | None = None


def racy_peer(program: Program, fn: Function) -> bool:
    """Whether ``fn``'s peer is an AIV kernel whose two lanes write GM outside a branch on the lane:
    then the lanes' reads and writes interleave as the pushes hand them the turn, and the numbers
    depend on it (a race on the hardware too), so pushes keep their one-at-a-time turns."""
    global _RACY
    last = _RACY
    if last is None or last[0] is not program:
        last = _RACY = (program, {})
    hit = last[1].get(fn.name)
    if hit is None:
        hit = last[1][fn.name] = _racy_peer(program, fn)
    return hit


def _racy_peer(program: Program, fn: Function) -> bool:
    peer = _peer(program, fn)
    if peer is None or peer.kind != "AIV" or not _lanes_share(peer):
        return False
    lanes = _lane_names(peer)
    for st in peer.statements():
        if any(e.op in _WRITES_ANY for e in _ops_of(st)) and not _lane_exclusive(st, peer, lanes):
            return True
    return False


def _lanes_share(fn: Function) -> bool:
    """Whether both AIV lanes run ``fn`` (dual dispatch, or a pipe split between the lanes)."""
    dual = fn.attrs.get("dual_aiv_dispatch")
    if isinstance(dual, Const) and dual.value:
        return True
    for st in fn.statements():
        for sub in stmt_subexprs(st):
            if isinstance(sub, OpCall) and "split" in sub.kwargs and const_int(sub.kwargs["split"]) != 0:
                return True
    return False


def _lane_names(fn: Function) -> set[str]:
    """The names ``fn`` binds to its lane (``get_subblock_idx``)."""
    return {
        st.target.name
        for st in fn.statements()
        if isinstance(st, Assign) and isinstance(st.value, OpCall) and st.value.op.endswith("get_subblock_idx")
    }


def _lane_exclusive(loop: Stmt, fn: Function, lane_names: set[str] | None = None) -> bool:
    """Whether ``loop`` sits in a branch on the lane (``if subblock_idx == k``): one lane runs it."""
    if lane_names is None:
        lane_names = _lane_names(fn)

    def is_lane_test(e: Expr) -> bool:
        if not isinstance(e, BinOp) or e.op not in ("==", "!="):
            return False
        sides = (e.left, e.right)
        lane = any(isinstance(x, Name) and x.id in lane_names or isinstance(x, OpCall) and x.op.endswith("get_subblock_idx") for x in sides)
        return lane and any(isinstance(x, Const) for x in sides)

    def find(body: list[Stmt], guarded: bool) -> bool | None:
        for st in body:
            if st is loop:
                return guarded
            for attr in ("body", "then", "orelse"):
                inner = getattr(st, attr, None)
                if isinstance(inner, list):
                    g = guarded or (isinstance(st, If) and is_lane_test(st.cond))
                    r = find(inner, g)
                    if r is not None:
                        return r
        return None

    return bool(find(fn.body, False))


def _writes_gm(fn: Function) -> bool:
    for s in fn.statements():
        for sub in stmt_subexprs(s):
            if isinstance(sub, OpCall) and sub.op in _WRITES_ANY:
                return True
    return False


def _names_in(e: Expr) -> Iterable[str]:
    for sub in walk_expr(e):
        if isinstance(sub, Name):
            yield sub.id


def plan_sweep(loop: For, fn: Function, program: Program, types: dict[str, Any]) -> SweepPlan | None:
    """A :class:`SweepPlan` when ``loop`` (with the loops nested in it) is a sweep, else None.

    ``types``: the function's IR types by name (parameters and annotated assignments).
    """
    # the nest: each level is scalars, the next loop, and a yield handing its results on
    loops: list[For] = []
    scalars: list[tuple[int, Assign]] = []
    cur = loop
    while True:
        trips = loop_range(cur)
        if trips is None or len(trips) == 0 or cur.var is None or len(cur.iter_args) != len(cur.init_values):
            return None
        if loops and [getattr(v, "id", None) for v in cur.init_values] != [a.name for a in loops[-1].iter_args]:
            return None  # an inner level must start from the outer level's carried values, in order
        loops.append(cur)
        body = cur.body
        inner = body[-2] if len(body) >= 2 and isinstance(body[-1], Yield) else (body[-1] if body and not cur.iter_args else None)
        if not isinstance(inner, For) or not all(isinstance(s, Assign) for s in body[: body.index(inner)]):
            break
        if cur.iter_args:
            tail = inner.body[-1] if inner.body else None
            level_yield = body[-1]
            if not isinstance(tail, Yield) or not isinstance(level_yield, Yield):
                return None
            handed = [getattr(v, "id", None) for v in level_yield.values]
            if handed != [t.name for t in tail.targets] or len(level_yield.values) != len(cur.iter_args):
                return None
        elif len(inner.iter_args):
            return None
        scalars.extend((len(loops) - 1, s) for s in body[: body.index(inner)])  # type: ignore[misc]
        cur = inner
    trips_all = [loop_range(x) for x in loops]
    n = math.prod(len(t) for t in trips_all if t is not None)
    if n < 2 or n > MAX_ITERATIONS:
        return None
    inner_loop = loops[-1]
    body = list(inner_loop.body)
    yld: Yield | None = None
    if inner_loop.iter_args:
        last = body.pop() if body else None
        if not isinstance(last, Yield) or len(last.values) != len(inner_loop.iter_args):
            return None
        yld = last
    # names: loop variables and affine scalars (per-iteration ints), carried slots, body values
    ix: set[str] = {x.var.name for x in loops if x.var is not None}
    slot_of: dict[str, int] = {}
    for x in loops:
        for j, a in enumerate(x.iter_args):
            slot_of[a.name] = j
    level_names = {a.name for a in inner_loop.iter_args}
    # before ConvertToSSA a write rebinds the name it writes into (``d = pl.tensor.assemble(d, v, o)``,
    # the same tensor, written in place): such a name is carried like an iter_arg, without a slot
    counts: dict[str, int] = {}
    for st in walk_stmts(loop.body):
        for t in stmt_targets(st):
            counts[t.name] = counts.get(t.name, 0) + 1
    for st in body:
        v = st.value if isinstance(st, Assign) else None
        if isinstance(v, OpCall) and v.op in WRITES and len(v.args) == 3:
            dst = v.args[WRITES[v.op]]
            name = st.target.name  # type: ignore[union-attr]
            if isinstance(dst, Name) and dst.id == name and counts.get(name) == 1 and name not in slot_of:
                slot_of[name] = -1 - len(level_names)
                level_names.add(name)

    def affine(e: Expr) -> bool:
        if isinstance(e, Const):
            return isinstance(e.value, int) and not isinstance(e.value, bool)
        if isinstance(e, Name):
            return e.id in ix or (e.id not in slot_of and isinstance(types.get(e.id), ScalarType) and e.id not in local)
        if isinstance(e, BinOp):
            return e.op in _AFFINE_OPS and affine(e.left) and affine(e.right)
        return False

    local: set[str] = set()
    for _lvl, s in scalars:
        if not affine(s.value) or s.target.name in ix:
            return None
        ix.add(s.target.name)
    rest: list[Stmt] = []
    for st in body:
        if isinstance(st, Assign) and not isinstance(st.value, OpCall) and not isinstance(st.value, Name) and affine(st.value):
            if st.target.type is not None and not isinstance(st.target.type, ScalarType):
                return None
            scalars.append((len(loops) - 1, st))
            ix.add(st.target.name)
        else:
            rest.append(st)
    # the other statements
    writes: list[tuple[str, OpCall]] = []
    write_result: dict[str, int] = {}
    alias: dict[str, int] = {}
    windows_of_carried: list[tuple[int, OpCall]] = []
    pipes: list[tuple[str, str, int, int]] = []  # (push|pop, fifo direction, split, id)
    free: set[str] = set()

    def check_expr(e: Expr, top: Assign | ExprStmt) -> bool:
        """Ops allowed, carried names only where a sweep can keep them; collects free names."""
        if isinstance(e, Name):
            if e.id in slot_of:
                return False  # a carried tensor anywhere but a window source or a write target
            if e.id not in local and e.id not in ix:
                free.add(e.id)
            return True
        if isinstance(e, Const | DTypeRef | EnumRef):
            return True
        if isinstance(e, ListExpr | TupleExpr):
            return all(affine(i) or check_expr(i, top) for i in e.items)
        if isinstance(e, BinOp):
            return affine(e)
        if not isinstance(e, OpCall):
            return False
        op = e.op
        if op in FREES:
            return isinstance(top, ExprStmt) and all(check_expr(a, top) for a in e.args)
        if op.startswith(_NEVER) or op in _WRITES_ANY and op not in WRITES:
            return False
        args = list(e.args)
        if op in WRITES:
            pos = WRITES[op]
            if not isinstance(top, Assign) or top.value is not e or len(args) != 3 or set(e.kwargs) - {"target_memory"}:
                return False
            dst = args[pos]
            if not isinstance(dst, Name) or dst.id not in level_names:
                return False
            writes.append((dst.id, e))
            write_result[top.target.name] = slot_of[dst.id]
            args = [a for i, a in enumerate(args) if i != pos]
        elif op in WINDOWS and args and isinstance(args[0], Name) and args[0].id in slot_of:
            if args[0].id not in level_names:
                return False
            windows_of_carried.append((slot_of[args[0].id], e))
            args = args[1:]
        elif op in PUSHES or op in POPS:
            kw = _pipe_kwargs(e)
            if kw is None:
                return False
            if op in POPS and not (isinstance(top, Assign) and top.value is e):
                return False
            pipes.append(("push" if op in PUSHES else "pop", PUSHES.get(op) or POPS[op], kw[0], kw[1]))
        return all(check_expr(a, top) for a in args) and all(check_expr(v, top) for v in e.kwargs.values())

    for s in rest:  # type: ignore[assignment]
        if isinstance(s, Assign):
            rebinds = slot_of.get(s.target.name, 0) < 0  # a write rebinding the name it writes (pre-SSA)
            if not isinstance(s.target.type, TensorType | TileType | type(None)) or s.target.name in slot_of and not rebinds:
                return None
            if isinstance(s.value, Name) and s.value.id in slot_of:
                if s.value.id not in level_names:
                    return None
                alias[s.target.name] = slot_of[s.value.id]
            elif not check_expr(s.value, s):
                return None
            if not rebinds:
                local.add(s.target.name)
        elif isinstance(s, ExprStmt):
            if not isinstance(s.value, OpCall) or not check_expr(s.value, s):
                return None
        else:
            return None
    # carried: one write per slot at most; the carried tensor read only where this iteration writes
    by_slot: dict[int, OpCall] = {}
    for name, w in writes:
        j = slot_of[name]
        if j in by_slot:
            return None
        by_slot[j] = w
    for j, win in windows_of_carried:
        written = by_slot.get(j)
        if written is None:
            continue  # never written in the loop: read like any other tensor
        if not _same_window(win, written):
            return None
    finals: list[str] = []
    if yld is not None:
        for j, (v, a) in enumerate(zip(yld.values, inner_loop.iter_args, strict=True)):
            if not isinstance(v, Name):
                return None
            if v.id == a.name or alias.get(v.id) == j or write_result.get(v.id) == j:
                finals.append(v.id)
            else:
                return None
    elif any(slot_of[name] >= 0 for name, _ in writes):
        return None
    # pipes: at most one op per FIFO and direction; all pushes before all pops, or one pop first
    keys = [(k, d, sp, pid) for k, d, sp, pid in pipes]
    if len(set(keys)) != len(keys):
        return None
    kinds = [k for k, *_ in pipes]
    pop_first: tuple[str, int, int] | None = None
    if pipes:
        if kinds[0] == "pop":
            # one pop, then pushes: chunked by what the peer has sent
            if kinds.count("pop") != 1:
                return None
            pop_op = next(e for s in rest for e in _ops_of(s) if e.op in POPS)
            pop_first = (pop_op.op, pipes[0][2], pipes[0][3])
        elif "push" in kinds[kinds.index("pop") :] if "pop" in kinds else False:
            return None  # a push after a pop: per iteration it may answer what the peer waits for
        # concurrency with the peer kernel: this body reads GM only through parameters declared
        # In (or its own carried tensor), and when it writes GM the peer writes none
        peer = _peer(program, fn)
        if writes and peer is not None and _writes_gm(peer):
            return None
        # the other AIV lane runs this loop too (a dual-dispatch or split kernel, outside a branch on
        # the lane): its reads and writes of the same windows interleave with this lane's at every
        # pipe op. A sweep keeps their order only in a round trip that reads the windows before it
        # pushes and writes them after its pop: the cube answers iteration i once both lanes pushed
        # it, so both lanes read window i before either writes it, batched or not.
        if writes and fn.kind == "AIV" and _lanes_share(fn) and not _lane_exclusive(loop, fn):
            order = [
                ("push" if e.op in PUSHES else "pop" if e.op in POPS else "write" if e.op in WRITES else "read")
                for st in rest
                for e in _ops_of(st)
                if e.op in PUSHES
                or e.op in POPS
                or e.op in WRITES
                or (e.op in WINDOWS and e.args and isinstance(e.args[0], Name) and e.args[0].id in slot_of)
            ]
            if "push" not in order or "pop" not in order:
                return None
            first_push, first_pop = order.index("push"), order.index("pop")
            if "read" in order[first_push:] or "write" in order[:first_pop] or first_pop < first_push:
                return None
        params = {p.name: p for p in fn.params}
        for name in free:
            p = params.get(name)
            if p is not None and isinstance(p.type, TensorType) and p.direction != "in":
                return None
    # what the body computes is not used after the loop (the carried results aside)
    tails = {t.name for x in loops for s in x.body[-1:] if isinstance(s, Yield) for t in s.targets}
    made = {t.name for s in inner_loop.body for t in stmt_targets(s)} | ix
    made |= {t.name for x in loops for s in x.body if isinstance(s, Assign) for t in stmt_targets(s)}
    if used_after(loop, fn, made - tails - {n for n, j in slot_of.items() if j < 0}):
        return None
    reads = sorted(n for n in free if isinstance(types.get(n), TensorType | TileType) and n not in slot_of)
    plan = SweepPlan(loops, [t for t in trips_all if t is not None], scalars, rest, finals, writes, reads, pop_first)
    plan.dead = _dead(rest, set(finals))
    plan.paced = "push" in kinds and racy_peer(program, fn)
    return plan


def _ops_of(s: Stmt) -> Iterable[OpCall]:
    for sub in stmt_subexprs(s):
        if isinstance(sub, OpCall):
            yield sub


def window_parts(e: OpCall) -> tuple[list[Expr], list[Expr]] | None:
    """(offsets, shape) expressions of a window or write op."""
    a = e.args
    if e.op == "tile.load" and len(a) >= 3 and isinstance(a[1], ListExpr) and isinstance(a[2], ListExpr):
        return list(a[1].items), list(a[2].items)
    if e.op in ("tensor.slice", "tile.slice") and len(a) >= 3 and isinstance(a[1], ListExpr) and isinstance(a[2], ListExpr):
        return list(a[2].items), list(a[1].items)
    if e.op == "tile.store" and len(a) == 3 and isinstance(a[1], ListExpr):
        return list(a[1].items), []
    if e.op in ("tensor.assemble", "tile.assemble") and len(a) == 3 and isinstance(a[2], ListExpr):
        return list(a[2].items), []
    return None


def _same_expr(x: Expr, y: Expr) -> bool:
    if isinstance(x, Name) and isinstance(y, Name):
        return x.id == y.id
    if isinstance(x, Const) and isinstance(y, Const):
        return x.value == y.value
    if isinstance(x, BinOp) and isinstance(y, BinOp):
        return x.op == y.op and _same_expr(x.left, y.left) and _same_expr(x.right, y.right)
    return False


def _same_window(win: OpCall, write: OpCall) -> bool:
    """The window reads where the write writes (the same offsets; the shape is checked at run time)."""
    a, b = window_parts(win), window_parts(write)
    if a is None or b is None or len(a[0]) != len(b[0]):
        return False
    return all(_same_expr(x, y) for x, y in zip(a[0], b[0], strict=True))


def _dead(body: list[Stmt], finals: set[str]) -> set[int]:
    """Statements whose value is used by nothing that has an effect (pushes, pops, writes, results)."""
    live = set(finals)
    dead: set[int] = set()
    for s in reversed(body):
        effect = isinstance(s, ExprStmt) or any(e.op in WRITES or e.op in POPS for e in _ops_of(s))
        if isinstance(s, Assign) and not effect and s.target.name not in live:
            dead.add(id(s))
            continue
        for e in stmt_exprs(s):
            live.update(_names_in(e))
    return dead
