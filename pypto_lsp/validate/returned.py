"""An entry's returned values, under the keys an expected bundle names them by.

A program may return its result instead of writing a ``pl.Out`` parameter. Its values are
compared like outputs, keyed ``return`` (a single value) or ``return.0``, ``return.1`` ...
(a tuple, in order). A returned value that is one of the entry's parameter tensors (the
usual ``return out``) is that parameter's value already: :func:`fresh` leaves it out of what
differential mode compares, so nothing is compared twice; an expected bundle may still name
it under ``return``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch

from ..ir.model import Program, Return, walk_stmts

RETURN_KEY = "return"

__all__ = ["RETURN_KEY", "is_return_key", "returned_tensors", "fresh", "return_writes"]


def is_return_key(key: str) -> bool:
    """``return`` or ``return.<i>``."""
    return key == RETURN_KEY or (key.startswith(RETURN_KEY + ".") and key[len(RETURN_KEY) + 1 :].isdigit())


def returned_tensors(value: Any) -> dict[str, torch.Tensor]:
    """The tensors of an entry's return value by key (scalars and other values are not compared)."""
    if isinstance(value, torch.Tensor):
        return {RETURN_KEY: value}
    if isinstance(value, tuple | list):
        return {f"{RETURN_KEY}.{i}": v for i, v in enumerate(value) if isinstance(v, torch.Tensor)}
    return {}


def _same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a is b or (
        a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        and a.storage_offset() == b.storage_offset()
        and tuple(a.shape) == tuple(b.shape)
        and a.dtype == b.dtype
    )


def fresh(returned: Mapping[str, torch.Tensor], params: Iterable[torch.Tensor]) -> dict[str, torch.Tensor]:
    """The returned tensors that are not one of ``params`` (the entry's parameter tensors)."""
    ps = [p for p in params if isinstance(p, torch.Tensor)]
    return {k: v for k, v in returned.items() if not any(_same_tensor(v, p) for p in ps)}


def return_writes(program: Program, entry: str, keys: Iterable[str]) -> dict[str, list[list[int]]]:
    """Where each returned value is "written" (what a mismatch is reported on): the entry's returns."""
    fn = program.function(entry)
    if fn is None:
        return {}
    spans = [[st.span.line, st.span.end_line] for st in walk_stmts(fn.body) if isinstance(st, Return)]
    return {k: spans for k in keys} if spans else {}
