"""Which statements of a ``split_aiv`` function are cube work.

A mixed InCore function with ``"split_aiv": True`` (after LowerAutoVectorSplit) is
written per AIV lane: each lane loads its half, ``tile.aic_gather`` joins the lanes'
halves into one cube operand, the cube computes, and ``tile.aiv_shard`` hands each
lane its half back. ExpandMixedKernel later moves the cube statements to an AIC kernel
that runs once. The runner reproduces that without the split: every lane runs the
vector statements, lane 0 alone runs the cube statements (the rest bind None), and the
lanes meet at each gather and shard.

A statement is cube work when its result is a tile in a cube memory (Mat, Left, Right,
Acc, Bias ...) or when it reads a value of cube work (a store of an Acc tile, a copy of
one, a loop carrying one). The gather and shard markers themselves run on every lane.
"""

from __future__ import annotations

from .model import Assign, Expr, For, Function, Name, OpCall, TileType, While, Yield, trailing_yield, walk_expr

__all__ = ["CUBE_MEMORIES", "MARKERS", "cube_names"]

# tile memories only the cube core has (pl.Mem members)
CUBE_MEMORIES = frozenset({"Mat", "Left", "Right", "Acc", "Bias", "ScaleLeft", "ScaleRight"})
MARKERS = frozenset({"tile.aiv_shard", "tile.aic_gather", "tensor.aiv_shard", "tensor.aic_gather"})


def _reads(e: Expr, names: set[str]) -> bool:
    return any(isinstance(x, Name) and x.id in names for x in walk_expr(e))


def cube_names(fn: Function) -> set[str]:
    """The names whose assignment in ``fn`` is cube work (run by lane 0 alone)."""
    cube: set[str] = set()
    gathered: set[str] = set()  # results of aic_gather: cube operands, but made on every lane
    changed = True
    while changed:  # loops carry values around: until nothing new is found
        changed = False
        for s in fn.statements():
            if isinstance(s, Assign):
                name = s.target.name
                if name in cube or name in gathered:
                    continue
                if isinstance(s.value, OpCall) and s.value.op in MARKERS:
                    if s.value.op.endswith("aic_gather"):
                        gathered.add(name)
                        changed = True
                    continue
                t = s.target.type
                if isinstance(t, TileType) and t.memspace in CUBE_MEMORIES or _reads(s.value, cube | gathered):
                    cube.add(name)
                    changed = True
            elif isinstance(s, Yield):
                # a yield hands its values to the loop's iter_args and to the loop/if results
                for i, v in enumerate(s.values):
                    if _reads(v, cube | gathered) and i < len(s.targets) and s.targets[i].name not in cube:
                        cube.add(s.targets[i].name)
                        changed = True
            elif isinstance(s, For | While):
                tail = trailing_yield(s.body)
                for i, target in enumerate(s.iter_args):
                    init = s.init_values[i] if i < len(s.init_values) else None
                    back = tail.values[i] if tail is not None and i < len(tail.values) else None
                    carried = any(e is not None and _reads(e, cube | gathered) for e in (init, back))
                    if target.name not in cube and carried:
                        cube.add(target.name)
                        changed = True
    return cube
