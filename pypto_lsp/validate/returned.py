"""An entry's returned values, under the keys an expected bundle names them by.

A program may return its result instead of writing a ``pl.Out`` parameter. Its values are
compared like outputs, keyed ``return`` (a single value) or ``return.0``, ``return.1`` ...
(a tuple, in order). A returned value that is one of the entry's parameter tensors (the
usual ``return out``) is that parameter's value already: :func:`settle` leaves it out of what
differential mode compares, so nothing is compared twice; an expected bundle may still name
it under ``return``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch

from ..ir.model import Program, Return

RETURN_KEY = "return"

__all__ = ["RETURN_KEY", "is_return_key", "returned_tensors", "settle", "return_writes"]


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


def settle(
    returned: Mapping[str, torch.Tensor], lent: Mapping[str, torch.Tensor], after: Mapping[str, torch.Tensor]
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(every returned value, those that are no parameter) once the run's tensors are settled.

    ``lent`` are the entry's tensors as the run got them, ``after`` the same keys after it: an
    input the dump wrote is restored for the next run and its written state kept in ``after``
    (validate.lend), so a returned value that is a parameter (``return c``) is taken from there.
    """
    out: dict[str, torch.Tensor] = {}
    new: dict[str, torch.Tensor] = {}
    for k, v in returned.items():
        param = next((p for p, t in lent.items() if isinstance(t, torch.Tensor) and _same_tensor(v, t)), None)
        if param is None:
            out[k] = new[k] = v
        else:
            out[k] = after.get(param, v)
    return out, new


def return_writes(program: Program, entry: str, keys: Iterable[str]) -> dict[str, list[list[int]]]:
    """Where each returned value is "written" (what a mismatch is reported on): the entry's returns."""
    fn = program.function(entry)
    if fn is None:
        return {}
    spans = [[st.span.line, st.span.end_line] for st in fn.statements() if isinstance(st, Return)]
    return {k: spans for k in keys} if spans else {}
