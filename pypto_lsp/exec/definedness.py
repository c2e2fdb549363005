"""Definedness propagation (memcheck / MemorySanitizer style): which elements hold whatever their
buffer held, followed through every kernel, and reported only where such a value matters.

A ``tensor.create`` without ``init_value`` gets a *shadow*: one bool per element of its storage,
True where the element is undefined. Nothing else has one, so a run without such a buffer pays
nothing (the kernels are not even wrapped until the first shadow exists). Shadows are keyed by the
storage (its base address, the storage kept alive while its shadow lives): a view (a slice, a
reshape, a ``tile.move``) sees its part of the shadow through the same strides as its data.

Each kernel call with an undefined operand gives its results a shadow by a rule chosen from the
op's catalogue row (``OpSpec.result``, :mod:`pypto_lsp.ir.catalogue`), so a kernel added later
gets one without a change here:

* movement (``load``, ``slice``, ``reshape``): the kernel itself runs on the shadow, so the
  window of the shadow moves exactly like the data (parts outside the valid region are defined:
  the tile holds the kernel's pad there);
* ``matmul``: an output element is undefined if its row of ``lhs`` or its column of ``rhs`` holds
  an undefined element (any over K); ``matmul_acc`` adds the accumulator elementwise;
* ``store`` (``tile.store``, ``assemble``): the written window takes the source's shadow
  (:func:`pypto_lsp.exec.kernels.base.write_region` calls :meth:`Definedness.moved`); another
  in-place writer (``tile.mscatter``) runs on the shadows, the destination's kept where it does not
  write;
* a pipe (:mod:`pypto_lsp.exec.crosscore`): the clone a push queues, each AIV lane's part of a
  split push and the tile a cube pops merged from both lanes get the shadow made the same way from
  the tile's (:meth:`Definedness.adopt`);
* everything else, by shape: an operand broadcastable to the result is OR-ed elementwise; one whose
  dims shrink to 1 in the result is reduced (any over the reduced axes); any other shape makes the
  whole result undefined if the operand holds one undefined element (the conservative default, also
  for collectives and kernels with no row).

Reading an undefined value is no finding by itself (the paged-attention accumulators are loaded on
the first block and never used). A finding is raised where the value *matters*
(:meth:`Definedness.sink`): an output or returned value at the end of the run, and a scalar read
back (``read``: what a branch, a loop bound, an index, an offset or a valid shape is made of). It
sits on the creation line and carries the path: the first read, each line the value flowed
through, the output elements it reached.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from ..ir.catalogue import lookup
from .values import get_valid, with_valid

__all__ = ["Definedness", "Shadow"]

# the window stores: kernels.base.write_region moves their shadows
_WRITE_REGION = frozenset({"tile.store", "tile.assemble", "tensor.assemble", "assemble"})

_MAX_PATH = 12  # lines kept per shadow's path
_MAX_SHADOWS = 20000  # beyond this many live shadows new results are not followed (a bound, not a finding)


class Shadow:
    """The undefined elements of one storage: a flat bool per element, where they came from."""

    __slots__ = ("keep", "flat", "esize", "count", "line", "name", "first_read", "path", "inflows", "own")

    def __init__(self, keep: torch.Tensor, line: int, name: str, first_read: tuple[int, str] | None, path: list[int]) -> None:
        self.keep = keep  # the storage stays alive: its address is never reused while the shadow lives
        self.esize = keep.element_size()
        n = keep.untyped_storage().nbytes() // max(1, self.esize)
        self.flat = torch.zeros(n, dtype=torch.bool)
        self.count = 0  # undefined elements
        self.line = line  # the creation (tensor.create without init_value)
        self.name = name
        self.first_read = first_read  # (line, op) of the first kernel that read an undefined element
        self.path = path  # the lines the undefined value flowed through
        # undefined values of other buffers written into this one (one origin per storage is kept:
        # each element's own is not), so a finding can name them too: [(shadow, the line it was written)]
        self.inflows: list[tuple[Shadow, int]] = []
        # the elements whose undefined value is this origin's own, once another buffer's were written
        # in (None before: every undefined element is); see :meth:`Definedness.moved`
        self.own: torch.Tensor | None = None

    def view(self, t: torch.Tensor) -> torch.Tensor | None:
        """The shadow of ``t`` (one of this storage's views), None when its layout cannot be followed."""
        if t.element_size() != self.esize:
            return None
        try:
            return self.flat.as_strided(tuple(t.shape), tuple(t.stride()), int(t.storage_offset()))
        except RuntimeError:
            return None


def _tensors(args: Sequence[Any], kw: dict[str, Any]) -> Iterator[torch.Tensor]:
    for a in (*args, *kw.values()):
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, list | tuple):
            for x in a:
                if isinstance(x, torch.Tensor):
                    yield x


def _results(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, list | tuple):
        return [x for x in out if isinstance(x, torch.Tensor)]
    return []


def fit(sh: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """An operand's shadow carried to a result of ``shape``: broadcast (elementwise), any over the
    axes that shrink to 1 (reductions), else all-or-nothing."""
    if tuple(sh.shape) == shape:
        return sh
    if sh.dim() == len(shape):
        dims = tuple(d for d in range(sh.dim()) if shape[d] == 1 and sh.shape[d] != 1)
        if dims and all(shape[d] == sh.shape[d] or shape[d] == 1 or sh.shape[d] == 1 for d in range(sh.dim())):
            sh = sh.any(dim=dims, keepdim=True)
    try:
        return sh.broadcast_to(shape)
    except RuntimeError:
        return torch.full(shape, bool(sh.any()), dtype=torch.bool)


def _matmul(
    a: torch.Tensor, sa: torch.Tensor | None, b: torch.Tensor, sb: torch.Tensor | None, kw: dict[str, Any], shape: tuple[int, ...]
) -> torch.Tensor:
    """Undefined where the row of ``lhs`` or the column of ``rhs`` holds an undefined element."""
    out = torch.zeros(shape, dtype=torch.bool)
    if len(shape) < 2:
        any_und = (sa is not None and bool(sa.any())) or (sb is not None and bool(sb.any()))
        return out | any_und
    if sa is not None and sa.dim() >= 2:
        rows = sa.any(dim=-2 if kw.get("a_trans") else -1)  # [..., M]
        out = out | fit(rows.unsqueeze(-1), shape)
    elif sa is not None:
        out = out | bool(sa.any())
    if sb is not None and sb.dim() >= 2:
        cols = sb.any(dim=-1 if kw.get("b_trans") else -2)  # [..., N]
        out = out | fit(cols.unsqueeze(-2), shape)
    elif sb is not None:
        out = out | bool(sb.any())
    return out


class Definedness:
    """The shadows of one run and the rules that carry them (see the module docstring)."""

    def __init__(self, caller_line: Callable[[], int | None], report: Callable[[Shadow, str, torch.Tensor, int | None], None]) -> None:
        self.shadows: dict[int, Shadow] = {}
        self.caller_line = caller_line
        self.report = report  # (shadow, where it reached, the undefined part, the line) -> a finding
        self.suspend: Callable[[], Any] = lambda: None  # the sanitizer's own switch (set by it)
        self.resume: Callable[[Any], None] = lambda _saved: None
        self._install: Callable[[], None] | None = None
        self.installed = False
        self.paused = False  # a task running unwatched (exec.task_watch): the wrapped kernels carry nothing
        # ``--sanitize strict``: told of every buffer's first read of undefined elements (shadow, line,
        # op, how many), whether or not the value goes anywhere; None: not asked
        self.on_read: Callable[[Shadow, int, str, int], None] | None = None

    # -- shadows ------------------------------------------------------------------------------

    def entry(self, t: torch.Tensor) -> Shadow | None:
        return self.shadows.get(t.untyped_storage().data_ptr()) if self.shadows else None

    def shadow(self, t: torch.Tensor) -> torch.Tensor | None:
        """``t``'s undefined elements (None: all defined). A layout the shadow cannot follow counts
        as undefined as a whole if its storage holds one undefined element."""
        e = self.entry(t)
        if e is None:
            return None
        sh = e.view(t)
        if sh is None:
            return torch.full(tuple(t.shape), e.count > 0, dtype=torch.bool)
        return sh

    def undefined(self, t: Any) -> bool:
        if not isinstance(t, torch.Tensor) or not self.shadows:
            return False
        sh = self.shadow(t)
        return sh is not None and bool(sh.any())

    def create(self, t: torch.Tensor, line: int, name: str) -> None:
        """``tensor.create`` without ``init_value``: every element undefined."""
        if not t.numel():
            return
        e = self._new(t, line, name, None, [])
        if e is not None:
            self.assign(t, e, torch.ones((), dtype=torch.bool))

    def _new(
        self, t: torch.Tensor, line: int, name: str, first: tuple[int, str] | None, path: list[int], derived: Shadow | None = None
    ) -> Shadow | None:
        """The shadow of ``t``'s storage (made if it has none; ``derived``: the shadow it is made
        from, whose inflows it keeps)."""
        key = t.untyped_storage().data_ptr()
        e = self.shadows.get(key)
        if e is None:
            if len(self.shadows) >= _MAX_SHADOWS:
                return None
            base = (
                t
                if t.storage_offset() == 0 and t.is_contiguous()
                else t.as_strided((t.untyped_storage().nbytes() // max(1, t.element_size()),), (1,), 0)
            )
            e = self.shadows[key] = Shadow(base, line, name, first, path)
            if derived is not None:
                e.inflows = list(derived.inflows)
            if not self.installed and self._install is not None:
                self.installed = True
                self._install()
        return e

    def assign(self, t: torch.Tensor, e: Shadow, value: torch.Tensor) -> None:
        """The shadow of ``t`` (a view of ``e``'s storage) becomes ``value`` (broadcast)."""
        sh = e.view(t)
        if sh is None:
            if bool(value.any()):
                e.flat.fill_(True)
                e.count = e.flat.numel()
            return
        before = int(sh.sum())
        if value.dim() == 0:  # all of it defined (a write) or undefined (a create): no second count
            whole = bool(value)
            sh.fill_(whole)
            after = sh.numel() if whole else 0
        else:
            try:
                sh.copy_(value.broadcast_to(sh.shape) if value.shape != sh.shape else value)
            except RuntimeError:  # overlapping strides (a broadcast view): conservatively all of it
                sh.fill_(bool(value.any()))
            after = int(sh.sum())
        e.count += after - before
        if e.count <= 0:
            self.shadows.pop(t.untyped_storage().data_ptr(), None)

    def adopt(self, t: torch.Tensor, src: Shadow, sh: torch.Tensor, line: int | None = None) -> None:
        """``t``, a fresh copy made from ``src``'s buffer (a pipe's clone, a lane's part), holds
        undefined elements where ``sh`` is set: its own shadow, with ``src``'s origin and path
        (``line`` on it: the caller's line when None)."""
        line = self.caller_line() if line is None else line
        e = self._new(t, src.line, src.name, src.first_read, _extend(src.path, line), src)
        if e is not None:
            if e is not src and e.line != src.line:
                self.inflow(e, src)
            self.assign(t, e, sh)

    def carry(self, make: Callable[..., Any], sources: Sequence[torch.Tensor], made: Sequence[torch.Tensor]) -> None:
        """``made`` (fresh tensors) were made from ``sources`` by ``make`` (a pipe's clone, a lane's part,
        a merged tile): their undefined elements are ``make`` run on the sources' shadows, as bytes
        with the sources' valid regions."""
        shadows = [self.shadow(t) for t in sources]
        undefined = [t for t, sh in zip(sources, shadows, strict=True) if sh is not None and bool(sh.any())]
        if not undefined:
            return
        first = self.entry(undefined[0])
        as_bytes = [
            with_valid((sh if sh is not None else torch.zeros(tuple(t.shape), dtype=torch.bool)).to(torch.uint8), get_valid(t))
            for t, sh in zip(sources, shadows, strict=True)
        ]
        saved = self.suspend()  # moving the shadow is no access
        try:
            out = make(*as_bytes)
        finally:
            self.resume(saved)
        for m, sh in zip(made, out if isinstance(out, tuple | list) else (out,), strict=True):
            if first is not None and tuple(sh.shape) == tuple(m.shape) and bool(sh.any()):
                self.adopt(m, first, sh.to(torch.bool))

    def clear(self, t: torch.Tensor) -> None:
        """``t``'s elements were written with defined values."""
        e = self.entry(t)
        if e is not None:
            self.assign(t, e, torch.zeros((), dtype=torch.bool))

    def moved(self, dst: torch.Tensor, src: torch.Tensor, mask: torch.Tensor | None = None, accumulate: bool = False) -> None:
        """``dst`` (a window) was written from ``src`` (same shape), only where ``mask``; with
        ``accumulate`` (an atomic add) the old value takes part."""
        if not self.shadows:
            return
        s_src = self.shadow(src)
        e_dst = self.entry(dst)
        if e_dst is None and (s_src is None or not bool(s_src.any())):
            return
        e_src = self.entry(src)
        if s_src is None:
            s_src = torch.zeros((), dtype=torch.bool)
        old = self.shadow(dst)
        new = s_src.broadcast_to(tuple(dst.shape)) if tuple(s_src.shape) != tuple(dst.shape) else s_src
        if old is not None and accumulate:
            new = new | old
        elif old is not None and mask is not None:
            new = torch.where(mask, new, old)
        if e_dst is None:
            line = self.caller_line()
            assert e_src is not None
            e_dst = self._new(dst, e_src.line, e_src.name, e_src.first_read or (line or 0, "read"), _extend(e_src.path, line), e_src)
            if e_dst is None:
                return
        else:
            inflow = e_src is not None and e_src.line != e_dst.line and bool(s_src.any())
            if inflow and e_dst.own is None:
                e_dst.own = e_dst.flat.clone()
            if e_dst.own is not None and not accumulate:
                _overwrite_own(e_dst, dst, mask)
            if inflow:
                assert e_src is not None
                self.inflow(e_dst, e_src)
            elif e_src is not None and e_src is not e_dst and bool(s_src.any()) and e_src.path[: len(e_dst.path)] == e_dst.path:
                # the buffer's own values back into it, through more lines (a read-modify-write of
                # its windows): the path runs on through them, as it would had the write come first
                e_dst.path = _extend(e_src.path, self.caller_line())
        self.assign(dst, e_dst, new.clone())
        if e_dst.own is not None and e_dst.count > 0 and not bool((e_dst.own & e_dst.flat).any()):
            self._reorigin(e_dst)

    def _reorigin(self, e: Shadow) -> None:
        """Every undefined element ``e``'s own origin left was overwritten with another buffer's
        undefined values: the buffer now holds theirs, not its own. The latest of them becomes its
        origin (the others stay inflows), so a finding names the buffer whose values reach the
        output, not the one that only passed them on (qwen3's post-norm scratch, written whole
        from the residual before anything reads it)."""
        src, at = e.inflows.pop()
        e.line, e.name, e.first_read = src.line, src.name, src.first_read
        e.path = _extend(src.path, at or None)
        e.inflows = [*e.inflows, *((o, a) for o, a in src.inflows if o.line != e.line and all(o.line != x.line for x, _ in e.inflows))]
        e.own = None

    def inflow(self, e: Shadow, src: Shadow) -> None:
        """Undefined values of ``src``'s origin were written into ``e``'s buffer (kept: a few, once each)."""
        if len(e.inflows) < 4 and all(o.line != src.line for o, _ in e.inflows):
            e.inflows.append((src, self.caller_line() or 0))

    # -- kernels ------------------------------------------------------------------------------

    def on_first_shadow(self, install: Callable[[], None]) -> None:
        """``install`` wraps the run's kernels (called once, when the first shadow appears)."""
        self._install = install
        if self.shadows and not self.installed:
            self.installed = True
            install()

    def wrap(self, op: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        spec = lookup(op)
        rule = spec.result if spec is not None else None
        if rule == "store" and op not in _WRITE_REGION:
            return self._wrap_store(fn)
        if rule in ("store", "none", "ptr", "create") or op in ("read", "write", "tensor.read", "tensor.write", "tile.read", "tile.write"):
            return fn  # in place (write_region / access follow them) or nothing to carry

        def wrapped(*args: Any, **kw: Any) -> Any:
            if not self.shadows or self.paused:
                return fn(*args, **kw)
            und: list[tuple[torch.Tensor, Shadow, torch.Tensor]] = []
            for a in _tensors(args, kw):
                e = self.shadows.get(a.untyped_storage().data_ptr())
                if e is not None:
                    sh = self.shadow(a)
                    if sh is not None and bool(sh.any()):
                        und.append((a, e, sh))
            out = fn(*args, **kw)
            if und:
                self._carry(op, rule, fn, args, kw, out, und)
            return out

        wrapped.__wrapped__ = fn  # type: ignore[attr-defined]
        return wrapped

    def _wrap_store(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """An in-place writer other than a window store (``tile.mscatter``: data-dependent elements):
        the kernel itself runs on the shadows, so the destination's shadow takes the source's where
        the kernel writes and keeps its own elsewhere."""

        def wrapped(*args: Any, **kw: Any) -> Any:
            if not self.shadows or self.paused:
                return fn(*args, **kw)
            before = {i: self.shadow(a) for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
            out = fn(*args, **kw)
            if not isinstance(out, torch.Tensor):
                return out
            ptr = out.untyped_storage().data_ptr()
            di = next((i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.untyped_storage().data_ptr() == ptr), None)
            e = self.shadows.get(ptr)
            si = 0 if di != 0 else 1
            src = args[si] if si < len(args) and isinstance(args[si], torch.Tensor) else None
            s_src = before.get(si) if src is not None else None
            if di is None or (e is None and (s_src is None or not bool(s_src.any()))):
                return out
            dest = args[di]
            s_dst = before.get(di)
            sub = list(args)
            sub[di] = (s_dst if s_dst is not None else torch.zeros(tuple(dest.shape), dtype=torch.bool)).to(torch.uint8)
            if src is not None:
                sub[si] = (s_src if s_src is not None else torch.zeros(tuple(src.shape), dtype=torch.bool)).to(torch.uint8)
            saved = self.suspend()
            try:
                moved: Any = fn(*sub, **kw)
            except Exception:  # the kernel does not take bytes: what it wrote cannot be told; say defined
                moved = None
            finally:
                self.resume(saved)
            if isinstance(moved, torch.Tensor) and tuple(moved.shape) == tuple(dest.shape):
                new = moved.to(torch.bool)
            else:
                new = torch.zeros(tuple(dest.shape), dtype=torch.bool)
            if e is None:
                if not bool(new.any()):
                    return out
                line = self.caller_line()
                first = self.entry(src) if src is not None else None
                if first is None:
                    return out
                e = self._new(dest, first.line, first.name, first.first_read or (line or 0, "read"), _extend(first.path, line), first)
                if e is None:
                    return out
            self.assign(dest, e, new)
            return out

        return wrapped

    def _carry(
        self,
        op: str,
        rule: str | None,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kw: dict[str, Any],
        out: Any,
        und: list[tuple[torch.Tensor, Shadow, torch.Tensor]],
    ) -> None:
        inputs = {a.untyped_storage().data_ptr() for a in _tensors(args, kw)}
        line = self.caller_line()
        src = und[0][1]
        for _a, seen, sh_read in {id(x[1]): x for x in und}.values():
            self._first_read(seen, line, op, sh_read)
        for r in _results(out):
            if r.untyped_storage().data_ptr() in inputs:
                continue  # a view of an operand (or the operand itself): its shadow is already there
            sh = self._rule(op, rule, fn, args, kw, r, und)
            if sh is None or not bool(sh.any()):
                continue
            made = self._new(r, src.line, src.name, src.first_read, _extend(src.path, line), src)
            if made is not None:
                self.assign(r, made, sh)

    def _first_read(self, e: Shadow, line: int | None, op: str, sh: torch.Tensor) -> None:
        if e.first_read is None:
            e.first_read = (line or 0, op)
            if self.on_read is not None:
                self.on_read(e, line or 0, op, int(sh.sum()))

    def read(self, t: torch.Tensor, op: str) -> None:
        """``op`` read ``t`` outside the wrapped kernels (a batched path's windows): its buffer's first
        read, if ``t`` holds an undefined element, as the kernel would have recorded it."""
        e = self.entry(t)
        if e is not None:
            sh = self.shadow(t)
            if sh is not None and bool(sh.any()):
                self._first_read(e, self.caller_line(), op, sh)

    def _rule(
        self,
        op: str,
        rule: str | None,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kw: dict[str, Any],
        r: torch.Tensor,
        und: list[tuple[torch.Tensor, Shadow, torch.Tensor]],
    ) -> torch.Tensor | None:
        shape = tuple(r.shape)
        by_arg = {id(a): sh for a, _e, sh in und}
        try:
            if rule in ("load", "slice", "reshape") and args and isinstance(args[0], torch.Tensor):
                return self._moved_by_kernel(fn, args, kw, by_arg.get(id(args[0])), shape)
            if rule in ("matmul", "matmul_acc") and len(args) >= 2:
                lo = 1 if rule == "matmul_acc" else 0
                a, b = args[lo], args[lo + 1] if len(args) > lo + 1 else None
                if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
                    sh = _matmul(a, by_arg.get(id(a)), b, by_arg.get(id(b)), kw, shape)
                    for x in args[:lo] + args[lo + 2 :]:
                        if isinstance(x, torch.Tensor) and id(x) in by_arg:
                            sh = sh | fit(by_arg[id(x)], shape)
                    return sh
        except (RuntimeError, ValueError, TypeError, IndexError):
            pass
        sh = torch.zeros(shape, dtype=torch.bool)
        for _a, _e, s in und:
            sh = sh | fit(s, shape)
        return sh

    def _moved_by_kernel(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kw: dict[str, Any], sh: torch.Tensor | None, shape: tuple[int, ...]
    ) -> torch.Tensor | None:
        """The movement kernel run on the shadow (as bytes): the window moves like the data."""
        if sh is None:
            return None
        src = sh.to(torch.uint8)
        saved = self.suspend()  # the kernel run on the shadow is no access the sanitizer should see
        try:
            moved = fn(src, *args[1:], **kw)
        finally:
            self.resume(saved)
        if not isinstance(moved, torch.Tensor) or moved.numel() != int(torch.Size(shape).numel()):
            return torch.full(shape, bool(sh.any()), dtype=torch.bool)
        return moved.reshape(shape).to(torch.bool)

    # -- where an undefined value matters -----------------------------------------------------

    def sink(self, t: Any, where: str, line: int | None = None) -> bool:
        """``t`` reaches ``where`` (an output, a returned value, a scalar read back): a finding if
        any of its elements is undefined."""
        if not isinstance(t, torch.Tensor) or not self.shadows:
            return False
        e = self.entry(t)
        if e is None:
            return False
        sh = self.shadow(t)
        if sh is None or not bool(sh.any()):
            return False
        self.report(e, where, sh, line)
        return True


def _overwrite_own(e: Shadow, dst: torch.Tensor, mask: torch.Tensor | None) -> None:
    """``dst``'s window of ``e`` was written: its elements (where ``mask``) hold nothing of ``e``'s own."""
    own = e.own
    assert own is not None
    try:
        win = own.as_strided(tuple(dst.shape), tuple(dst.stride()), int(dst.storage_offset()))
    except RuntimeError:
        return  # a layout the shadow cannot follow: its own elements are kept (no re-origin)
    if dst.element_size() != e.esize:
        return
    if mask is None:
        win.fill_(False)
    else:
        win.masked_fill_(mask.broadcast_to(win.shape), False)


def _extend(path: list[int], line: int | None) -> list[int]:
    if line is None or line in path or len(path) >= _MAX_PATH:
        return list(path)
    return [*path, line]
