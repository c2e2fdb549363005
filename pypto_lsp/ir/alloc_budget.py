"""The allocation budget: the number, and the guard generated code calls.

The budget is per allocation: the bytes one op may ask for, its result plus the temporaries
its kernel makes on the way (the catalogue's ``temp_bytes`` per result element,
:mod:`pypto_lsp.ir.catalogue`). By default a quarter of the machine's memory (the smaller of
physical memory and a cgroup limit); ``PYPTO_LSP_MAX_ALLOC`` (bytes, or ``512M``, ``4G`` ...)
or a run's ``max_alloc`` (the CLI's ``--max-alloc``, a case's ``max_alloc``, the editor's
``maxAlloc`` through the worker, all in ``validate.config.RunSettings``) change it: no process global.

Shapes known before the run are checked statically (:mod:`pypto_lsp.ir.alloc_static`). A shape
that depends on a runtime value (a dim bound from an input tensor, a scalar parameter) is checked
by ``_pl_ab.check``, which :mod:`pypto_lsp.exec.codegen` emits right before each such allocating statement only
(the runner hands in a :class:`Guard` of the run's budget as ``_pl_ab``; the standalone script imports
this module, whose :func:`check` uses the default):
statically sized sites cost nothing, a dynamic one a few integer multiplications.

Pure Python, so it lives on the lowest floor: the executor's generated code, the static check
(:mod:`pypto_lsp.ir.alloc_static`) and the language server's settings (``maxAlloc``) all read it.
"""

from __future__ import annotations

import os
import re
from fractions import Fraction
from typing import Any

ENV = "PYPTO_LSP_MAX_ALLOC"
KIND = "alloc-budget"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MAX_SIZE = 1 << 60  # 1 EiB: more than any machine; a larger size is a typo (or an attack)

# bytes per element of each IR dtype as the executor stores it (see exec/values.DTYPES: widened
# unsigned types, float32 for the types torch lacks)
ITEMSIZE = {
    "BOOL": 1,
    "INT8": 1,
    "UINT8": 1,
    "INT16": 2,
    "FP16": 2,
    "BF16": 2,
    "INT32": 4,
    "UINT16": 4,
    "FP32": 4,
    "INT64": 8,
    "UINT32": 8,
    "UINT64": 8,
    "INDEX": 8,
}
DEFAULT_ITEMSIZE = 4  # float32: the fallback of the dtypes torch has no equivalent of

_machine: list[int | None] = []  # machine_memory(), read once
_env_cache: tuple[str, int | None] = ("", None)


def itemsize(dtype: str) -> int:
    return ITEMSIZE.get(dtype.rsplit(".", 1)[-1].upper(), DEFAULT_ITEMSIZE)


def parse_size(text: str | int) -> int:
    """``"4G"`` -> 4294967296; plain digits (or an int) are bytes. ValueError for anything else."""
    if isinstance(text, bool) or not isinstance(text, int | str):
        raise ValueError(f"not a size: {text!r} (bytes, or a number with K, M, G or T)")
    m = _SIZE.match(str(text)) if isinstance(text, str) else None
    if isinstance(text, int):
        n = text
    elif not m:
        raise ValueError(f"not a size: {_short(text)} (bytes, or a number with K, M, G or T)")
    elif len(m.group(1)) > 40:  # never a float of 400 digits (OverflowError)
        n = MAX_SIZE + 1
    else:
        n = int(Fraction(m.group(1)) * _UNITS[m.group(2).lower()])  # exact: "1.5K" is 1536
    if n <= 0:
        raise ValueError(f"a size must be > 0, got {_short(text)}")
    if n > MAX_SIZE:
        raise ValueError(f"a size must be at most 2**60 bytes (1 EiB), got {_short(text)}")
    return n


def _short(text: object) -> str:
    """``text`` for a message: a 400-digit number shortened (and never an int->str error)."""
    r = repr(text) if not isinstance(text, int) else (str(text) if text.bit_length() < 200 else f"a {text.bit_length()}-bit number")
    return r if len(r) <= 60 else r[:40] + f"... ({len(r)} characters)"


def env_problem() -> str | None:
    """What is wrong with ``PYPTO_LSP_MAX_ALLOC`` (a garbage or negative size), or None: a bad
    value is an error where it is read (the CLI exits 2, the pytest plugin stops, the editor
    says so), never silently the default."""
    env = os.environ.get(ENV)
    if env is None or env == "":
        return None
    try:
        parse_size(env)
    except ValueError as exc:
        return f"{ENV}: {exc}"
    return None


def machine_memory() -> int | None:
    """Physical memory, or the cgroup's limit when that is smaller (containers); read once."""
    if _machine:
        return _machine[0]
    sizes = []
    try:
        sizes.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as fh:
                v = fh.read().strip()
        except OSError:
            continue
        if v.isdigit() and 0 < int(v) < 1 << 60:
            sizes.append(int(v))
    _machine.append(min(sizes) if sizes else None)
    return _machine[0]


def budget(n: int | None = None) -> int:
    """Bytes allowed per allocation: ``n`` (a run's ``max_alloc``: the CLI's ``--max-alloc``, a
    case's ``max_alloc``, the editor's ``maxAlloc``, carried by ``validate.config.RunSettings``),
    else ``PYPTO_LSP_MAX_ALLOC``, else a quarter of the machine's memory (4 GiB when that is unknown)."""
    global _env_cache
    if n is not None:
        return n
    env = os.environ.get(ENV)
    if env:
        if env != _env_cache[0]:
            try:
                _env_cache = (env, parse_size(env))
            except ValueError:
                _env_cache = (env, None)
        if _env_cache[1] is not None:
            return _env_cache[1]
    mem = machine_memory()
    return mem // 4 if mem else 4 << 30


def fmt_bytes(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def message(nbytes: int, what: str, shape: list[int], dtype: str, temp_bytes: int, limit: int) -> str:
    """The one wording of an over-budget allocation (static check and runtime guard)."""
    temps = f" with {temp_bytes} B/element of kernel temporaries" if temp_bytes else ""
    return (
        f"allocation of {fmt_bytes(nbytes)} ({what} {shape} {dtype}{temps}) exceeds the allocation budget of "
        f"{fmt_bytes(limit)}; not run (raise it with --max-alloc, max_alloc in pypto-lsp.toml, or {ENV})"
    )


class AllocBudgetError(RuntimeError):
    """An allocation whose size, known only at run time, is over the budget (raised before it is made)."""

    kind = KIND

    def __init__(self, msg: str, nbytes: int, limit: int) -> None:
        super().__init__(msg)
        self.bytes = nbytes
        self.budget = limit


class Guard:
    """The runtime check of one run, with its budget resolved once (per guard call it would cost
    microseconds): the ``_pl_ab`` the runner hands the script."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def check(self, shape: tuple[Any, ...], site: tuple[int, str, str, int]) -> None:
        """Before an allocation of ``shape`` (runtime values); ``site`` = (bytes per element with the
        kernel's temporaries, what, dtype, temporaries per element), a constant of the script."""
        limit = self.limit
        n = site[0]
        try:
            for d in shape:
                n *= d
            if not n > limit:
                return
            dims = [int(d) for d in shape]
        except (TypeError, ValueError, OverflowError, RuntimeError):
            return  # not integers: the op itself reports it
        if min(dims) < 0:
            return  # a negative dim: the op reports it
        n = site[0]
        for d in dims:
            n *= d
        raise AllocBudgetError(message(n, site[1], dims, site[2], site[3], limit), n, limit)


def check(shape: tuple[Any, ...], site: tuple[int, str, str, int]) -> None:
    """The standalone script's guard: the default budget (:func:`budget`)."""
    Guard(budget()).check(shape, site)
