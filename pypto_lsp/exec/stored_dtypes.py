"""Golden tensors stored in a dtype other than the one the executor computes in.

The executor holds every IR dtype torch cannot compute in as a wider torch dtype
(:data:`.values.DTYPES`: the MX dtypes FP8E4M3FN / FP8E5M2 / FP4 / FP8E8M0 as float32). PyPTO's
test harness writes its bundles in torch's storage dtypes instead
(``tests/st/runtime/ops/test_matmul_mx.py`` in hw-native-sys/pypto; ``../shared/fixtures-coverage/README.md``):

- FP8 data as ``torch.float8_e4m3fn`` / ``torch.float8_e5m2`` (decoded exactly to float32);
- FP4 data as ``torch.float4_e2m1fn_x2``: two E2M1 codes per byte, the even column in the low
  nibble, so the stored last dim is half the declared one (decoded with the E2M1 value table of
  the OCP MX spec, the one the test's ``_decode_fp4_data`` uses);
- E8M0 block scales as ``torch.float8_e8m0fnu`` (a pure exponent: code ``e`` is ``2**(e - 127)``,
  code 255 is NaN), kept in the physical layout the kernel reads (MX_A_ZZ / MX_B_NN, see
  :mod:`.kernels.matmul_mx`);

:func:`decode_stored` turns such a tensor into the executor's representation of the declared
dtype (UINT32 stored as int32 bits is :mod:`pypto_lsp.validate.lend`'s ``uint32_as_held``);
anything else is returned as is (and the engine's dtype check then speaks).
:func:`representable` snaps synthesized float32 inputs (differential mode) to values the declared
low-precision dtype holds, so a run without goldens sees what the device could be given.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from ..ir.model import Program, TensorType, TileType

_SSA_SUFFIX = re.compile(r"__ssa_v\d+$")

__all__ = ["decode_stored", "decode_stored_args", "decode_stored_expected", "decode_fp4_x2", "representable", "FP4_E2M1_VALUES"]

# E2M1 code -> value (sign bit 3, exponent bits 2-1, mantissa bit 0)
FP4_E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)

_FP8 = {name: getattr(torch, name) for name in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu") if hasattr(torch, name)}
_FP4_X2 = getattr(torch, "float4_e2m1fn_x2", None)

# declared IR dtype -> the storage dtypes accepted for it
_ACCEPTED: dict[str, tuple[torch.dtype, ...]] = {
    "FP8E4M3FN": tuple(d for n, d in _FP8.items() if n == "float8_e4m3fn"),
    "FP8E5M2": tuple(d for n, d in _FP8.items() if n == "float8_e5m2"),
    "FP8E8M0": tuple(d for n, d in _FP8.items() if n == "float8_e8m0fnu"),
    "FP4": (_FP4_X2,) if _FP4_X2 is not None else (),
}


def decode_fp4_x2(t: torch.Tensor) -> torch.Tensor:
    """``float4_e2m1fn_x2`` (or raw ``uint8``) storage ``[..., n]`` -> float32 ``[..., 2n]``."""
    packed = t.contiguous().view(torch.uint8).to(torch.long)
    codes = torch.stack((packed & 0x0F, (packed >> 4) & 0x0F), dim=-1).reshape(*packed.shape[:-1], packed.shape[-1] * 2)
    return torch.tensor(FP4_E2M1_VALUES, dtype=torch.float32)[codes]


def decode_stored(declared: str, t: torch.Tensor) -> torch.Tensor:
    """``t`` in the executor's representation of ``declared`` when ``t`` is one of the storage
    dtypes the harness writes for it; else ``t`` unchanged."""
    accepted = _ACCEPTED.get(declared, ())
    if t.dtype not in accepted:
        return t
    if declared == "FP4":
        return decode_fp4_x2(t)
    return t.to(torch.float32)


def representable(declared: str, t: torch.Tensor) -> torch.Tensor:
    """Float32 ``t`` rounded to the nearest value ``declared`` holds (FP8 by torch's rounding, FP4 to
    the nearest E2M1 value, E8M0 to a power of two around 1: ``2**round(2t)``); other dtypes as is."""
    if declared in ("FP8E4M3FN", "FP8E5M2"):
        fp8 = _FP8.get("float8_e4m3fn" if declared == "FP8E4M3FN" else "float8_e5m2")
        return t.to(fp8).to(torch.float32) if fp8 is not None else t
    if declared == "FP4":
        table = torch.tensor(FP4_E2M1_VALUES[:8], dtype=torch.float32)
        nearest = (t.abs().unsqueeze(-1) - table).abs().argmin(-1)
        return torch.where(t < 0, -table[nearest], table[nearest])
    if declared == "FP8E8M0":
        return torch.pow(2.0, torch.round(t * 2)).to(torch.float32)
    return t


def decode_stored_args(program: Program, entry: str, args: list[Any], run_tensors: dict[str, torch.Tensor]) -> None:
    """The entry's arguments (in parameter order) decoded in place; the run's tensor map follows, so
    an output decoded here is the tensor the run writes and is read back."""
    fn = program.function(entry)
    for i, (p, a) in enumerate(zip(fn.params if fn is not None else (), args, strict=False)):
        if isinstance(p.type, TensorType | TileType) and isinstance(a, torch.Tensor):
            new = decode_stored(p.type.dtype, a)
            if new is not a:
                args[i] = new
                for k, v in run_tensors.items():
                    if v is a:
                        run_tensors[k] = new


def decode_stored_expected(program: Program, entry: str, key: str, exp: torch.Tensor) -> torch.Tensor:
    """An expected output decoded for the parameter bundle key ``key`` binds (as the engine binds it)."""
    fn = program.function(entry)
    for p in fn.params if fn is not None else ():
        if isinstance(p.type, TensorType | TileType) and key in (p.name, _SSA_SUFFIX.sub("", p.name), p.name.split("__")[0]):
            return decode_stored(p.type.dtype, exp)
    return exp
