"""Printing a call of a function: a Group, an SPMD launch, a plain call, each a runtime task through
the sanitizer when it is on; ``pl.submit``'s task id; a launch with ``predicate=`` (dispatched only
when the predicate holds, else retired inline: its results are the arguments it would have written
into) and the predicated ``with pl.spmd(...)`` scope's undispatched branch. What runs how is
:mod:`pypto_lsp.analysis.lowering`'s (``barrier``, ``skipped``); nothing here decides it."""

from __future__ import annotations

from typing import Any

from ..ir.model import Assign, Const, DictExpr, Expr, FuncCall, Scope, Unpack
from .codegen_ranks import launch_call, submit_call
from .codegen_text import literal


class TaskLowering:
    """Emits for one function's generator ``f`` (an ``exec.codegen._FunctionGen``: its names, lines
    and expressions)."""

    def __init__(self, f: Any) -> None:
        self.f = f

    def call(self, e: FuncCall) -> str:
        """A call of a function: a task through the sanitizer, else the call itself."""
        site = self.f.gen.task_sites.get(id(e)) if self.f.gen.sanitize else None
        if site is None or (e.submit is not None and self.f.gen.multi_rank):  # exec.ranks gates deferred ids
            return self.launch(e, [self.f.expr(a) for a in e.args])
        # one runtime task (exec.sanitizer): the sanitizer derives its dependencies, then calls it
        # with the arguments it was given (a call the runtime may run later keeps its arguments)
        args = [self.f.expr(a) for a in e.args]
        n = len(args)
        inner = self.launch(e, [f"_pl_a{i}" for i in range(n)], task_id=False)
        params = ", ".join(f"_pl_a{i}" for i in range(n))
        thunk = f"(lambda {params}: {inner})" if n else f"(lambda: {inner})"
        tuple_args = "(" + "".join(a + ", " for a in args) + ")"
        deps = e.kwargs.get("deps")
        dep_s = f", {self.f.expr(deps)}" if deps is not None else ""
        if e.submit is not None:
            return f"_pl_rt.submitted(*_pl_san.submit({site.index}, {tuple_args}, {thunk}{dep_s}))"
        return f"_pl_san.task({site.index}, {tuple_args}, {thunk}{dep_s})"

    def launch(self, e: FuncCall, args: list[str], task_id: bool = True) -> str:
        """The call with these argument expressions: on a rank (``device=``), a multi-rank
        ``pl.submit`` with deferred completion (``exec.codegen_ranks``), a Group, an SPMD launch or a
        plain call; with ``pl.submit``'s task id unless ``task_id`` is False."""
        if "device" in e.kwargs:  # a launch on one rank
            return launch_call(self.f, e, args)
        if task_id and e.submit is not None and self.f.gen.multi_rank:
            return submit_call(self.f, e, args)
        callee = self.f.gen.program.function(e.func)
        if callee is None:
            call = f"_pl_rt.missing_function({literal(e.func)})"
        else:
            pyname = self.f.gen.fn_names[e.func]
            attrs = e.kwargs.get("attrs")
            core_num: Expr | None = None
            if isinstance(attrs, DictExpr):
                for k, v in zip(attrs.keys, attrs.values, strict=False):
                    if isinstance(k, Const) and k.value == "core_num":
                        core_num = v
            if "core_num" in e.kwargs:
                core_num = e.kwargs["core_num"]
            meta = self.f.gen.group_meta.get(e.func)
            tuple_args = "(" + "".join(a + ", " for a in args) + ")"
            if meta is not None:
                aic, aiv, split, dual = meta
                group = f"{literal(e.func)}, {self.f.gen.fn_names[aic]}, {self.f.gen.fn_names[aiv]}"
                if core_num is not None:
                    launcher = f"_pl_rt.group_launcher({group}, {split}, {dual})"
                    met = {e.func, aic, aiv} & self.f.gen.lowering.barrier
                    barrier = ", barrier=True" if met else ""
                    call = f"_pl_rt.run_spmd({launcher}, {self.f.expr(core_num)}, {tuple_args}{barrier})"
                else:
                    call = f"_pl_rt.run_group({group}, {tuple_args}, split={split}, dual_aiv_dispatch={dual})"
            elif core_num is not None:
                barrier = ", barrier=True" if e.func in self.f.gen.lowering.barrier else ""
                call = f"_pl_rt.run_spmd({pyname}, {self.f.expr(core_num)}, {tuple_args}{barrier})"
            else:
                call = f"{pyname}({', '.join(args)})"
            predicate = e.kwargs.get("predicate")
            if predicate is not None:
                # dispatched only when the predicate holds at the dispatch point; else retired inline
                kept = self.f.gen.lowering.skipped.get(e.func, ())
                left = "(" + "".join(args[i] + ", " for i in kept if i < len(args)) + ")"
                call = f"_pl_rt.dispatch(lambda: {self.f.expr(predicate)}, lambda: {call}, {left})"
        if e.submit is not None and task_id:
            return f"_pl_rt.submitted({call}, _pl_rt.task_id())"
        return call

    def retired(self, s: Scope, ind: int) -> None:
        """A predicated ``with pl.spmd(...)`` left undispatched: each launch of its body binds its
        name to the arguments the launch would have written into, unchanged (``Lowering.skipped``)."""
        for b in s.body:
            if not isinstance(b, Assign | Unpack) or not isinstance(b.value, FuncCall):
                continue
            value = b.value
            targets = [b.target] if isinstance(b, Assign) else b.targets
            kept = self.f.gen.lowering.skipped.get(value.func, ())
            for t, i in zip(targets, kept, strict=False):
                if i < len(value.args):
                    self.f.emit(ind, f"{self.f.py(t.name)} = {self.f.expr(value.args[i])}", b.span)
        self.f.emit(ind, "pass", s.span)
