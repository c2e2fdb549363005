"""Asynchronous GM -> L2 prefetch (``prefetch.*``): no value effect; a read of the source for the sanitizer.

hw-native-sys/pypto ``src/ir/op/prefetch/prefetch_async.cpp`` (e2d0f78ae6d7): ``make_context()``
gives a ``PrefetchAsyncContext``, ``async_prefetch(src, ctx)`` starts warming L2 with the
contiguous GM region of ``src`` and returns an ``AsyncEvent``, ``session(ctx)`` the
``AsyncSession``, ``wait(evt, session)`` blocks until the event completes and returns a BOOL.
"These are latency-hiding cache hints: the prefetch ... changes no tensor values, so a kernel is
numerically identical with or without it."

What it does to memory: the prefetch reads ``src``'s whole window from global memory while the
task runs. With the sanitizer on, that read is recorded in the task (a write of the same region
by an unordered task is a race, as for any read). A prefetch of bytes nothing has written yet is
no uninitialised read: it only fills a cache line, and a later load of those bytes is what the
sanitizer reports. Everything completes at once here, so ``wait`` returns True.
"""

from __future__ import annotations

from typing import Any

import torch

from .. import sanitizer
from .base import KERNELS

__all__ = ["PrefetchContext", "AsyncEvent", "AsyncSession"]


class PrefetchContext:
    """``pl.PrefetchAsyncContext``: a handle (the device's SDMA workspace is runtime-owned)."""


class AsyncEvent:
    """``pl.AsyncEvent``: the prefetch it stands for has landed once it exists (nothing is in flight)."""

    def __init__(self, src: Any) -> None:
        self.src = src


class AsyncSession:
    """``pl.AsyncSession`` bound to a context."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx


def _make_context(*_args: Any, **_kw: Any) -> PrefetchContext:
    return PrefetchContext()


def _async_prefetch(src: Any = None, *_args: Any, **_kw: Any) -> AsyncEvent:
    san = sanitizer.active()
    if san is not None and isinstance(src, torch.Tensor) and src.dim() > 0:
        root = san.roots.get(src.untyped_storage().data_ptr())
        if root is not None:  # the read is a task access (an undefined element read is no finding by itself)
            san.access("r", src, [0] * src.dim(), list(src.shape), "prefetch.async_prefetch")
    return AsyncEvent(src)


def _session(ctx: Any = None, *_args: Any, **_kw: Any) -> AsyncSession:
    return AsyncSession(ctx)


def _wait(*_args: Any, **_kw: Any) -> bool:
    return True


KERNELS["prefetch.make_context"] = _make_context
KERNELS["prefetch.async_prefetch"] = _async_prefetch
KERNELS["prefetch.session"] = _session
KERNELS["prefetch.wait"] = _wait
