"""Pipe protocol, from the IR alone (no torch): a cross-core ring the NPU cannot set up.

``system.a{i,v}c_initialize_pipe(..., slot_size=S, slot_num=N)`` sets up a ring of ``N`` slots of
``S`` bytes in the consumer's buffer (``system.reserve_buffer(name=..., size=B)``, reached on the
other core through ``system.import_peer_buffer``). A ring needs at least one slot of at least one
byte, and its ``N * S`` bytes must fit in the reserved buffer; otherwise the first push or pop of
the pipe waits forever or writes past the buffer. Each such ``initialize_pipe`` is an error on its
line (code ``pipe-protocol``). So is a reserved buffer (or a ring) larger than the memory it lives
in on its core: the consumer's Vec (UB) on an AIV core, its Mat (L1) on the AIC, capacities from
PyPTO's backend descriptions (:data:`pypto_lsp.ir.memory.CAPACITIES`; the largest over the backends,
as ``check`` knows no backend). A push into a ring whose slots are all taken while nobody will pop
it is found while the dump runs (:meth:`pypto_lsp.exec.crosscore.Runtime.set_ring`).
"""

from __future__ import annotations

from . import diagnostics as D
from .model import Assign, Const, Name, OpCall, Program, int_literal, stmt_subexprs

__all__ = ["check_pipes"]

_INIT = ("system.aic_initialize_pipe", "system.aiv_initialize_pipe")
_INT32_MAX = 2**31 - 1


def _reserves(program: Program) -> dict[tuple[str, str], int]:
    """(function, buffer name) -> reserved bytes of every ``system.reserve_buffer(name=..., size=...)``."""
    out: dict[tuple[str, str], int] = {}
    for fn in program.functions:
        for s in fn.statements():
            if isinstance(s, Assign) and isinstance(s.value, OpCall) and s.value.op == "system.reserve_buffer":
                name = s.value.kwargs.get("name")
                size = int_literal(s.value.kwargs.get("size"))
                if isinstance(name, Const) and isinstance(name.value, str) and size is not None:
                    out[(fn.name, name.value)] = size
    return out


def _core_space(kind: str) -> tuple[str, int]:
    """The on-chip memory a ring buffer of a function of ``kind`` lives in, and its capacity."""
    from .memory import capacities

    caps = capacities()
    if kind == "AIC":
        return "Mat", caps["Mat"]
    if kind == "AIV":
        return "Vec", caps["Vec"]
    space = max(("Mat", "Vec"), key=lambda k: caps[k])
    return space, caps[space]


def check_pipes(program: Program) -> list[D.Diagnostic]:
    out: list[D.Diagnostic] = []
    reserves = _reserves(program)
    for fn in program.functions:
        space, cap = _core_space(fn.kind)
        for s in fn.statements():
            if isinstance(s, Assign) and isinstance(s.value, OpCall) and s.value.op == "system.reserve_buffer":
                size_e = s.value.kwargs.get("size")
                size = int_literal(size_e)
                if size is not None and size > cap:
                    out.append(
                        D.error(
                            (size_e or s.value).span,
                            "pipe-protocol",
                            f"reserve_buffer: size={size} bytes cannot exist on the core: its {space} holds {cap} bytes",
                            "a ring buffer lives in the consumer core's on-chip memory (Vec on an AIV core, Mat on the AIC)",
                        )
                    )
        buffers: dict[str, int] = {}  # local name -> reserved bytes
        for s in fn.statements():
            if isinstance(s, Assign) and isinstance(s.value, OpCall):
                v = s.value
                name = v.kwargs.get("name")
                key = name.value if isinstance(name, Const) and isinstance(name.value, str) else None
                if v.op == "system.reserve_buffer" and key is not None and (fn.name, key) in reserves:
                    buffers[s.target.name] = reserves[(fn.name, key)]
                elif v.op == "system.import_peer_buffer" and key is not None:
                    peer = v.kwargs.get("peer_func")
                    if isinstance(peer, Const) and isinstance(peer.value, str) and (peer.value, key) in reserves:
                        buffers[s.target.name] = reserves[(peer.value, key)]
            for e in stmt_subexprs(s):
                if isinstance(e, OpCall) and e.op in _INIT:
                    out.extend(_check_init(e, buffers, space, cap))
    return out


def _check_init(e: OpCall, buffers: dict[str, int], space: str, cap: int) -> list[D.Diagnostic]:
    out: list[D.Diagnostic] = []
    num_e, size_e = e.kwargs.get("slot_num"), e.kwargs.get("slot_size")
    num, size = int_literal(num_e), int_literal(size_e)
    where = e.op.split(".")[-1]
    if num is not None and num < 1:
        out.append(D.error((num_e or e).span, "pipe-protocol", f"{where}: slot_num={num}: a ring needs at least one slot"))
    elif num is not None and num > _INT32_MAX:
        out.append(D.error((num_e or e).span, "pipe-protocol", f"{where}: slot_num={num} is beyond any ring (at most {_INT32_MAX})"))
    if size is not None and size < 1:
        out.append(D.error((size_e or e).span, "pipe-protocol", f"{where}: slot_size={size}: a slot needs at least one byte"))
    if out or num is None or size is None:
        return out
    if not any(isinstance(a, Name) and a.id in buffers for a in e.args[:2]):
        space, cap = _core_space("")  # the ring may live on the peer core: the larger of its memories
    if num * size > cap and not any(isinstance(a, Name) and a.id in buffers for a in e.args[:2]):
        out.append(
            D.error(
                e.span,
                "pipe-protocol",
                f"{where}: {num} slots of {size} bytes ({num * size} bytes) cannot exist on the core: its {space} holds {cap} bytes",
            )
        )
        return out
    for a in e.args[:2]:
        if isinstance(a, Name) and a.id in buffers and num * size > buffers[a.id]:
            out.append(
                D.error(
                    e.span,
                    "pipe-protocol",
                    f"{where}: {num} slots of {size} bytes ({num * size} bytes) do not fit in the reserved buffer '{a.id}' "
                    f"({buffers[a.id]} bytes)",
                    "slot_num * slot_size must fit in the system.reserve_buffer size",
                )
            )
    return out
