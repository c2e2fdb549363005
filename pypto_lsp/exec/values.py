"""Runtime value helpers: IR dtype names -> torch dtypes, and valid-region metadata.

Every tile/tensor at run time is a plain ``torch.Tensor``. The *valid region* of a
value (``pl.TileView(valid_shape=...)`` / ``pl.TensorView(valid_shape=...)``) is an
origin-anchored box ``[0, v0) x [0, v1) x ...`` kept as the Python attribute
``_pl_valid`` on the tensor object. It is never stored on a tensor in place:
:func:`with_valid` attaches it to a fresh alias (``t.detach()``, same storage),
so another name bound to the original object keeps its own metadata.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .side_threads import side_by_side, spans

__all__ = ["DTYPES", "torch_dtype", "get_valid", "with_valid", "valid_or_shape", "valid_box", "register_input", "as_f32"]

_VALID_ATTR = "_pl_valid"

DTYPES: dict[str, torch.dtype] = {
    "BOOL": torch.bool,
    "INT8": torch.int8,
    "INT16": torch.int16,
    "INT32": torch.int32,
    "INT64": torch.int64,
    "UINT8": torch.uint8,
    # torch has no (usable) unsigned 16/32/64-bit dtypes: widen like the reference.
    "UINT16": torch.int32,
    "UINT32": torch.int64,
    "UINT64": torch.int64,
    "INDEX": torch.int64,
    "FP16": torch.float16,
    "BF16": torch.bfloat16,
    "FP32": torch.float32,
    # No torch equivalent: the reference falls back to float32 for these.
    "INT4": torch.float32,
    "UINT4": torch.float32,
    "FP4": torch.float32,
    "FP8E4M3FN": torch.float32,
    "FP8E5M2": torch.float32,
    "FP8E8M0": torch.float32,
    "HF4": torch.float32,
    "HF8": torch.float32,
    "TASK_ID": torch.float32,
}


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype of an IR dtype name (``"FP32"``, ``"pl.BF16"``, ``"bfloat16"`` ...).

    Raises KeyError for an unknown name (the reference silently uses float32).
    """
    key = name.rsplit(".", 1)[-1].upper()
    aliases = {"BFLOAT16": "BF16", "FLOAT32": "FP32", "FLOAT16": "FP16"}
    key = aliases.get(key, key)
    return DTYPES[key]


def _norm(shape: Sequence[Any] | None) -> tuple[int, ...] | None:
    if shape is None:
        return None
    return tuple(int(s) for s in shape)


def get_valid(t: Any) -> tuple[int, ...] | None:
    """The valid region attached to ``t`` (None: the whole tensor is valid)."""
    return getattr(t, _VALID_ATTR, None)


def with_valid(t: torch.Tensor, shape: Sequence[Any] | None) -> torch.Tensor:
    """``t`` with valid region ``shape`` attached (on a fresh alias unless already so).

    A valid region equal to ``t.shape`` is stored as None (= whole tensor).
    """
    if not isinstance(t, torch.Tensor):
        return t
    cur = getattr(t, _VALID_ATTR, None)
    if cur == shape and (cur is None or type(shape) is tuple):
        return t  # already so (a tuple attached is normalised: never the full shape)
    norm = _norm(shape)
    if norm is not None and norm == tuple(t.shape):
        norm = None
    if cur == norm:
        return t
    alias = t.detach()  # a fresh alias of the same storage (nothing here needs autograd; cheaper than view_as)
    if norm is not None:
        setattr(alias, _VALID_ATTR, norm)
    return alias


def valid_or_shape(t: torch.Tensor) -> tuple[int, ...]:
    """The valid region of ``t``, or its full shape when none is attached."""
    v = get_valid(t)
    return tuple(t.shape) if v is None else v


def valid_box(t: torch.Tensor) -> tuple[int, ...]:
    """Like :func:`valid_or_shape` but sanitised: same rank as ``t``, each extent in [0, dim].

    A valid region of a different rank than the tensor (a mis-annotated value)
    is ignored.
    """
    v = get_valid(t)
    shape = tuple(t.shape)
    if v is None or len(v) != len(shape):
        return shape
    return tuple(max(0, min(int(a), b)) for a, b in zip(v, shape, strict=True))


# ---------------------------------------------------------------------- FP32 copies of inputs

# storage -> the golden input tensor that owns it (read-only in every run: see validate.lend)
_INPUTS: dict[int, weakref.ref[torch.Tensor]] = {}
# storage -> (the owner's version when converted, the whole storage as FP32)
_F32: dict[int, tuple[int, torch.Tensor]] = {}
_HALF = (torch.bfloat16, torch.float16)
_MIN_ELEMENTS = 1 << 16  # weights, not tiles
_WINDOW_PART = 8  # a view of at most 1/8 of its input is converted on its own (see as_f32)


def version_of(t: torch.Tensor) -> int | None:
    """``t``'s version counter (every in-place write to it, or to a view of it, moves it on), or None
    for a tensor made inside a run (``validate.engine.run`` runs under ``torch.inference_mode``,
    whose tensors keep no counter): a cache that tells writes apart by versions passes those by."""
    return None if t.is_inference() else t._version


def register_input(t: torch.Tensor) -> None:
    """``t`` is a golden input that runs only read (lent, not cloned): :func:`as_f32` may keep its
    FP32 conversion for the next run. Entries of inputs that are gone are dropped."""
    for k in [k for k, ref in _INPUTS.items() if ref() is None]:
        _INPUTS.pop(k, None)
        _F32.pop(k, None)
    if t.dtype in _HALF and t.numel() >= _MIN_ELEMENTS:
        _INPUTS[t.untyped_storage().data_ptr()] = weakref.ref(t)


def _float_in_parts(flat: torch.Tensor) -> torch.Tensor:
    """``flat.float()``, a big one converted in parts side by side (:mod:`pypto_lsp.exec.side_threads`).
    Not by raising torch's thread count: that count is the process's, and a long matmul running
    meanwhile in another thread (the debug adapter's run of the previous pass, a Dask worker's other
    file) would take it up and give other bits."""
    out = torch.empty(flat.shape, dtype=torch.float32)

    def part(lo: int, hi: int) -> Callable[[], object]:
        return lambda: out[lo:hi].copy_(flat[lo:hi])

    side_by_side([part(lo, hi) for lo, hi in spans(flat.numel(), flat.numel())])  # a part not converted raises: nothing kept
    return out


def as_f32(t: torch.Tensor) -> torch.Tensor:
    """``t.float()``; for a big part of a golden input (a BF16/FP16 weight), a view of that input
    converted once per process and version (every dump of a folder, every save in the editor, reads
    the same weights).

    A window of at most 1/:data:`_WINDOW_PART` of its input (a tile, one task's K-chunk columns) is
    converted on its own, each time: the matmul then reads a contiguous FP32 window, which costs
    what reading the strided window of a whole FP32 copy costs (the conversion included; measured
    on the K-chunk ``bmm``s of hidden 4096: 31 ms either way for one weight's 128 windows), and the
    run neither pays for converting the whole weight first (~90 ms of the hidden-4096 last dump's
    0.54 s cold) nor holds its copy (4 bytes an element: 470 MB there). The bits are the same either
    way (a test multiplies both)."""
    if t.dtype not in _HALF:
        return t.float()
    ptr = t.untyped_storage().data_ptr()
    ref = _INPUTS.get(ptr)
    owner = ref() if ref is not None else None
    version = version_of(owner) if owner is not None else None  # shared by every view of it: a write anywhere in it shows here
    if version is None or owner is None or owner.untyped_storage().data_ptr() != ptr:
        return t.float()
    hit = _F32.get(ptr)
    if hit is None or hit[0] != version:
        if t.numel() * _WINDOW_PART <= owner.numel():
            _F32.pop(ptr, None)  # an older version's copy: not kept
            return t.float()  # a window: on its own (a whole copy made for a bigger part is used while it lasts)
        storage = owner.untyped_storage()
        flat = torch.empty(0, dtype=owner.dtype).set_(storage, 0, (storage.nbytes() // owner.element_size(),), (1,))
        hit = (version, _float_in_parts(flat))  # 117 M weight elements at hidden 4096: ~0.17 s on one core
        _F32[ptr] = hit
    return hit[1].as_strided(t.shape, t.stride(), t.storage_offset())
