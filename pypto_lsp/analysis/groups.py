"""The Groups of a program and their lanes, from the IR alone (no torch): which AIC and AIV functions
form a Group, its split code and dual dispatch, and whether a function is a lane-parametric
``split_aiv`` body."""

from __future__ import annotations

from ..ir.check import transport_split_codes
from ..ir.model import Const, EnumRef, For, Function, OpCall, Program, stmt_subexprs
from ..ir.names import SPLIT_MODE_CODE

__all__ = ["group_metadata", "split_aiv_function", "split_of"]


def split_aiv_function(fn: Function) -> int | None:
    """The split code when ``fn`` is a lane-parametric split_aiv function body, else None."""
    flag = fn.attrs.get("split_aiv")
    if not (isinstance(flag, Const) and flag.value) or fn.kind not in ("InCore", "Opaque"):
        return None
    has_marker = False
    for s in fn.statements():
        if isinstance(s, For) and s.kind == "split_aiv":
            return None  # the region is an explicit loop: the loop runs the lanes
        for sub in stmt_subexprs(s):
            if isinstance(sub, OpCall) and sub.op in ("tile.aiv_shard", "tile.aic_gather", "tensor.aiv_shard", "tensor.aic_gather"):
                has_marker = True
    return split_of(fn) or 1 if has_marker else None


def split_of(fn: Function) -> int:
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
            split = split_of(g) or split_of(aiv)
        dual_v = aiv.attrs.get("dual_aiv_dispatch")
        dual = bool(isinstance(dual_v, Const) and dual_v.value)
        meta[g.name] = (aic.name, aiv.name, split, dual)
    return meta
