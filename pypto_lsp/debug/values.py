"""How the debugger shows a value: a tile as ``[32, 64] FP32`` with its valid region and
statistics, a scalar as itself; a tile's children are its rows, then a row's elements."""

from __future__ import annotations

import math
from typing import Any

import torch

from ..exec.values import DTYPES, valid_box

__all__ = ["dtype_name", "describe", "is_tile", "numeric", "stats", "element"]

_NAMES = {d: n for n, d in reversed(list(DTYPES.items()))}


def dtype_name(dt: torch.dtype) -> str:
    """``torch.float32`` by its IR name (``FP32``)."""
    return _NAMES.get(dt, str(dt).removeprefix("torch."))


def is_tile(v: Any) -> bool:
    return isinstance(v, torch.Tensor)


def numeric(v: Any) -> Any:
    """The valid region of a tensor, a Python number as it is, else None."""
    if isinstance(v, torch.Tensor):
        box = valid_box(v)
        return v[tuple(slice(0, e) for e in box)] if box != tuple(v.shape) else v
    if isinstance(v, bool | int | float):
        return v
    return None


def stats(t: torch.Tensor) -> dict[str, Any]:
    """min / max / mean over the finite values of the valid region, NaN and Inf counts."""
    v = numeric(t)
    assert isinstance(v, torch.Tensor)
    out: dict[str, Any] = {"numel": int(v.numel()), "nan": 0, "inf": 0, "min": None, "max": None, "mean": None}
    if v.numel() == 0:
        return out
    if v.dtype == torch.bool:
        v = v.to(torch.int64)
    f = v.detach().to(torch.float64)
    nan = torch.isnan(f)
    inf = torch.isinf(f)
    out["nan"] = int(nan.sum())
    out["inf"] = int(inf.sum())
    fin = f[~(nan | inf)]
    if fin.numel():
        out["min"] = float(fin.min())
        out["max"] = float(fin.max())
        out["mean"] = float(fin.mean())
    return out


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    if math.isfinite(x) and x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.6g}"


def element(x: Any) -> str:
    """One element (a 0-d tensor or a Python number) as text."""
    if isinstance(x, torch.Tensor):
        x = x.item()
    if isinstance(x, float):
        return f"{x:.6g}"
    return repr(x)


def describe(v: Any, delta: float | None = None) -> tuple[str, str]:
    """(value text, type text) of a value as the Variables view shows it."""
    if isinstance(v, torch.Tensor):
        shape = list(v.shape)
        box = list(valid_box(v))
        dt = dtype_name(v.dtype)
        head = f"{shape} {dt}"
        if box != shape:
            head += f" valid {box}"
        s = stats(v)
        text = f"{head}  min {_num(s['min'])} max {_num(s['max'])} mean {_num(s['mean'])}"
        if s["nan"]:
            text += f"  NaN {s['nan']}"
        if s["inf"]:
            text += f"  Inf {s['inf']}"
        if delta is not None:
            text += f"  |Δ| {_num(delta)}"
        return text, f"Tile {head}"
    if isinstance(v, bool):
        return repr(v), "bool"
    if isinstance(v, int):
        return repr(v), "int"
    if isinstance(v, float):
        return f"{v:.9g}", "float"
    if v is None:
        return "None", "None"
    text = repr(v)
    return (text if len(text) <= 200 else text[:197] + "..."), type(v).__name__


def max_abs_delta(cur: Any, prev: Any) -> float | None:
    """max |cur - prev| over the valid regions, or None when they cannot be compared."""
    a, b = numeric(cur), numeric(prev)
    if a is None or b is None:
        return None
    if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
        return None
    if isinstance(a, torch.Tensor):
        if tuple(a.shape) != tuple(b.shape):
            return None
        if a.numel() == 0:
            return 0.0
        x, y = a.detach().to(torch.float64), b.detach().to(torch.float64)
        d = torch.where(x == y, torch.zeros((), dtype=torch.float64), (x - y).abs())
        return float("nan") if bool(torch.isnan(d).any()) else float(d.max())
    return abs(float(a) - float(b))
