"""The order of a Group's pipe messages, counted through its kernels' loops: whether a vector
lane's push to the cube and its later pop are a round trip, the cube's answer pushed after its pop
of that push (what :mod:`.task_sweep_plan` asks before two dual-dispatch lanes may both write an
ordered sum's window in a sweep). No torch here."""

from __future__ import annotations

from ..ir.model import Assign, ExprStmt, For, Function, If, OpCall, Stmt
from .sweep_plan import POPS, PUSHES
from .task_batch_plan import loop_trips

__all__ = ["MAX_EVENTS", "pipe_op", "round_trips_hold"]

MAX_EVENTS = 4096  # pipe ops of one kernel's run, its loops unrolled


def pipe_op(s: Stmt) -> str | None:
    """The pipe op a statement is (a push or a pop, the whole of its value), else None."""
    v = s.value if isinstance(s, Assign | ExprStmt) else None
    return v.op if isinstance(v, OpCall) and (v.op in PUSHES or v.op in POPS) else None


def _events(body: list[Stmt], out: list[tuple[str, int]]) -> bool:
    """The pipe ops ``body`` runs, in order, its loops unrolled (every trip the same path: the plan's
    kernels branch only on the lane's index); False past MAX_EVENTS of them or a loop
    whose trips do not fold."""
    for s in body:
        if isinstance(s, For):
            rng = loop_trips(s)
            if rng is None:
                return False
            for _ in rng:
                if not _events(s.body, out):
                    return False
            continue
        if isinstance(s, If):
            return False
        op = pipe_op(s)
        if op is not None:
            out.append((op, id(s)))
            if len(out) > MAX_EVENTS:
                return False
    return True


def round_trips_hold(aiv: Function, aic: Function, pairs: list[tuple[int, int]]) -> bool:
    """Every run of each (push, pop) pair of ``pairs`` in the AIV kernel is a round trip through the
    cube: the cube's pop of that push (its j-th pop of the lanes, for the lanes' j-th push) comes
    before its push that the pop takes (its k-th push to the lanes, for the lanes' k-th pop), in the
    cube's own order. A dual-dispatch pair's no-split pop in the cube waits for both lanes' pushes,
    so both lanes' loads before that push come before either lane's store after that pop, whatever
    the scheduler's order. Pipe ops with keywords beyond ``split`` (another pipe id) are declined."""
    if len(dict(pairs)) != len(set(pairs)):
        return False  # (a push two stores share with different pops: one pair each, kept simple)
    lane: list[tuple[str, int]] = []
    cube: list[tuple[str, int]] = []
    if not _events(aiv.body, lane) or not _events(aic.body, cube):
        return False
    for f in (aiv, aic):
        for s in f.statements():
            op = pipe_op(s)
            if op is not None and set(s.value.kwargs) - {"split"}:  # type: ignore[union-attr]
                return False
    cube_pops = [i for i, (op, _) in enumerate(cube) if op == "tile.tpop_from_aiv"]
    cube_pushes = [i for i, (op, _) in enumerate(cube) if op == "tile.tpush_to_aiv"]
    pushes_of = {p for p, _ in pairs}
    pop_of = dict(pairs)
    pushed = popped = 0
    open_push: dict[int, int] = {}  # id(push statement) -> the lanes' index of its last run
    for op, sid in lane:
        if op == "tile.tpush_to_aic":
            if sid in pushes_of:
                open_push[sid] = pushed
            pushed += 1
        elif op == "tile.tpop_from_aic":
            for p, q in pop_of.items():
                if q == sid and p in open_push:
                    j = open_push.pop(p)
                    if j >= len(cube_pops) or popped >= len(cube_pushes) or cube_pops[j] > cube_pushes[popped]:
                        return False
            popped += 1
    return not open_push and all(any(q == sid for _, sid in lane) for q in pop_of.values())
