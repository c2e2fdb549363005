"""The hooks traced generated code calls besides ``_pl_tr`` (see :mod:`pypto_lsp.validate.localize`).

Code generated with ``trace=True`` calls

* ``_pl_tr(value, name, line, operands)`` for every assigned value and every value a
  ``pl.yield_`` hands out of an if or a loop (operands: the IR names the expression read);
  A function call's operands end with :data:`CALL`: its value is made by the callee's
  statements, traced themselves;
* ``_pl_ty(value, name, line, operands)`` for a value a ``pl.yield_`` hands to the next
  iteration of its loop (a pass that unrolls or pipelines the loop changes how many
  there are, not what the loop hands out);
* ``_pl_tw(value, names, line, operands)`` where a name is bound but its value is not worth
  comparing (a tensor after a write into part of it, an unpacked call result): only
  what it depends on;
* ``counter = _pl_loop(key, line, operands, iter_args, results)``, ``for v in
  counter(iterable)``, then ``counter.done()`` after the loop: how often a loop ran;
* ``_pl_br(key, line, taken, operands)`` at the start of each branch of an ``if``;
* ``_pl_at(line)`` after a statement that binds nothing (a push, a pipe set-up, a call made
  for its effect) and before a ``return``: the line was reached (the debugger stops there).

A trace object provides ``carry``, ``write``, ``loop``, ``branch`` and ``at`` methods for the last five;
:func:`hooks` falls back to doing nothing for those it lacks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .observe import Observer, RunInfo

__all__ = ["CALL", "LoopCounter", "hooks", "TraceObserver"]

CALL = "<call>"  # not an IR name


class LoopCounter:
    """Counts a loop's iterations; ``done()`` hands the counter to ``report``."""

    __slots__ = ("report", "key", "line", "operands", "carried", "results", "n")

    def __init__(
        self,
        report: Callable[[LoopCounter], None] | None,
        key: str,
        line: int,
        operands: tuple[str, ...],
        carried: tuple[str, ...] = (),
        results: tuple[str, ...] = (),
    ) -> None:
        self.report = report
        self.key = key
        self.line = line
        self.operands = operands
        self.carried = carried  # the loop's iter_args
        self.results = results  # what it hands out
        self.n = 0

    def __call__(self, iterable: Iterable[Any]) -> Iterator[Any]:
        for x in iterable:
            self.n += 1
            yield x

    def done(self) -> None:
        if self.report is not None:
            self.report(self)


def _write(value: Any, _names: tuple[str, ...], _line: int, _operands: tuple[str, ...]) -> Any:
    return value


def _loop(key: str, line: int, operands: tuple[str, ...], carried: tuple[str, ...] = (), results: tuple[str, ...] = ()) -> LoopCounter:
    return LoopCounter(None, key, line, operands, carried, results)


def _branch(_key: str, _line: int, _taken: bool, _operands: tuple[str, ...]) -> None:
    return None


def _at(_line: int) -> None:
    return None


def hooks(trace: Any) -> dict[str, Any]:
    """The generated code's ``_pl_ty``, ``_pl_tw``, ``_pl_loop``, ``_pl_br`` and ``_pl_at`` for ``trace``."""
    return {
        "_pl_ty": getattr(trace, "carry", trace),
        "_pl_tw": getattr(trace, "write", _write),
        "_pl_loop": getattr(trace, "loop", _loop),
        "_pl_br": getattr(trace, "branch", _branch),
        "_pl_at": getattr(trace, "at", _at),
    }


class TraceObserver(Observer):
    """Puts ``trace`` and its hooks in the namespace of a run of code generated with ``trace=True``."""

    def __init__(self, trace: Any) -> None:
        self.trace = trace

    def namespace(self, ns: dict[str, Any], run: RunInfo) -> None:
        ns["_pl_tr"] = self.trace
        ns.update(hooks(self.trace))
