"""Uninitialised tiles, from the IR alone (no torch): a ``tile.create`` read before anything wrote it.

On the NPU a new tile holds whatever its bytes held; the simulator zero-fills it, so a lost fill
(``tile.create`` where ``tile.full(..., value=0.0)`` was meant) computes the right numbers here and
garbage on the device. A tile value made by ``tile.create`` is *unwritten*; so is a loop's iter_arg
on the first iteration when its init value is, and a name bound to one. An op that reads an unwritten
tile as an operand is the finding. Not reads: scratch operands (``row_sum``'s ``tmp_tile``, the
catalogue's ``tmp*`` parameters), destinations (``gather_row``'s ``dst``, ``row_expand``'s
``target``), an accumulator with an ``init_cond`` (the op overwrites it), and tiles whose valid region
is empty (``valid_shape=[0, 0]``: an idle lane's tile; bytes outside the valid region are no access).

The finding goes on the ``tile.create`` line (the place to fix: the fill that is missing), with the
first reading line beside it. Tensors (``tensor.create`` without ``init_value``) are followed while
the dump runs, element by element (:mod:`pypto_lsp.exec.sanitizer`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .memory import Hazard, operand_roles
from .model import (
    Assign,
    Const,
    For,
    Function,
    If,
    Name,
    OpCall,
    Program,
    Scope,
    Stmt,
    TileType,
    Type,
    While,
    stmt_subexprs,
    stmt_targets,
)

__all__ = ["UninitRead", "uninitialised_tiles"]

# (op, argument index) that an op writes without reading
_DESTINATIONS = {("tile.gather_row", 0), ("tile.row_expand", 0), ("tile.col_expand", 0), ("tile.mgather", 0), ("tile.assemble", 0)}
# the staging tiles of the tile-level put/get carry the bytes (written before they are read)
_DESTINATIONS |= {(f"pld.tile.{op}", i) for op in ("put", "get") for i in (3, 4)}


@dataclass(slots=True, frozen=True)
class UninitRead:
    name: str  # the created tile
    line: int  # its tile.create
    read_line: int
    read_op: str
    read_name: str  # the operand as read (an iter_arg or the tile itself)
    function: str

    def message(self) -> str:
        via = f" (as '{self.read_name}')" if self.read_name != self.name else ""
        return (
            f"'{self.name}' is made by tile.create (no fill) and read at line {self.read_line} by {self.read_op}{via} "
            "before anything wrote it: on the NPU a new tile holds whatever its bytes held "
            "(a lost tile.full? the simulator zero-fills, the device does not)"
        )

    def to_json(self) -> Hazard:
        return {
            "kind": "uninitialised",
            "line": self.line,
            "name": self.name,
            "other_line": self.read_line,
            "other_name": self.read_name,
            "space": "",
            "core": self.function,
            "range": [0, 0],
            "message": self.message(),
        }


def _empty_valid(t: Type | None) -> bool:
    if not isinstance(t, TileType):
        return False
    dims = list(t.valid_shape or []) + list(t.shape)
    return any(isinstance(d, Const) and d.value == 0 for d in dims)


def _is_read(op: OpCall, index: int) -> bool:
    if (op.op, index) in _DESTINATIONS:
        return False
    return "init_cond" not in op.kwargs


def _function(fn: Function) -> list[UninitRead]:
    types: dict[str, Type] = {}
    for p in fn.params:
        if p.type is not None:
            types[p.name] = p.type
    for s in fn.statements():
        for t in stmt_targets(s):
            if t.type is not None:
                types.setdefault(t.name, t.type)
    # name -> (created name, line, only on a loop's first iteration)
    unwritten: dict[str, tuple[str, int, bool]] = {}
    reported: set[str] = set()
    out: list[UninitRead] = []

    def visit(body: list[Stmt], in_if: bool) -> None:
        for s in body:
            if isinstance(s, For | While):
                for it, init in zip(s.iter_args, s.init_values, strict=False):
                    if isinstance(init, Name) and init.id in unwritten:
                        c, ln, _first = unwritten[init.id]
                        unwritten[it.name] = (c, ln, True)
            if unwritten and not isinstance(s, For | While | If | Scope):  # reads matter once a tile is unwritten
                for sub in stmt_subexprs(s):
                    if isinstance(sub, OpCall):
                        for i, name, role in operand_roles(sub, types):
                            src = unwritten.get(name)
                            if src is None or role != "read" or not _is_read(sub, i) or src[0] in reported:
                                continue
                            if src[2] and in_if:
                                continue  # a branch may be the later iterations' (if k == 0: ... else: acc ...)
                            reported.add(src[0])
                            out.append(UninitRead(src[0], src[1], sub.span.line, sub.op, name, fn.name))
            if isinstance(s, Assign):
                v = s.value
                name = s.target.name
                if isinstance(v, OpCall) and v.op == "tile.create" and not _empty_valid(s.target.type or types.get(name)):
                    unwritten[name] = (name, s.span.line, False)
                elif isinstance(v, Name) and v.id in unwritten:
                    unwritten[name] = unwritten[v.id]
                else:
                    unwritten.pop(name, None)  # (pre-SSA) a name bound again holds a written value
            if isinstance(s, For | While):
                visit(s.body, in_if)
            elif isinstance(s, If):
                visit(s.then, True)
                visit(s.orelse, True)
            elif isinstance(s, Scope):
                visit(s.body, in_if)

    visit(fn.body, False)
    return out


def uninitialised_tiles(program: Program) -> list[UninitRead]:
    """Every tile.create read before a write, one per created tile, in function order."""
    out: list[UninitRead] = []
    for fn in program.functions:
        if not fn.abstract:
            out.extend(_function(fn))
    return out
