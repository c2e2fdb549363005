"""K-chunk accumulations run as one matmul: the run-time half (the plans: :mod:`pypto_lsp.analysis.batching_plan`)."""

from __future__ import annotations

from typing import Any

import torch

from . import sanitizer
from .values import as_f32

__all__ = ["add_each_in_order", "add_in_order", "chunk_products", "chunk_window", "kchunk"]


def add_each_in_order(inits: list[torch.Tensor], terms: torch.Tensor) -> list[torch.Tensor]:
    """:func:`add_in_order` for ``k`` FP32 accumulators of one shape whose terms come interleaved
    (``terms[i]`` goes to ``inits[i % k]``, as a loop body adding one tile to each pops them), in
    one call over ``terms`` as it lies (a strided ``terms[j::k]`` per accumulator costs the kernel
    several times more)."""
    if not _index_add_in_order():
        return [_added_one_by_one(init, terms[j :: len(inits)]) for j, init in enumerate(inits)]
    out = torch.stack(inits)
    out.index_add_(0, _owners(len(inits), terms.shape[0]), terms)
    return list(out.unbind(0))


def add_in_order(init: torch.Tensor, terms: torch.Tensor) -> torch.Tensor:
    """``init + terms[0] + terms[1] + ...`` as the loop adds them: one add at a time, left to right,
    each rounded to the accumulator's dtype, in one torch call.

    ``index_add_`` with an index of zeros does exactly that: torch's CPU kernel walks the index in
    order and adds each source slice with the add kernel (aten ``index_add_cpu_``). ``terms.sum(0)``
    would not: its cascade summation pairs the terms in another order, so the last FP32 bits (and,
    after a cast, a BF16 output) can differ from the device's (at hidden 4096, 9 of 65 536 outputs
    by one BF16 ulp). ``terms``: ``[n, *init.shape]``, of ``init``'s dtype.

    FP32 only in one call: for BF16/FP16 the kernel may carry the sum in a wider buffer between the
    slices (torch 2.13 does for a 2-D slice: measured), not the loop's rounding after every add;
    those accumulators (rare) get the loop's adds one by one, as does every accumulator where this
    process's torch was found not to add in order (:func:`_index_add_in_order`)."""
    if init.dtype != torch.float32 or not _index_add_in_order():
        return _added_one_by_one(init, terms)
    out = init.clone(memory_format=torch.contiguous_format).unsqueeze(0)
    out.index_add_(0, _owners(1, terms.shape[0]), terms)
    return out[0]


def _added_one_by_one(init: torch.Tensor, terms: torch.Tensor) -> torch.Tensor:
    acc = init
    for t in terms:
        acc = torch.add(acc, t)
    return acc


_OWNERS: dict[tuple[int, int], torch.Tensor] = {}


def _owners(k: int, n: int) -> torch.Tensor:
    """``[0, 1, .., k-1]`` repeated up to ``n`` entries: which accumulator each term goes to (made once
    per shape: building it costs more than the adds)."""
    index = _OWNERS.get((k, n))
    if index is None:
        if len(_OWNERS) > 256:
            _OWNERS.clear()
        index = _OWNERS[(k, n)] = torch.arange(n) % k
    return index


_IN_ORDER: list[bool] = []  # whether this process's index_add_ adds in index order (found once)


def _index_add_in_order() -> bool:
    """Whether ``index_add_`` adds the slices one by one in index order here, found once per process
    on terms spread over eight decades (where the order of the sums shows in the last bits): the
    order is torch's implementation, not its contract, and the package accepts other versions of
    torch than the one it is tested with."""
    if not _IN_ORDER:
        g = torch.Generator().manual_seed(0)
        terms = torch.randn(33, 4, 16, generator=g) * 10.0 ** (torch.rand(33, 4, 16, generator=g) * 8 - 4)
        init = torch.randn(4, 16, generator=g)
        got = init.clone().unsqueeze(0).index_add_(0, torch.zeros(33, dtype=torch.long), terms)[0]
        _IN_ORDER.append(torch.equal(got, _added_one_by_one(init, terms)))
    return _IN_ORDER[0]


# (M, C, P, chunks, strides, dtype) -> whether one bmm gives each chunk's own matmul bit for bit
_BMM_EXACT: dict[tuple[Any, ...], bool] = {}


def chunk_products(lhs: torch.Tensor, rhs: torch.Tensor, chunks: int) -> torch.Tensor:
    """``[chunks, M, P]``: chunk ``i``'s product ``lhs[:, i*C:(i+1)*C] @ rhs[i*C:(i+1)*C]`` at ``[i]``, with
    the bits of that matmul run on its own (FP32 operands: ``lhs [M, chunks*C]``, ``rhs [chunks*C, P]``).

    One ``bmm`` over the chunks gives each chunk's own matmul bit for bit on this machine's BLAS
    (MKL) except where a side is a vector (``M == 1`` or ``P == 1``: ``matmul`` takes the
    matrix-vector path there, which sums in another order: 77 of 1 176 shapes tried, all vectors).
    That is BLAS's behaviour, not a promise: the first call of each shape and layout computes both
    and compares them, and a shape where they differ is multiplied chunk by chunk from then on."""
    m, p = lhs.shape[0], rhs.shape[1]
    c = lhs.shape[1] // chunks

    def one_by_one() -> torch.Tensor:
        return torch.stack([torch.matmul(lhs[:, i * c : (i + 1) * c], rhs[i * c : (i + 1) * c]) for i in range(chunks)])

    if m == 1 or p == 1:
        return one_by_one()
    key = (m, c, p, chunks, lhs.stride(), rhs.stride(), lhs.dtype, rhs.dtype)
    exact = _BMM_EXACT.get(key)
    if exact is False:
        return one_by_one()
    batched = torch.bmm(lhs.reshape(m, chunks, c).permute(1, 0, 2), rhs.reshape(chunks, c, p))
    if exact is None:
        want = one_by_one()
        if len(_BMM_EXACT) > 4096:
            _BMM_EXACT.clear()
        _BMM_EXACT[key] = torch.equal(batched, want)  # NaN in the first operands: chunk by chunk, to be safe
        return want
    return batched


def chunk_window(src: Any, offsets: tuple[Any, ...], shape: tuple[int, int], axis: int, chunks: int) -> Any:
    if not isinstance(src, torch.Tensor) or src.dim() != 2 or getattr(src, "_pl_valid", None) is not None:
        return None
    full = list(shape)
    full[axis] *= chunks
    offs = [int(o) for o in offsets]
    if any(o < 0 or o + n > size for o, n, size in zip(offs, full, src.shape, strict=True)):
        return None  # past the edge: the loop as written handles the clamping
    san = sanitizer.active()
    if san is not None:  # the chunks' loads, as one read of their region
        san.access("r", src, offs, full, "tile.load")
    return src[offs[0] : offs[0] + full[0], offs[1] : offs[1] + full[1]]


def kchunk(inits: tuple[Any, ...], specs: tuple[tuple[Any, ...], ...], chunks: int) -> tuple[Any, ...] | None:
    """The accumulators after the whole loop, or None when the loop must run as written.

    ``specs``: per accumulator ``(A, a_offsets, a_shape, B, b_offsets, b_shape, product)`` at the first
    chunk; ``product``: the dtype the loop rounds each chunk's product to before adding it (its
    annotation when narrower than FP32), or None.
    """
    if any(sanitizer.undefined_in((init, s[0], s[3])) for init, s in zip(inits, specs, strict=True)):
        return None  # undefined elements are followed kernel by kernel (exec.definedness)
    out = []
    for init, (a, a_off, a_shape, b, b_off, b_shape, product) in zip(inits, specs, strict=True):
        if not isinstance(init, torch.Tensor) or init.dtype != torch.float32 or getattr(init, "_pl_valid", None) is not None:
            return None
        lhs = chunk_window(a, a_off, a_shape, 1, chunks)
        rhs = chunk_window(b, b_off, b_shape, 0, chunks)
        if lhs is None or rhs is None or not (lhs.dtype.is_floating_point and rhs.dtype.is_floating_point):
            return None
        if tuple(init.shape) != (a_shape[0], b_shape[1]):
            return None
        # each chunk's product as the loop's matmul makes it, added into the accumulator chunk by
        # chunk in the loop's order: the loop's bits (tests/conformance/test_batching.py)
        products = chunk_products(as_f32(lhs), as_f32(rhs), chunks)
        if product is not None:  # each product rounded as the loop's matmul result is, then added in FP32
            products = products.to(product).float()
        out.append(add_in_order(init, products))
    return tuple(out)
