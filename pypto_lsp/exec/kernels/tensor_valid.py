"""Tensor-level ops given the valid region the tile op would have (wraps kernels registered before)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ...ir import catalogue
from ..values import get_valid, valid_box, with_valid
from .base import (
    KERNELS,
)

# ---------------------------------------------------------------------- tensor-level valid regions
#
# A tile's valid region comes with its annotated type (``pl.TileView(valid_shape=...)``), which
# the generated code attaches after every op. Tensor-level types carry it less often: PyPTO's
# tensor.matmul keeps no valid shape in its type, and a program whose slice has a
# ``valid_shape`` smaller than the window leaves results typed as wholly valid. The hardware
# runs those ops on tiles whose valid regions follow the same rules as the tile ops' (TSTORE
# then writes the valid extent only), so the tensor ops below give their result the region
# the tile op would have, from their operands', when the kernel attached none (an annotated
# region still wins: the generated code attaches it afterwards).


def _first_tensor_like(out: torch.Tensor, args: Sequence[Any]) -> tuple[int, ...] | None:
    """Element-wise: the valid box of the first operand of the result's shape (as tile ops: lhs)."""
    for a in args:
        if isinstance(a, torch.Tensor) and tuple(a.shape) == tuple(out.shape):
            v = get_valid(a)
            return None if v is None else valid_box(a)
    return None


def _matmul_valid(out: torch.Tensor, lhs: Any, rhs: Any, kw: dict[str, Any]) -> tuple[int, ...] | None:
    """[valid M of lhs, valid N of rhs] (after a_trans/b_trans), leading dims whole."""
    if not (isinstance(lhs, torch.Tensor) and isinstance(rhs, torch.Tensor)) or lhs.dim() < 2 or rhs.dim() < 2 or out.dim() < 2:
        return None
    if get_valid(lhs) is None and get_valid(rhs) is None:
        return None
    lv, rv = valid_box(lhs), valid_box(rhs)
    m = lv[-1] if kw.get("a_trans") else lv[-2]
    n = rv[-2] if kw.get("b_trans") else rv[-1]
    return (*tuple(out.shape[:-2]), min(m, out.shape[-2]), min(n, out.shape[-1]))


def _tensor_valid_elementwise(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def kernel(*args: Any, **kw: Any) -> Any:
        out = fn(*args, **kw)
        if isinstance(out, torch.Tensor) and get_valid(out) is None:
            v = _first_tensor_like(out, args)
            if v is not None:
                return with_valid(out, v)
        return out

    return kernel


def _tensor_valid_matmul(fn: Callable[..., Any], first: int) -> Callable[..., Any]:
    @functools.wraps(fn)
    def kernel(*args: Any, **kw: Any) -> Any:
        out = fn(*args, **kw)
        if isinstance(out, torch.Tensor) and get_valid(out) is None and len(args) >= first + 2:
            v = _matmul_valid(out, args[first], args[first + 1], kw)
            if v is not None:
                return with_valid(out, v)
        return out

    return kernel


def _tensor_valid_reduce(fn: Callable[..., Any], default_axis: int) -> Callable[..., Any]:
    @functools.wraps(fn)
    def kernel(*args: Any, **kw: Any) -> Any:
        out = fn(*args, **kw)
        x = args[0] if args else None
        if not isinstance(out, torch.Tensor) or not isinstance(x, torch.Tensor) or get_valid(x) is None or get_valid(out) is not None:
            return out
        axis = (default_axis if kw.get("axis") is None else int(kw["axis"])) % x.dim()
        v = list(valid_box(x))
        if out.dim() == x.dim():
            v[axis] = int(out.shape[axis])  # the reduced axis: every cell of it real data
        else:
            del v[axis]
        return with_valid(out, v) if len(v) == out.dim() else out

    return kernel


_ELEMENTWISE_SKIP = frozenset({"write", "fillpad", "set_validshape", "scatter_update", "scatter", "gather_row", "expands"})


def _register_tensor_valid() -> None:
    for name, spec in catalogue.OPS.items():
        ns, _, op = name.rpartition(".")
        if ns != "tensor" or name not in KERNELS:
            continue
        if (spec.result in ("same", "binary", "cast") and op not in _ELEMENTWISE_SKIP and not op.startswith("part_")) or op in (
            "row_expand",
            "col_expand",
        ):
            KERNELS[name] = _tensor_valid_elementwise(KERNELS[name])
        elif spec.result == "matmul":
            KERNELS[name] = _tensor_valid_matmul(KERNELS[name], 0)
        elif spec.result == "matmul_acc":
            KERNELS[name] = _tensor_valid_matmul(KERNELS[name], 1)
        elif op.startswith(("row_", "col_")) and op.split("_", 1)[1] in ("sum", "max", "min", "prod", "argmax", "argmin"):
            KERNELS[name] = _tensor_valid_reduce(KERNELS[name], -1 if op.startswith("row_") else -2)


_register_tensor_valid()
