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
from ..ir.model import Assign, Const, DictExpr, FuncCall, Function, Name, OpCall, Program, Scope, Target, stmt_targets, walk_stmts
from ..ir.printer import expr_str
from ..ir.tasks import returned_params
from .codegen_text import literal

__all__ = ["is_host", "is_multi_rank", "host_wrapper", "launch_call", "submit_call", "named_operand", "task_scope"]


def is_host(fn: Function) -> bool:
    return (fn.level or "").upper() == "HOST"


def is_multi_rank(program: Program) -> bool:
    return any(is_host(f) for f in program.functions)


def host_wrapper(fg: Any, pyname: str, fn: Function) -> str:
    """Print ``def f(*args): return run_host(f_host, args, ranks)``; the body goes into ``f_host``.
    ``_pl_world_ranks`` is the case's rank count, set by the runner (``validate.engine.run``) after
    the module ran; None: the HOST entry's stacked inputs say."""
    fg.emit(0, "_pl_world_ranks = None", None)  # module-level glue: no IR line
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
    inner = fg.call_of(bare, params, task_id=False)
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
    inner = fg.call_of(e, params, task_id=False)
    thunk = f"(lambda {', '.join(params)}: {inner})" if n else f"(lambda: {inner})"
    return f"_pl_rt.submit_task({thunk}, ({''.join(a + ', ' for a in args)}), {dep_s}, {fallback})"


def named_operand(fg: Any, e: OpCall) -> list[str]:
    """Extra keywords of distributed ops: ``_name=`` the signal as printed (a deadlock names it), the
    ``name=`` pypto's parser gives a window buffer (its assigned name; findings name the window),
    ``_device=`` the rank a host builtin collective launches on (``attrs["device"]``)."""
    out = []
    if e.op in NAMES_FIRST_OPERAND and e.args:
        out.append(f"_name={literal(expr_str(e.args[0]))}")
    if e.op == "pld.tensor.alloc_window_buffer" and "name" not in e.kwargs:  # the IR name, for findings
        for st in fg.fn.statements():
            if isinstance(st, Assign) and st.value is e:
                out.append(f"name={literal(st.target.name)}")
    attrs = e.attrs
    if e.op.startswith("builtin.tensor.") and isinstance(attrs, DictExpr):
        for k, v in zip(attrs.keys, attrs.values, strict=False):
            if isinstance(k, Const) and k.value == "device":
                out.append(f"_device={fg.expr(v)}")
    return out


def _reads(node: Any, out: list[str]) -> None:
    """Every name an IR node reads (targets are bindings, not reads)."""
    if isinstance(node, Name):
        out.append(node.id)
    elif isinstance(node, Target):
        return
    elif isinstance(node, list | tuple):
        for x in node:
            _reads(x, out)
    elif isinstance(node, dict):
        for x in node.values():
            _reads(x, out)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            if f.name not in ("span", "name_span"):
                _reads(getattr(node, f.name), out)


def task_scope(fg: Any, s: Scope, ind: int) -> bool:
    """In a multi-rank program, an inline ``with pl.at(...) [as tid]`` task with a task id or
    ``deps=``: its body becomes a function of the values it reads (bound now, a deferred task runs
    after its loop moved on) run by ``_pl_rt.submit_scope``, which returns what the body bound
    (None when deferred: its outputs are written in place) and the task id. False: not such a scope."""
    if not fg.gen.multi_rank or s.kind != "at" or (s.as_name is None and "deps" not in s.kwargs):
        return False
    assigned: set[str] = set()
    params: list[str] = []
    for st in s.body:
        names: list[str] = []
        _reads(st, names)
        for n in names:
            if n in fg.defined and n not in assigned and n not in params:
                params.append(n)
        assigned |= {t.name for sub in walk_stmts([st]) for t in stmt_targets(sub)}
    fg.gen.sites += 1
    fn = f"_pl_at{fg.gen.sites}"
    fg.emit(ind, f"def {fn}({', '.join(f'{fg.py(n)}={fg.py(n)}' for n in params)}):", s.span)
    fg.block(s.body, ind + 1)
    bound = sorted(assigned)
    fg.emit(ind + 1, "return {" + ", ".join(f"{literal(n)}: {fg.py(n)}" for n in bound) + "}", s.span)
    deps = s.kwargs.get("deps")
    tid = fg.py(s.as_name.name) if s.as_name is not None else "_pl_unused"
    fg.emit(ind, f"_pl_vals, {tid} = _pl_rt.submit_scope({fn}, {fg.expr(deps) if deps is not None else 'None'})", s.span)
    if bound:
        fg.emit(ind, "if _pl_vals is not None:", s.span)
        for n in bound:
            fg.emit(ind + 1, f"{fg.py(n)} = _pl_vals[{literal(n)}]", s.span)
        written = _written_into(s.body, params)
        if written:  # deferred: a write into an operand names that operand (written in place later)
            fg.emit(ind, "else:", s.span)
            for n, dst in written.items():
                fg.emit(ind + 1, f"{fg.py(n)} = {fg.py(dst)}", s.span)
    return True


_DESTINATION = {"tile.store": 2, "tile.assemble": 0, "tensor.assemble": 0, "tensor.write": 0, "tile.write": 0}


def _written_into(body: list[Any], outer: list[str]) -> dict[str, str]:
    """Names a task body binds to a write into an operand from outside it (``out2 = store(t, o, out)``)."""
    out: dict[str, str] = {}
    for st in walk_stmts(body):
        if isinstance(st, Assign) and isinstance(st.value, OpCall) and st.value.op in _DESTINATION:
            i = _DESTINATION[st.value.op]
            dst = st.value.args[i] if i < len(st.value.args) else None
            if isinstance(dst, Name):
                out[st.target.name] = out.get(dst.id, dst.id) if dst.id not in outer else dst.id
    return {k: v for k, v in out.items() if v in outer}
