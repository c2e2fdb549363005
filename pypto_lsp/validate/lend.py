"""The golden inputs a run reads, lent instead of cloned.

Every run used to clone every input bundle tensor (at hidden 4096 the weights are 235 MB: ~0.2 s
a file). A tensor bound to an ``In`` parameter of the entry is now passed as it is: a dump does
not write its inputs, and when one does anyway (a store into an input, a bug the run should
still report as the dump computes it), torch's version counter, which every in-place write
into a tensor or a view of it bumps, tells afterwards; the tensor is then restored (the run's own result keeps what the dump wrote). A tensor read from
a bundle file is restored from that file's bytes, which :func:`pypto_lsp.validate.golden.load_bundle`
keeps with it (no copy: a copy of the hidden-4096 weights was 50 ms of the first run in a process);
any other is restored from a copy made once per process. Output parameters and
anything not bound to an ``In`` parameter are cloned as before, and so is everything while a
timed-out run may still be writing (:func:`pypto_lsp.validate.engine.abandoned_runs`).
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import torch

from ..exec.values import register_input
from ..ir.model import Program

__all__ = ["Loan", "keep_source", "lend", "uint32_as_held", "uint32_golden", "uint32_keys"]

_SSA_SUFFIX = re.compile(r"__ssa_v\d+$")

# id(tensor) -> (the tensor, weakly; its version when copied; the copy)
_PRISTINE: dict[int, tuple[weakref.ref[torch.Tensor], int, torch.Tensor]] = {}


# id(a bundle tensor) -> (the tensor, weakly; its version when loaded; how to make it again: its
# file's bytes decoded anew). The entry goes with the tensor.
_SOURCES: dict[int, tuple[weakref.ref[torch.Tensor], int, Callable[[], torch.Tensor]]] = {}


def keep_source(t: torch.Tensor, remake: Callable[[], torch.Tensor]) -> None:
    """``remake()`` gives ``t``'s values as loaded: a written ``t`` is restored from it, no copy is made."""
    key = id(t)

    def gone(_ref: weakref.ref[torch.Tensor]) -> None:
        _SOURCES.pop(key, None)

    _SOURCES[key] = (weakref.ref(t, gone), t._version, remake)


def _candidates(name: str) -> list[str]:
    """The bundle keys a parameter binds, in the order engine.resolve_args tries them."""
    return [name, _SSA_SUFFIX.sub("", name), name.split("__")[0] if "__" in name.strip("_") else name]


def _bound_key(name: str, tensors: Mapping[str, Any]) -> str | None:
    for c in _candidates(name):
        if c in tensors:
            return c
    return None


def _restorer(t: torch.Tensor) -> Callable[[], torch.Tensor]:
    """How to get ``t``'s values as they are now back: its bundle's bytes while it is unchanged
    since loaded, else a copy."""
    source = _SOURCES.get(id(t))
    if source is not None and source[0]() is t and source[1] == t._version:
        return source[2]
    copy = _pristine(t)
    return lambda: copy


def _pristine(t: torch.Tensor) -> torch.Tensor:
    """A copy of ``t`` as it is now (made again when its owner changed it since)."""
    hit = _PRISTINE.get(id(t))
    if hit is not None and hit[0]() is t and hit[1] == t._version:
        return hit[2]
    if len(_PRISTINE) > 64:
        _PRISTINE.clear()
    copy = t.clone()
    _PRISTINE[id(t)] = (weakref.ref(t), t._version, copy)
    return copy


# id(an input lent to a run still going) -> (the tensor, weakly; that run's loan; its values as lent).
# Runs in several threads of one process (a Dask worker with more than one thread, the debugger's
# run of the previous pass) must not lend one tensor twice: the first may write it (a dump that
# writes its input), and the second would read the write, take it for the values as lent and
# "restore" it for good. The second gets its own copy of the values as lent instead.
_ACTIVE: dict[int, tuple[weakref.ref[torch.Tensor], Loan, Callable[[], torch.Tensor]]] = {}
_ACTIVE_LOCK = threading.Lock()


class Loan:
    """The tensors lent to one run and their versions when lent."""

    def __init__(self) -> None:
        # (key, the tensor, its version when lent, how to get its values back: a copy held here,
        # the process-wide table may drop it while the run goes on, or its bundle's bytes)
        self.lent: list[tuple[str, torch.Tensor, int, Callable[[], torch.Tensor]]] = []
        self.held: list[int] = []  # ids in _ACTIVE this loan holds

    def release(self) -> None:
        """The tensors this loan holds may be lent to other runs again (idempotent)."""
        with _ACTIVE_LOCK:
            for i in self.held:
                entry = _ACTIVE.get(i)
                if entry is not None and entry[1] is self:
                    del _ACTIVE[i]
        self.held = []

    def settle(self, run_tensors: dict[str, torch.Tensor]) -> list[str]:
        """After the run: an input the dump wrote keeps its written state in ``run_tensors`` (a
        copy) and is restored for the next run. The keys restored."""
        restored = []
        for key, t, version, restore in self.lent:
            if t._version != version:
                run_tensors[key] = t.clone()
                copy = restore()
                with torch.no_grad():
                    t.copy_(copy)
                _PRISTINE[id(t)] = (weakref.ref(t), t._version, copy)
                restored.append(key)
        self.lent = []
        self.release()
        return restored


def lend(
    program: Program, entry: str, inputs: Mapping[str, torch.Tensor], *, clone_all: bool = False
) -> tuple[dict[str, torch.Tensor], Loan]:
    """The tensors of one run: inputs bound only to ``In`` parameters as they are, the rest cloned."""
    loan = Loan()
    fn = program.function(entry)
    read_only: set[str] = set()
    written: set[str] = set()
    if fn is not None and not clone_all:
        for p in fn.params:
            key = _bound_key(p.name, inputs)
            if key is not None:
                (read_only if p.direction == "in" else written).add(key)
    out: dict[str, torch.Tensor] = {}
    unsigned = _uint32_keys(program, entry, inputs)
    for k, v in inputs.items():
        if k in unsigned:
            out[k] = uint32_as_held(v)  # a copy in the dtype the run holds UINT32 in
        elif k in read_only and k not in written and isinstance(v, torch.Tensor) and not v.requires_grad and not v.is_inference():
            # (a tensor an earlier run made keeps no version counter: a write could not be seen, so it is cloned)
            with _ACTIVE_LOCK:
                busy = _ACTIVE.get(id(v))
                if busy is not None and busy[0]() is v:
                    as_lent = busy[2]  # lent to a run still going in another thread
                else:
                    as_lent = None
                    restore = _restorer(v)  # what a write is undone from
                    _ACTIVE[id(v)] = (weakref.ref(v), loan, restore)
                    loan.held.append(id(v))
            if as_lent is not None:
                out[k] = as_lent().clone()  # this run's own copy of the values as lent
                continue
            register_input(v)  # its FP32 conversion may be kept for the next run
            out[k] = v
            loan.lent.append((k, v, v._version, restore))
        else:
            out[k] = v.clone()
    return out, loan


# UINT32 as bundles hold it: PyPTO's harness maps DataType.UINT32 to torch.int32 (the same bits), and
# torch has a torch.uint32 too; a run holds UINT32 widened to int64 (exec.values.DTYPES)
_UINT32_BUNDLE_DTYPES = (torch.int32, torch.uint32)


def uint32_keys(program: Program, entry: str, tensors: Mapping[str, Any]) -> set[str]:
    """The keys of ``tensors`` bound to a UINT32 tensor parameter of the entry."""
    fn = program.function(entry)
    keys: set[str] = set()
    for p in fn.params if fn is not None else ():
        key = _bound_key(p.name, tensors)
        if key is not None and getattr(p.type, "dtype", None) == "UINT32" and getattr(p.type, "shape", None) is not None:
            keys.add(key)
    return keys


def _uint32_keys(program: Program, entry: str, inputs: Mapping[str, Any]) -> set[str]:
    """Those of them holding int32 bit patterns or torch.uint32 (converted for the run)."""
    return {
        k for k in uint32_keys(program, entry, inputs) if isinstance(inputs[k], torch.Tensor) and inputs[k].dtype in _UINT32_BUNDLE_DTYPES
    }


def uint32_golden(held: torch.Tensor, golden: torch.Tensor) -> bool:
    """A UINT32 output as a run holds it (int64) against a bundle's (int32 bits or torch.uint32)."""
    return held.dtype == torch.int64 and golden.dtype in _UINT32_BUNDLE_DTYPES


def uint32_as_held(t: torch.Tensor) -> torch.Tensor:
    """A UINT32 bundle tensor (int32 bit patterns or torch.uint32) as the int64 a run holds: values 0..2**32-1."""
    return t.to(torch.int64) & 0xFFFFFFFF
