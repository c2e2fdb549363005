"""``tile.random`` / ``tensor.random``: the counter-based generator of ``pto.trandom``.

pypto documents the op only as "counter-based (Philox/ChaCha-style)" with a 64-bit key, a
128-bit counter and 7 or 10 rounds (``src/ir/op/tile_ops/memory.cpp`` DeduceTileRandomType,
``python/pypto/language/op/tile_ops.py``), and its system test
``tests/st/runtime/ops/test_random.py`` deliberately checks determinism only (two draws with the
same seeds subtract to zero). The schedule pinned here is pto-isa's own CPU model of TRANDOM
(``include/pto/cpu/TRandom.hpp``; semantics in ``docs/isa/TRANDOM.md``): Philox-4x32,

- one round maps counter ``(c0, c1, c2, c3)`` and key ``(k0, k1)`` to
  ``(hi(c2*M1) ^ c1 ^ k0, lo(c2*M1), hi(c0*M0) ^ c3 ^ k1, lo(c0*M0))`` with
  ``M0 = 0xD2511F53``, ``M1 = 0xCD9E8D57``, then bumps the key by ``(0x9E3779B9, 0xBB67AE85)``;
- lanes of 64 (256 bytes of 32-bit elements): lane ``j`` runs the rounds on ``row_counter + j``
  (a 128-bit add) and its four output words go to columns ``j``, ``64 + j``, ``128 + j`` and
  ``192 + j`` of the current 256-column chunk;
- after each chunk of a row (``ceil(valid_cols / 256)`` per row), the row counter advances by
  ``cols / 4`` (the tile's row stride in 4-element units); rows continue from there.

Only the valid region (the optional ``valid_shape``) is written; the rest is zero here (the
device leaves it untouched). The same key and counters always give the same values, so
differential mode compares it like any other op. Not checked against a device: the pypto test
has no numeric golden.
"""

from __future__ import annotations

from typing import Any

import torch

from .base import as_ints, as_scalar, check_alloc, register

__all__ = ["random", "philox_rounds"]

_M0 = 0xD2511F53
_M1 = 0xCD9E8D57
_KEY_ADD = (0x9E3779B9, 0xBB67AE85)
_LANES = 64  # 256-byte repeat of 32-bit elements
_REPEATS = 4  # output words per lane
_MASK32 = 0xFFFFFFFF


def _mul_hi_lo(a: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """High and low 32 bits of ``a * m`` (a: int64 holding uint32) without int64 overflow."""
    t_lo = a * (m & 0xFFFF)  # < 2**48
    t_hi = a * (m >> 16)  # < 2**48
    mid = t_hi + (t_lo >> 16)
    return mid >> 16, ((mid & 0xFFFF) << 16) | (t_lo & 0xFFFF)


def philox_rounds(counters: torch.Tensor, key: tuple[int, int], rounds: int) -> torch.Tensor:
    """``[n, 4]`` int64 counters (uint32 words) -> ``[n, 4]`` output words after ``rounds``."""
    c0, c1, c2, c3 = counters.unbind(-1)
    k0, k1 = key[0] & _MASK32, key[1] & _MASK32
    for _ in range(rounds):
        hi0, lo0 = _mul_hi_lo(c0, _M0)
        hi1, lo1 = _mul_hi_lo(c2, _M1)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + _KEY_ADD[0]) & _MASK32
        k1 = (k1 + _KEY_ADD[1]) & _MASK32
    return torch.stack((c0, c1, c2, c3), dim=-1)


def _add128(seed: list[int], offsets: torch.Tensor) -> torch.Tensor:
    """``[n, 4]`` uint32 words of the 128-bit ``seed`` (4 words, low first) plus each offset."""
    words = []
    carry = offsets
    for w in seed:
        total = carry + w  # < 2**63 + 2**32: no int64 overflow for the offsets used here
        words.append(total & _MASK32)
        carry = total >> 32
    return torch.stack(words, dim=-1)


@register("random")
def random(
    key0: Any,
    key1: Any,
    counter0: Any,
    counter1: Any,
    counter2: Any,
    counter3: Any,
    shape: Any,
    valid_shape: Any = None,
    *_extra: Any,
    dtype: Any = None,
    rounds: Any = 10,
    **_kw: Any,
) -> torch.Tensor:
    """A ``shape`` tile of 32-bit random words (UINT32 held as int64, or INT32)."""
    dims = as_ints(shape)
    if len(dims) != 2:
        raise ValueError(f"random: a 2-D shape (rows, cols) expected, got {dims}")
    n_rounds = int(as_scalar(rounds)) if rounds is not None else 10
    if n_rounds not in (7, 10):
        raise ValueError(f"random: rounds must be 7 or 10, got {n_rounds}")
    rows, cols = dims
    vr, vc = as_ints(valid_shape) if valid_shape is not None else dims
    vr, vc = max(0, min(vr, rows)), max(0, min(vc, cols))
    seeds = [int(as_scalar(x)) & _MASK32 for x in (counter0, counter1, counter2, counter3)]
    chunk = _LANES * _REPEATS
    loops = -(-vc // chunk)
    step = cols // 4  # the row counter's advance per chunk (row stride / 4)
    out_dtype = dtype if isinstance(dtype, torch.dtype) else torch.int64
    check_alloc([rows, cols], torch.int64, "random's tile")
    out = torch.zeros(rows, cols, dtype=torch.int64)
    if vr and loops:
        # one 128-bit counter per (row, chunk, lane): the seed counter plus an offset below 2**63
        offsets = (torch.arange(vr * loops, dtype=torch.int64) * step).unsqueeze(1) + torch.arange(_LANES, dtype=torch.int64)
        counters = _add128(seeds, offsets.reshape(-1))
        words = philox_rounds(counters, (int(as_scalar(key0)), int(as_scalar(key1))), n_rounds)
        # [vr, loops, lane, repeat] -> columns loop*256 + repeat*64 + lane
        block = words.reshape(vr, loops, _LANES, _REPEATS).permute(0, 1, 3, 2).reshape(vr, loops * chunk)
        out[:vr, :vc] = block[:, :vc]
    if out_dtype == torch.int32:
        return out.to(torch.int32)  # wraps to the same bits
    return out.to(out_dtype) if out_dtype != torch.int64 else out
