"""On-core arrays (``array.*``) and the task-id values they often hold.

Semantics from hw-native-sys/pypto ``src/ir/op/array_ops/memory.cpp`` (commit e2d0f78ae6d7):
``array.create(extent, dtype=...)`` is a small fixed-size 1-D array on the scalar register file
/ C stack (integer, BOOL or TASK_ID elements, never in global memory);
``array.get_element(arr, i)`` reads one element; ``array.update_element(arr, i, v)`` is written
SSA-functionally in the IR, and PyPTO's codegen lowers each chain of updates to an in-place store
into the one C-stack array. We do what the device does: the update writes in place and returns the
same array, so an older SSA name of the array sees the update too (as in the emitted C).

A TASK_ID array (``pl.array.create(n, dtype=pl.TASK_ID)``) starts with every slot invalid
(``PTO2TaskId::invalid()``; pypto ``docs/en/dev/language/02-manual_dependencies.md`` and
``ExpandManualPhaseFence``: the first iteration's slots "still hold the invalid sentinel").
``deps=[tids]`` names every valid slot. A task id here is an ``int`` (valid, >= 0) or None
(invalid, what ``system.task_invalid`` returns); :mod:`.system_ops` reads them.

Other element dtypes start at 0: the C-stack array is uninitialised on the device, and PyPTO's
own tests write a slot before they read it.
"""

from __future__ import annotations

from typing import Any

import torch

from .base import KERNELS, as_scalar

__all__ = ["PlArray", "array_create", "array_get_element", "array_update_element"]


class PlArray(list[Any]):
    """An on-core array: a Python list of scalars (task ids: int or None) with its IR dtype."""

    __slots__ = ("dtype",)

    def __init__(self, items: list[Any], dtype: str) -> None:
        super().__init__(items)
        self.dtype = dtype


def _dtype_name(dtype: Any) -> str:
    """The element dtype's IR name. Generated code hands a ``torch.dtype``; TASK_ID has no torch dtype
    of its own (:data:`~pypto_lsp.exec.values.DTYPES` maps it to float32), and pypto admits only
    integer, BOOL and TASK_ID elements, so a floating dtype here is TASK_ID."""
    if isinstance(dtype, str):
        return dtype.rpartition(".")[2].upper()
    if isinstance(dtype, torch.dtype):
        if dtype == torch.bool:
            return "BOOL"
        return "TASK_ID" if dtype.is_floating_point else str(dtype).removeprefix("torch.").upper()
    return "INT32"


def _index(arr: PlArray, index: Any) -> int:
    i = int(as_scalar(index))
    if not 0 <= i < len(arr):
        raise IndexError(f"array index {i} outside the array's extent {len(arr)}")
    return i


def array_create(extent: Any, *_args: Any, dtype: Any = None, **_kw: Any) -> PlArray:
    n = int(as_scalar(extent))
    name = _dtype_name(dtype) if dtype is not None else "INT32"
    fill: Any = None if name == "TASK_ID" else (False if name == "BOOL" else 0)
    return PlArray([fill] * n, name)


def _element(v: Any, dtype: str) -> Any:
    v = as_scalar(v)
    if dtype == "TASK_ID" or v is None:
        return v
    if dtype == "BOOL":
        return bool(v)
    return int(v)


def array_get_element(arr: PlArray, index: Any, *_args: Any, **_kw: Any) -> Any:
    return arr[_index(arr, index)]


def array_update_element(arr: PlArray, index: Any, value: Any, *_args: Any, **_kw: Any) -> PlArray:
    arr[_index(arr, index)] = _element(value, getattr(arr, "dtype", "INT32"))
    return arr


KERNELS["array.create"] = array_create
KERNELS["array.get_element"] = array_get_element
KERNELS["array.update_element"] = array_update_element
