"""PyTorch kernels for PyPTO ops, keyed by IR op name (``"tile.load"``, ``"tile.and"``).

Calling convention (what :mod:`.codegen` emits): ``KERNELS[name](*args, **kwargs)``
with the op's arguments exactly as printed in the dump (printed positional order,
printed keyword names; never ``attrs=``). Tensors/tiles are ``torch.Tensor``,
scalars Python numbers, shapes/offsets Python lists, dtypes ``torch.dtype``,
enum members strings (``"Vec"``, ``"zero"``, ``"Add"``, ``"DN"`` ...). Ops in
:data:`~pypto_lsp.ir.catalogue.NEEDS_RESULT_TYPE` also get ``_rtype=ResultType(...)`` from the annotation
of the assigned name (or None).

Valid regions (see :mod:`.values`): kernels that know one attach it (load,
slice/view with valid_shape, tpop lanes, set_validshape, aiv_shard ...); store,
assemble, fillpad, tpush, reductions and part_* read it. Compute ops return
fresh tensors; the generated code attaches the annotated valid region afterwards.

Semantics follow the pass-dump reference §3/§4; every deliberate difference from
the reference torch codegen is marked ``DIVERGENCE``.
"""

from __future__ import annotations

# registration order matters: tensor_valid wraps the kernels the others registered (arrays, prefetch and
# system_ops are the on-core and orchestration language ops; distributed the pld.* layer)
from . import (  # noqa: F401
    arrays,
    cast,
    compare,
    crosscore_ops,
    distributed,
    elementwise,
    gather_scatter,
    matmul,
    matmul_mx,
    movement,
    noops,
    philox,
    prefetch,
    reduce,
    sorting,
    system_ops,
    tensor_valid,
)
from .base import KERNELS, MemPtr, ResultType
from .compare import pack_mask, unpack_mask
from .noops import NOOPS

__all__ = ["KERNELS", "NOOPS", "ResultType", "MemPtr", "pack_mask", "unpack_mask"]
