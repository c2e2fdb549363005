"""Where in the tensor: |Δ| per element of an output, the tiles that wrote it, and which store did.

A dump is run once more with every write into an entry output recorded (``tile.store``,
``tile.assemble``, ``tensor.assemble``, ``tensor.write``, ``tensor.scatter_update``): the IR
line of the statement, the AIV lane / role / SPMD block it ran on, and the box it covered.
The generated script's write kernels are wrapped in the run's own namespace only (nothing
global changes); the box comes from the tile's shape and valid region at the offsets, clamped
at the tensor edge, like the kernel (one element for ``tensor.write``; each run of consecutive
indices for ``tensor.scatter_update``, a box over the other dims).

The map is the output's 2-D view (leading dims merged; a 1-D tensor is one row). Big
tensors are binned: each cell covers ``bin`` elements and carries its worst element (index,
both values, |Δ|, the store that wrote it) and whether any element in it is over the
tolerance (``|a - e| > atol + rtol * |e|``, ``allclose``'s test). The data is JSON with the
cells as little-endian typed arrays in base64 (a [512, 4096] map is a few hundred KiB, not
megabytes of number text; :func:`decode_cells` reads them back), drawn by the report and the
VS Code webview, and offered to any LSP client by the ``pypto-lsp/errorMap`` request.
"""

from __future__ import annotations

import base64
import ctypes
import math
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from ..exec import context
from ..exec.codegen import GeneratedCode
from ..exec.observe import Observer, RunInfo
from ..exec.values import valid_box
from .engine import compile_text, over_tolerance, run
from .report import json_number

# cells of a map at most (rows x cols), about the pixels of the drawn map (at most 1000 px wide):
# a [512, 4096] output becomes 256 x 512 cells of 2 x 8; a smaller one is not binned
MAX_ROWS = 256
MAX_COLS = 512
# tiles listed per output at most (a long loop of small stores is summarised by its stores)
MAX_TILES = 4096

# write ops of a region recorded, and which argument is (tile, offsets, target)
_WRITERS: dict[str, tuple[int, int, int]] = {"tile.store": (0, 1, 2), "tile.assemble": (1, 2, 0), "tensor.assemble": (1, 2, 0)}
# writes of one element (tensor, indices, value) and row scatters (input, index, src) {dim}
_ELEMENT_WRITERS = frozenset({"tensor.write"})
_SCATTERS = frozenset({"tensor.scatter_update"})


@dataclass(slots=True)
class Tile:
    """One executed write into an output: its box in the output's 2-D view (half-open)."""

    store: int  # index into Recorded.stores
    r0: int
    c0: int
    r1: int
    c1: int
    lane: int
    lanes: int
    role: str | None
    block: int

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "r0": self.r0,
            "c0": self.c0,
            "r1": self.r1,
            "c1": self.c1,
            "lane": self.lane,
            "lanes": self.lanes,
            "role": self.role,
            "block": self.block,
        }


@dataclass(slots=True)
class Store:
    """A write statement of the IR (one per line that wrote the output)."""

    line: int
    end_line: int
    op: str
    calls: int = 0

    def to_json(self, index: int) -> dict[str, Any]:
        return {"id": index, "line": self.line, "end_line": self.end_line, "op": self.op, "calls": self.calls}


@dataclass
class Recorded:
    """A run with its writes recorded: the outputs as computed, who wrote where."""

    actual: dict[str, torch.Tensor] = field(default_factory=dict)
    stores: dict[str, list[Store]] = field(default_factory=dict)
    tiles: dict[str, list[Tile]] = field(default_factory=dict)
    owner: dict[str, torch.Tensor] = field(default_factory=dict)  # per element: store index, -1 never written
    tiles_dropped: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0


def view2d_shape(shape: tuple[int, ...] | list[int]) -> tuple[int, int]:
    """The 2-D view of a shape: leading dims merged (``[a, b, c]`` -> ``[a * b, c]``)."""
    if len(shape) == 0:
        return (1, 1)
    if len(shape) == 1:
        return (1, int(shape[0]))
    return (math.prod(int(s) for s in shape[:-1]), int(shape[-1]))


class _Recorder(Observer):
    """Records, as the run goes, which store wrote each element of the outputs ``keys`` (None: every
    entry tensor): an observer wrapping the kernels of the ops that write."""

    def __init__(self, gen: GeneratedCode, keys: list[str] | None) -> None:
        self.gen = gen
        self.keys = keys
        self.outputs: dict[str, torch.Tensor] = {}
        self.rec = Recorded()
        self.by_ptr: dict[int, str] = {}
        self.index: dict[str, torch.Tensor] = {}
        self.store_ids: dict[tuple[str, int, str], int] = {}
        self.tile_ids: dict[str, dict[tuple[Any, ...], int]] = {}

    def started(self, ns: dict[str, Any], run: RunInfo) -> None:
        keys = self.keys if self.keys is not None else list(run.tensors)
        self.outputs = {k: run.tensors[k] for k in keys if k in run.tensors}
        for k, t in self.outputs.items():
            self.by_ptr[t.untyped_storage().data_ptr()] = k
            self.rec.stores[k] = []
            self.rec.tiles[k] = []
            self.rec.tiles_dropped[k] = 0
            self.rec.owner[k] = torch.full((t.numel(),), -1, dtype=torch.int32)
            self.tile_ids[k] = {}

    def kernel(self, op: str, fn: Any, run: RunInfo) -> Any:
        # by op name: tile.assemble and tensor.assemble share one kernel
        return self.wrap(op, fn) if op in _WRITERS or op in _ELEMENT_WRITERS or op in _SCATTERS else None

    def wrap(self, op: str, kernel: Any) -> Any:
        def recorded(*args: Any, **kw: Any) -> Any:
            out = kernel(*args, **kw)
            try:
                line = sys._getframe(1).f_lineno
                if op in _ELEMENT_WRITERS:
                    self._record_element(op, _arg(args, kw, 0, "tensor"), _arg(args, kw, 1, "indices"), line)
                elif op in _SCATTERS:
                    dim = kw.get("dim", args[3] if len(args) > 3 else None)
                    self._record_scatter(op, _arg(args, kw, 0, "input"), _arg(args, kw, 1, "index"), dim, line)
                else:
                    ti, oi, di = _WRITERS[op]
                    names = ("tile", "offsets", "output_tensor") if op == "tile.store" else ("source", "offset", "target")
                    shapes = args[3] if op == "tile.store" and len(args) > 3 else kw.get("shapes")
                    src, offs, dst = _arg(args, kw, ti, names[0]), _arg(args, kw, oi, names[1]), _arg(args, kw, di, names[2])
                    self._record(op, src, offs, dst, shapes, line)
            except Exception:  # recording never changes the run: a write it cannot follow is left out
                pass
            return out

        return recorded

    def _target(self, dst: Any, gen_line: int) -> tuple[str, Any, torch.Tensor] | None:
        """The output ``dst`` writes into, the IR span of the write, and ``dst``'s element indices in that output."""
        if not isinstance(dst, torch.Tensor):
            return None
        key = self.by_ptr.get(dst.untyped_storage().data_ptr())
        if key is None:
            return None
        span = self.gen.ir_span(gen_line)
        if span is None:
            return None
        base = self.outputs[key]
        idx = self.index.get(key)
        if idx is None:
            idx = self.index[key] = torch.arange(base.numel(), dtype=torch.int64)
        return key, span, idx.as_strided(tuple(dst.shape), dst.stride(), dst.storage_offset() - base.storage_offset())

    def _record(self, op: str, src: Any, offs: Any, dst: Any, shapes: Any, gen_line: int) -> None:
        if not isinstance(src, torch.Tensor):
            return
        o = [int(x) for x in (offs.tolist() if isinstance(offs, torch.Tensor) else offs)]
        full = list(src.shape)
        valid = list(valid_box(src))
        if op == "tile.store" and shapes is not None:
            shp = [int(x) for x in shapes]
            if shp and len(shp) != len(full) and math.prod(shp) == src.numel():
                full, valid = shp, shp  # FlattenTileNdTo2D's N-D partition (a partial valid box is kept coarse)
        # the source's rank against the offsets', as the kernel does
        if len(o) > len(full):
            full = [1] * (len(o) - len(full)) + full
            valid = [1] * (len(o) - len(valid)) + valid
        elif len(o) < len(full):
            full, valid = full[len(full) - len(o) :], valid[len(valid) - len(o) :]
        if not isinstance(dst, torch.Tensor) or len(o) != dst.dim():
            return
        win = []
        for oo, n, size in zip(o, valid, dst.shape, strict=True):
            start = max(oo, 0)
            count = max(0, min(oo + n, size) - start)
            if count == 0:
                return
            win.append(slice(start, start + count))
        t = self._target(dst, gen_line)
        if t is not None:
            self._commit(op, t[0], t[1], [t[2][tuple(win)]])

    def _record_element(self, op: str, dst: Any, indices: Any, gen_line: int) -> None:
        """``tensor.write``: one element, its indices as the kernel reads them (leading zeros when fewer)."""
        if not isinstance(dst, torch.Tensor):
            return
        ix = [int(x) for x in (indices.tolist() if isinstance(indices, torch.Tensor) else indices)]
        ix = [0] * (dst.dim() - len(ix)) + ix
        if len(ix) != dst.dim():
            return
        t = self._target(dst, gen_line)
        if t is not None:
            self._commit(op, t[0], t[1], [t[2][tuple(slice(i, i + 1) if i != -1 else slice(-1, None) for i in ix)]])

    def _record_scatter(self, op: str, dst: Any, index: Any, dim: Any, gen_line: int) -> None:
        """``tensor.scatter_update``: the rows ``index`` of ``dst`` read as a table of rows as wide as
        its last dimension (a 4-D input's rows are ``blocks * block_size``, as the kernel reads
        them); a box per run of consecutive rows. ``dim`` is -2, the only one PyPTO defines."""
        del dim
        if not isinstance(dst, torch.Tensor) or not isinstance(index, torch.Tensor) or dst.dim() < 2 or dst.shape[-1] == 0:
            return
        t = self._target(dst, gen_line)
        if t is None:
            return
        table = t[2].reshape(-1, dst.shape[-1])
        rows = sorted({int(i) for i in index.reshape(-1).tolist() if 0 <= int(i) < table.shape[0]})
        if not rows:
            return
        runs: list[torch.Tensor] = []
        first = prev = rows[0]
        for r in [*rows[1:], None]:
            if r is not None and r == prev + 1:
                prev = r
                continue
            runs.append(table.narrow(0, first, prev - first + 1))
            if r is not None:
                first = prev = r
        self._commit(op, t[0], t[1], runs)

    def _commit(self, op: str, key: str, span: Any, flats: list[torch.Tensor]) -> None:
        """One executed write: ``flats`` are the boxes it covered, as element indices of output ``key``."""
        flats = [f for f in flats if f.numel() > 0]
        if not flats:
            return
        base = self.outputs[key]
        ctx = context.current()
        skey = (key, span.line, op)
        sid = self.store_ids.get(skey)
        stores = self.rec.stores[key]
        if sid is None:
            sid = self.store_ids[skey] = len(stores)
            stores.append(Store(span.line, span.end_line, op))
        stores[sid].calls += 1
        cols = view2d_shape(tuple(base.shape))[1]
        for flat in flats:
            self.rec.owner[key][flat.reshape(-1)] = sid
            lo, hi = int(flat.min()), int(flat.max())
            if flat.dim() >= 1 and flat.shape[-1] > 0 and flat.numel() > 1:
                first_col = flat.select(-1, 0).reshape(-1) % cols
                last_col = flat.select(-1, flat.shape[-1] - 1).reshape(-1) % cols
                c0, c1 = int(first_col.min()), int(last_col.max()) + 1
            else:
                c0, c1 = lo % cols, lo % cols + 1
            r0, r1 = lo // cols, hi // cols + 1
            tkey = (sid, r0, c0, r1, c1, ctx.role, ctx.lane, ctx.block_idx)
            if tkey in self.tile_ids[key]:
                continue
            if len(self.rec.tiles[key]) >= MAX_TILES:
                self.rec.tiles_dropped[key] += 1
                continue
            self.tile_ids[key][tkey] = len(self.rec.tiles[key])
            self.rec.tiles[key].append(Tile(sid, r0, c0, r1, c1, ctx.lane, ctx.lanes, ctx.role, ctx.block_idx))


def _arg(args: tuple[Any, ...], kw: dict[str, Any], i: int, name: str) -> Any:
    return args[i] if len(args) > i else kw.get(name)


def record_run(
    text: str,
    inputs: Mapping[str, torch.Tensor],
    outputs: list[str] | None = None,
    *,
    filename: str = "<dump>",
    entry: str | None = None,
    timeout: float | None = None,
    max_alloc: int | None = None,
) -> Recorded:
    """Run a dump once with its writes into ``outputs`` (default: every input key) recorded."""
    t0 = time.perf_counter()
    context.reset()
    # exact: every write is one kernel call from its own line (the recorder follows those calls;
    # a sweep, exec.sweep, writes all its tiles in one strided copy)
    comp = compile_text(text, filename, entry, exact=True)
    if comp.error is not None or comp.generated is None or comp.code is None or comp.program is None:
        rec = Recorded(error=comp.error.message if comp.error else "cannot compile")
        rec.seconds = time.perf_counter() - t0
        return rec
    recorder = _Recorder(comp.generated, outputs)
    out = run(comp, inputs, timeout=timeout, observers=[recorder], clone_inputs=True, max_alloc=max_alloc)
    rec = recorder.rec
    if isinstance(out.exception, TimeoutError):
        raise out.exception  # the run's thread is still going: the caller decides (the worker restarts)
    if out.error is not None and out.error.kind == "golden":
        rec = Recorded(error=out.error.message)
        rec.seconds = time.perf_counter() - t0
        return rec
    if out.exception is not None:
        rec.error = f"{type(out.exception).__name__}: {out.exception}"
    rec.actual = {k: out.tensors[k] for k in recorder.outputs}
    rec.seconds = time.perf_counter() - t0
    return rec


def _abs_diff(actual: torch.Tensor, expected: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Both sides in float64, |a - e|, and where that is NaN (one pass over |Δ| when nothing is)."""
    a = actual.detach().to(torch.float64)
    e = expected.detach().to(torch.float64)
    d = torch.sub(a, e).abs_()
    nan = torch.isnan(d)
    if bool(nan.any()):
        eq = a == e
        d.masked_fill_(eq, 0.0)  # equal infinities differ by 0, not NaN (as the comparison says)
        nan &= ~eq
    return a, e, d, nan


def error_map(
    name: str,
    actual: torch.Tensor,
    expected: torch.Tensor,
    *,
    rtol: float,
    atol: float,
    recorded: Recorded | None = None,
    max_rows: int = MAX_ROWS,
    max_cols: int = MAX_COLS,
) -> dict[str, Any]:
    """The error map of one output (see the module docstring for the fields)."""
    R, C = view2d_shape(tuple(actual.shape))
    a, e, d, nan = _abs_diff(actual.reshape(R, C), expected.reshape(R, C))
    has_nan = bool(nan.any())
    bad = over_tolerance(d, e, rtol, atol)  # the tolerance test (NaN and infinite differences over it)
    key = d
    if has_nan:
        # NaN sorts above everything: a NaN element is the one a cell shows
        key = torch.where(nan, torch.full((), math.inf, dtype=d.dtype), d)
    dmax = float(key.max()) if key.numel() else 0.0
    br = max(1, -(-R // max_rows))
    bc = max(1, -(-C // max_cols))
    if br == 1 and bc == 1:
        cell_max = key
        arg = torch.arange(R * C, dtype=torch.int64).reshape(R, C)
        cell_bad = bad
    else:
        pooled, idx = F.max_pool2d(key[None, None], (br, bc), stride=(br, bc), ceil_mode=True, return_indices=True)
        cell_max, arg = pooled[0, 0], idx[0, 0]
        cell_bad = F.max_pool2d(bad.to(torch.float32)[None, None], (br, bc), stride=(br, bc), ceil_mode=True)[0, 0] > 0
    nr, nc = cell_max.shape
    flat_arg = arg.reshape(-1)
    af, ef = a.reshape(-1)[flat_arg], e.reshape(-1)[flat_arg]
    owner = recorded.owner.get(name) if recorded is not None else None
    stores = recorded.stores.get(name, []) if recorded is not None else []
    tiles = recorded.tiles.get(name, []) if recorded is not None else []
    own = owner[flat_arg] if owner is not None and owner.numel() == R * C else torch.full_like(flat_arg, -1, dtype=torch.int32)
    lanes = _lane_halves(tiles)
    bad_count = int(torch.count_nonzero(bad))
    unwritten = int(torch.count_nonzero(owner == -1)) if owner is not None and stores else None
    return {
        "tensor": name,
        "shape": list(actual.shape),
        "dtype": str(actual.dtype).replace("torch.", ""),
        "view": [R, C],
        "bin": [br, bc],
        "grid": [nr, nc],
        "rtol": rtol,
        "atol": atol,
        "max_abs_diff": json_number(dmax),
        "bad_elements": bad_count,
        "elements": R * C,
        "unwritten_elements": unwritten,
        "passed": bad_count == 0,
        "cells": _encode_cells(
            flat_arg, af, ef, cell_bad.reshape(-1), own, exact=actual.dtype in _EXACT_IN_F32 and expected.dtype in _EXACT_IN_F32
        ),
        "stores": [s.to_json(i) for i, s in enumerate(stores)],
        "tiles": [t.to_json() for t in tiles],
        "tiles_dropped": recorded.tiles_dropped.get(name, 0) if recorded is not None else 0,
        "lanes": lanes,
    }


# element types whose every value a float32 holds exactly (else the values go as float64)
_EXACT_IN_F32 = frozenset({torch.float32, torch.float16, torch.bfloat16, torch.bool, torch.int8, torch.uint8, torch.int16})
_TYPED = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32, "int16": torch.int16, "uint8": torch.uint8}


def _b64(t: torch.Tensor, dtype: torch.dtype) -> str:
    """A 1-D tensor as little-endian bytes of ``dtype``, in base64."""
    assert sys.byteorder == "little"
    c = t.to(dtype).contiguous()
    return base64.b64encode(ctypes.string_at(c.data_ptr(), c.numel() * c.element_size())).decode("ascii")


def _encode_cells(k: torch.Tensor, a: torch.Tensor, e: torch.Tensor, bad: torch.Tensor, s: torch.Tensor, *, exact: bool) -> dict[str, Any]:
    """The cells as typed arrays (row-major over the grid): ``k`` the flat index of the worst element
    in the 2-D view, ``a``/``e`` its values (this pass / golden), ``bad`` any element over the
    tolerance, ``s`` the store that wrote the worst element (-1: none)."""
    val = "float32" if exact else "float64"
    sid = "int16" if s.numel() == 0 or int(s.max()) < 32767 else "int32"
    kt = "int32" if k.numel() == 0 or int(k.max()) < 2**31 else "float64"
    dtypes = {"k": kt, "a": val, "e": val, "bad": "uint8", "s": sid}
    cols = {"k": k, "a": a, "e": e, "bad": bad, "s": s}
    return {"count": int(k.numel()), "dtypes": dtypes, **{n: _b64(cols[n], _TYPED[t]) for n, t in dtypes.items()}}


def decode_cells(m: Mapping[str, Any]) -> dict[str, list[Any]]:
    """An error map's cells as plain lists, one entry per cell (row-major over ``grid``): ``r``, ``c``
    (the first row and column it covers), ``i``, ``j`` (its worst element), ``a``, ``e`` (that
    element's values), ``d`` (|a - e|: 0 where equal, None for NaN), ``bad`` (0/1), ``s`` (store, -1: none)."""
    cells = m["cells"]
    cols = {
        n: torch.frombuffer(bytearray(base64.b64decode(cells[n])), dtype=_TYPED[t]) if cells[n] else torch.zeros(0, dtype=_TYPED[t])
        for n, t in cells["dtypes"].items()
    }
    nr, nc = m["grid"]
    br, bc = m["bin"]
    C = m["view"][1]
    k = cols["k"].to(torch.int64)
    a, e = cols["a"].to(torch.float64), cols["e"].to(torch.float64)
    d = torch.where(a == e, torch.zeros((), dtype=torch.float64), (a - e).abs())
    return {
        "r": (torch.arange(nr, dtype=torch.int64).repeat_interleave(nc) * br).tolist(),
        "c": (torch.arange(nc, dtype=torch.int64).repeat(nr) * bc).tolist(),
        "i": (k // C).tolist(),
        "j": (k % C).tolist(),
        "a": [json_number(x) for x in a.tolist()],
        "e": [json_number(x) for x in e.tolist()],
        "d": [json_number(x) for x in d.tolist()],
        "bad": cols["bad"].tolist(),
        "s": cols["s"].tolist(),
    }


def _lane_halves(tiles: list[Tile]) -> list[dict[str, Any]]:
    """Where the writing function is split over AIV lanes: each lane's bounding box (per role)."""
    boxes: dict[tuple[str | None, int], list[int]] = {}
    lanes_of: dict[tuple[str | None, int], int] = {}
    for t in tiles:
        if t.lanes < 2:
            continue
        k = (t.role, t.lane)
        b = boxes.get(k)
        if b is None:
            boxes[k] = [t.r0, t.c0, t.r1, t.c1]
        else:
            b[0], b[1], b[2], b[3] = min(b[0], t.r0), min(b[1], t.c0), max(b[2], t.r1), max(b[3], t.c1)
        lanes_of[k] = t.lanes
    return [
        {"role": role, "lane": lane, "lanes": lanes_of[(role, lane)], "r0": b[0], "c0": b[1], "r1": b[2], "c1": b[3]}
        for (role, lane), b in sorted(boxes.items(), key=lambda kv: (kv[0][0] or "", kv[0][1]))
    ]


def error_maps(
    text: str,
    inputs: Mapping[str, torch.Tensor],
    expected: Mapping[str, torch.Tensor],
    *,
    filename: str = "<dump>",
    rtol: float,
    atol: float,
    entry: str | None = None,
    timeout: float | None = None,
    tensors: list[str] | None = None,
    only_failing: bool = False,
    max_alloc: int | None = None,
) -> dict[str, Any]:
    """Run ``text`` once with its writes recorded; the error map of each output in ``expected``
    (or of ``tensors``; with ``only_failing``, of those over the tolerance)."""
    t0 = time.perf_counter()
    names = [k for k in expected if tensors is None or k in tensors]
    rec = record_run(text, inputs, names, filename=filename, entry=entry, timeout=timeout, max_alloc=max_alloc)
    maps = []
    for k in names:
        act = rec.actual.get(k)
        if act is None or tuple(act.shape) != tuple(expected[k].shape):
            continue
        m = error_map(k, act, expected[k], rtol=rtol, atol=atol, recorded=rec)
        if only_failing and m["passed"]:
            continue
        m["file"] = filename
        maps.append(m)
    return {"file": filename, "error": rec.error, "maps": maps, "run_seconds": rec.seconds, "seconds": time.perf_counter() - t0}
