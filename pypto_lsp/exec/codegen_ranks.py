"""What the generator prints for multi-rank programs (:mod:`pypto_lsp.exec.ranks` runs it).

A HOST function (``@pl.function(level=pl.Level.HOST)``, ``@pl.jit.host``) is entered through
``_pl_rt.run_host``, which makes the run's :class:`~pypto_lsp.exec.ranks.World` and joins every
rank at the end; a call with ``device=r`` becomes ``_pl_rt.launch_on_rank``; in a program with a
HOST function a task submitted with ``pl.submit`` yields a task id that carries its
``defer_wait`` conditions (``_pl_rt.submit_task``). Programs without a HOST function print
exactly as before.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir.dist_ops import NAMES_FIRST_OPERAND
from ..ir.model import Const, DictExpr, FuncCall, Function, OpCall, Program
from ..ir.printer import expr_str
from ..ir.tasks import returned_params
from .codegen_text import literal

__all__ = ["is_host", "is_multi_rank", "host_wrapper", "launch_call", "submit_call", "named_operand"]


def is_host(fn: Function) -> bool:
    return (fn.level or "").upper() == "HOST"


def is_multi_rank(program: Program) -> bool:
    return any(is_host(f) for f in program.functions)


def host_wrapper(fg: Any, pyname: str, fn: Function) -> str:
    """Print ``def f(*args): return run_host(f_host, args, ranks)``; the body goes into ``f_host``.
    ``_pl_world_ranks`` is the case's rank count, set by the runner (``validate.engine.run``) after
    the module ran; None: the HOST entry's stacked inputs say."""
    fg.emit(0, "_pl_world_ranks = None", fn.name_span)
    fg.emit(0, f"def {pyname}(*_pl_args):", fn.name_span)
    fg.emit(1, f"return _pl_rt.run_host({pyname}_host, _pl_args, _pl_world_ranks)", fn.name_span)
    fg.emit(0, "", None)
    return pyname + "_host"


def launch_call(fg: Any, e: FuncCall, args: list[str]) -> str:
    """``self.chip(args, device=r)``: the call as a function of its arguments, run as rank ``r``."""
    device = fg.expr(e.kwargs["device"])
    bare = dataclasses.replace(e, kwargs={k: v for k, v in e.kwargs.items() if k != "device"})
    n = len(args)
    params = [f"_pl_a{i}" for i in range(n)]
    inner = fg.call_of(bare, params)
    thunk = f"(lambda {', '.join(params)}: {inner})" if n else f"(lambda: {inner})"
    return f"_pl_rt.launch_on_rank({device}, {thunk}, ({''.join(a + ', ' for a in args)}), {literal(e.func)})"


def submit_call(fg: Any, e: FuncCall, args: list[str]) -> str:
    """A ``pl.submit`` in a multi-rank program: ``(result, task id)`` with deferred completion
    (the arguments are bound now: a deferred task runs after its loop has moved on)."""
    deps = e.kwargs.get("deps")
    dep_s = fg.expr(deps) if deps is not None else "None"
    callee = fg.gen.program.function(e.func)
    ret = returned_params(callee) if callee is not None else None
    fallback = ret[0] if ret and ret[0] < len(args) else -1
    n = len(args)
    params = [f"_pl_a{i}" for i in range(n)]
    inner = fg.call_of(e, params)
    thunk = f"(lambda {', '.join(params)}: {inner})" if n else f"(lambda: {inner})"
    return f"_pl_rt.submit_task({thunk}, ({''.join(a + ', ' for a in args)}), {dep_s}, {fallback})"


def named_operand(fg: Any, e: OpCall) -> list[str]:
    """Extra keywords of distributed ops: ``_name=`` the signal as printed (a deadlock names it),
    ``_device=`` the rank a host builtin collective launches on (``attrs["device"]``)."""
    out = []
    if e.op in NAMES_FIRST_OPERAND and e.args:
        out.append(f"_name={literal(expr_str(e.args[0]))}")
    attrs = e.attrs
    if e.op.startswith("builtin.tensor.") and isinstance(attrs, DictExpr):
        for k, v in zip(attrs.keys, attrs.values, strict=False):
            if isinstance(k, Const) and k.value == "device":
                out.append(f"_device={fg.expr(v)}")
    return out
