"""The cross-core transport ops (tpush/tpop, split markers) over :mod:`pypto_lsp.exec.crosscore`."""

from __future__ import annotations

from typing import Any

import torch

from .. import context, crosscore
from ..lane_tiles import fit_shape, split_code, split_tile
from .base import (
    ResultType,
    as_scalar,
    register,
    result_shape,
)

# ---------------------------------------------------------------------- cross-core


def _pid(id_: Any) -> int:
    return int(as_scalar(id_)) if id_ is not None else 0


@register("tile.tpush_to_aiv")
def tpush_to_aiv(tile: torch.Tensor, *_extra: Any, split: Any = 0, lane_stride: Any = 0, id: Any = 0, **_kw: Any) -> None:
    """AIC -> AIV transfer (split per reference §5.3; a clone is queued)."""
    crosscore.get_runtime().push_to_aiv(tile, split_code(split), int(as_scalar(lane_stride) or 0), _pid(id))


@register("tile.tpop_from_aic")
def tpop_from_aic(
    *_extra: Any, split: Any = 0, lane_stride: Any = 0, id: Any = 0, _rtype: ResultType | None = None, **_kw: Any
) -> torch.Tensor:
    """AIV receives this lane's part; brought to the declared per-lane tile shape."""
    t = crosscore.get_runtime().pop_from_aic(split_code(split), context.lane(), _pid(id))
    return fit_shape(t, result_shape(_rtype))


@register("tile.tpush_to_aic")
def tpush_to_aic(tile: torch.Tensor, *_extra: Any, split: Any = 0, id: Any = 0, **_kw: Any) -> None:
    """AIV -> AIC transfer of this lane's tile."""
    crosscore.get_runtime().push_to_aic(tile, split_code(split), context.lane(), _pid(id))


@register("tile.tpop_from_aiv")
def tpop_from_aiv(*_extra: Any, split: Any = 0, id: Any = 0, _rtype: ResultType | None = None, **_kw: Any) -> torch.Tensor:
    """AIC receives (the two lanes' parts merged when split)."""
    t = crosscore.get_runtime().pop_from_aiv(split_code(split), context.lane(), _pid(id))
    return fit_shape(t, result_shape(_rtype))


@register("aiv_shard")
def aiv_shard(t: Any, *_extra: Any, split: Any = None, lane_stride: Any = 0, _rtype: ResultType | None = None, **_kw: Any) -> torch.Tensor:
    """C->V split marker before ExpandMixedKernel: this lane's part of the cube tile.

    In a ``split_aiv`` function the lanes meet here: each takes its part of the tile lane 0
    made (lane 0 alone ran the cube work). With fewer than two lanes running (no
    group/region lanes) or split mode 0 (task-parallel region) the whole tile crosses
    unchanged. Missing in the reference.
    """
    code = split_code(split) if split is not None else context.split_mode()
    stride = int(as_scalar(lane_stride) or 0)
    rt = context.current_runtime()
    if rt is not None and rt.lanes_only:
        return fit_shape(rt.shard_exchange(t, code, context.lane(), stride), result_shape(_rtype))
    if context.lane_count() < 2 or code == 0:
        return t
    p0, p1 = split_tile(t, code, stride)
    return fit_shape(p0 if context.lane() == 0 else p1, result_shape(_rtype))


@register("aic_gather")
def aic_gather(t: torch.Tensor, *_extra: Any, split: Any = None, _rtype: ResultType | None = None, **_kw: Any) -> torch.Tensor:
    """V->C split marker before ExpandMixedKernel: the lanes' parts joined along the split axis.

    Identity without lanes or with split mode 0. Missing in the reference.
    """
    code = split_code(split) if split is not None else context.split_mode()
    if context.lane_count() < 2 or code == 0:
        return t
    rt = context.current_runtime()
    out = rt.gather_exchange(t, code, context.lane()) if rt is not None else t
    return fit_shape(out, result_shape(_rtype))
