"""A function found clean before is not read again: the key of what its static check depends on.

The dumps of a folder repeat whole functions (qwen3's 17 distinct dumps: 163 functions, 86 distinct
texts): a pass rewrites some and leaves the others as they were, often on other lines. What the
per-function checker (``check._FunctionChecker``) finds depends on the function's own text, the
program's dynamic dims and the signatures of the functions it calls (their parameters and returns,
read at each call), nothing else; so a function whose key (those, word for word) was checked before
and found nothing is found clean again without reading it. Only clean results are kept: a finding
names lines, which move. ``tests/unit/test_check_reuse.py`` checks both ways agree on every dump.
"""

from __future__ import annotations

import hashlib
import threading

from .model import Program

__all__ = ["forget_clean", "function_check_keys", "is_clean", "known_clean", "remember_clean"]

_CLEAN: set[bytes] = set()
_LOCK = threading.Lock()
MAX_CLEAN = 20_000  # kept keys (16 bytes each)


def remember_clean(key: bytes) -> None:
    with _LOCK:
        if len(_CLEAN) >= MAX_CLEAN:
            _CLEAN.clear()
        _CLEAN.add(key)


def is_clean(key: bytes) -> bool:
    """A function of this key was checked and found clean."""
    with _LOCK:
        return key in _CLEAN


def forget_clean() -> None:
    """Drop every kept key (tests, benchmarks)."""
    with _LOCK:
        _CLEAN.clear()


def known_clean(program: Program) -> int:
    """How many of ``program``'s functions a check would take as found clean before."""
    keys = function_check_keys(program) or []
    with _LOCK:
        return sum(1 for k in keys if k is not None and k in _CLEAN)


def function_check_keys(program: Program) -> list[bytes | None] | None:
    """Per function of ``program``, the key of what its check depends on (see above), or None for the
    whole program when its text cannot say (no text kept, a carriage return: the parser's lines are
    not a split at line feeds)."""
    text = program.source
    fns = program.functions
    if not text or "\r" in text or not fns:
        return None
    lines = text.split("\n")
    # a function's text: from its first decorator to its last line
    starts = [f.first_line - 1 for f in fns]
    if any(not 0 <= a < f.span.line for a, f in zip(starts, fns, strict=True)):
        return None  # a function not made by the parser (first line not known)
    own = ["\n".join(lines[a : f.span.end_line]) for a, f in zip(starts, fns, strict=True)]
    by_name: dict[str, int] = {}
    for i, f in enumerate(fns):
        by_name.setdefault(f.name, i)  # the first of a name, as Program.function finds it
    header: dict[int, str] = {}

    def signature(i: int) -> str:
        # decorators and ``def`` up to the body's first line: every parameter and return type
        hit = header.get(i)
        if hit is None:
            f = fns[i]
            end = f.body[0].span.line - 1 if f.body else f.span.end_line
            hit = header[i] = "\n".join(lines[starts[i] : max(end, f.span.line)])
        return hit

    dyn = ",".join(sorted(program.dynamic_dims))
    keys: list[bytes | None] = []
    for i in range(len(fns)):
        # the signature of every function whose name the text holds (the callees, and maybe more:
        # a superset keys as well); a call of an undefined function is a finding, never kept
        parts = [dyn, own[i]]
        parts += [f"{name}\0{signature(j)}" for name, j in by_name.items() if name in own[i]]
        keys.append(hashlib.blake2b("\0\0".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).digest())
    return keys
