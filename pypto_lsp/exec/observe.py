"""Observers of a run: the one interface every watcher of a dump's execution implements.

A dump runs one way (:func:`pypto_lsp.validate.engine.run`): its generated script is executed in
a fresh namespace and its entry called with the inputs. What watches the run is an
:class:`Observer`, the way torch.fx separates the graph from the ``Interpreter`` subclasses that
run it: the trace hooks (:class:`pypto_lsp.exec.trace_hooks.TraceObserver`, which hand every
assigned value to localisation's tracer or to the debugger), the error map's write recorder (every
store), the memory model (:class:`pypto_lsp.exec.memory.MemoryObserver`, every placed tile), the
sanitizer (every task and global access), the cross-rank hazards of multi-rank programs
(:mod:`pypto_lsp.exec.rank_hazards`) and call counting (:class:`CallCounter`). None of them needs
a change in the code generator: an observer

* puts what the script calls into its namespace (:meth:`Observer.namespace`: ``_pl_tr`` and the
  trace hooks, ``_pl_mem_session``, ``_pl_san``);
* may wrap any op's kernel (:meth:`Observer.kernel`: the script calls ops through module-level
  names, one per op, listed in ``GeneratedCode.op_symbols``);
* may wrap the call of the entry (:meth:`Observer.call`: the sanitizer makes itself the run's
  active sanitizer around it);
* hears how the run ended (:meth:`Observer.finished`), before anything else reads the outputs;
* is handed the run's other observers (:meth:`Observer.peers`: the debugger reads the memory
  model's and the sanitizer's findings as they come);
* hears of a deadlock of a cross-core group (:meth:`Observer.deadlock`) while its kernels still
  stand where they wait.

Every method has a default that does nothing, so an observer defines only what it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Observer", "RunInfo", "CallCounter"]


class RunInfo:
    """What an observer may know of the run: the generated code (its line map: ``gen.ir_span``)
    and, once started, the namespace and the outcome."""

    __slots__ = ("gen", "ns", "error", "value", "args", "tensors")

    def __init__(self, gen: Any, args: list[Any], tensors: dict[str, Any]) -> None:
        self.gen = gen
        self.args = args  # the entry's arguments, in order
        self.tensors = tensors  # the entry's tensors by input key (outputs are written into them)
        self.ns: dict[str, Any] = {}
        self.error: BaseException | None = None
        self.value: Any = None  # what the entry returned

    def ir_line(self, gen_line: int) -> int | None:
        sp = self.gen.ir_span(gen_line)
        return sp.line if sp is not None else None


class Observer:
    """Watches one run; every method is optional (see the module docstring)."""

    def namespace(self, ns: dict[str, Any], run: RunInfo) -> None:
        """Before the script's module code runs: put names the generated code calls."""

    def started(self, ns: dict[str, Any], run: RunInfo) -> None:
        """After the script's module code ran (its functions and kernels are bound), before the entry."""

    def kernel(self, op: str, fn: Callable[..., Any], run: RunInfo) -> Callable[..., Any] | None:
        """A replacement for the kernel of ``op`` (None: keep it)."""
        return None

    def call(self, invoke: Callable[[], Any], run: RunInfo) -> Any:
        """Call the entry (``invoke()``), possibly inside a context of the observer's."""
        return invoke()

    def finished(self, run: RunInfo) -> None:
        """The run ended (``run.error`` says how); outputs are settled."""

    def peers(self, others: Sequence[Observer]) -> None:
        """Before the run: the other observers watching it."""

    def deadlock(self, group: Any, slot: int, run: RunInfo) -> None:
        """No kernel of ``group`` (a :class:`~pypto_lsp.exec.crosscore.Runtime`) can make progress;
        ``slot`` is the first blocked one, which gets the deadlock error after this returns."""


class CallCounter(Observer):
    """How often the run called each IR function (the lens on each function)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def finished(self, run: RunInfo) -> None:
        self.counts = dict(run.ns.get("_pl_calls") or {})
