"""How the Variables view shows a stop: the Locals of a frame (tiles with their previous pass's
value and |Δ|, rows, elements), the Pipes of its group and its Memory (placements, findings);
``evaluate`` of ``name`` / ``name[i, j]`` (read with ``ast``, never evaluated). Each expandable
value gets a reference that lives until the run goes on."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import torch

from ..exec.frames import memory_frame
from .session import Session
from .state import FrameInfo
from .values import describe, element, is_tile, max_abs_delta, numeric

__all__ = ["Variables", "parse_expr"]

_MAX_CHILDREN = 1000


class Variables:
    """Variable references of the current stop (they end when the run goes on)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.items: dict[int, Callable[[], list[dict[str, Any]]]] = {}

    def add(self, fn: Callable[[], list[dict[str, Any]]]) -> int:
        ref = len(self.items) + 1
        self.items[ref] = fn
        return ref

    def clear(self) -> None:
        self.items.clear()

    def scopes(self, fi: FrameInfo) -> list[dict[str, Any]]:
        return [
            {"name": "Locals", "presentationHint": "locals", "variablesReference": self.add(lambda: self.locals(fi)), "expensive": False},
            {"name": "Pipes", "variablesReference": self.add(lambda: self.pipes(fi)), "expensive": False},
            {"name": "Memory", "variablesReference": self.add(lambda: self.memory(fi)), "expensive": False},
        ]

    def lookup(self, fi: FrameInfo, expr: str) -> tuple[Any, Any]:
        """The value of ``name`` / ``name[i, j]`` in the frame, and its previous pass's (or None)."""
        name, index = parse_expr(expr)
        loc = self.session.frame_locals(fi)
        if name not in loc:
            raise ValueError(f"'{name}' is not defined in {fi.name.split(' · ')[0]} at line {fi.line}")
        v = loc[name]
        prev = self.session.previous_of(fi).get(name)
        if index:
            if not isinstance(v, torch.Tensor):
                raise ValueError(f"'{name}' is not a tile")
            try:
                v = v[index]
                prev = prev[index] if isinstance(prev, torch.Tensor) else None
            except (IndexError, TypeError) as exc:
                raise ValueError(f"{expr}: {exc}") from exc
        return v, prev

    def error_map(self, expr: str, v: Any, prev: Any) -> tuple[dict[str, Any], str]:
        """A tile as an error map (the VS Code extension's picture): against the previous pass's
        value of the same name when known, else against itself (nothing over tolerance)."""
        if not isinstance(v, torch.Tensor) or v.dim() == 0:
            raise ValueError(f"'{expr}' is not a tile")
        from ..validate.errormap import error_map

        cur = numeric(v)
        old = numeric(prev) if isinstance(prev, torch.Tensor) else None
        against = "the previous pass"
        if old is None or tuple(old.shape) != tuple(cur.shape):
            old, against = cur, "itself (no previous value)"
        s = self.session.prep.settings
        return error_map(expr, cur.detach().to(torch.float32), old.detach().to(torch.float32), rtol=s.rtol, atol=s.atol), against

    def locals(self, fi: FrameInfo) -> list[dict[str, Any]]:
        loc = self.session.frame_locals(fi)
        first = list(fi.assigned)
        names = first + [k for k in loc if k not in fi.assigned]
        previous = self.session.previous_of(fi)
        return [{**self.var(k, loc[k], previous.get(k)), "evaluateName": k} for k in names]

    def var(self, name: str, v: Any, prev: Any = None) -> dict[str, Any]:
        delta = max_abs_delta(v, prev) if prev is not None else None
        text, typ = describe(v, delta)
        ref = 0
        extra: dict[str, Any] = {}
        if is_tile(v):
            ref = self.add(lambda: self._tile_children(v, prev, delta))
            extra["indexedVariables"] = min(int(numeric(v).shape[0]), _MAX_CHILDREN) if v.dim() else 0
            if prev is not None:
                extra["namedVariables"] = 2
        elif isinstance(v, tuple | list) and v:
            ref = self.add(lambda: [self.var(f"[{i}]", x) for i, x in enumerate(v[:_MAX_CHILDREN])])
        return {"name": name, "value": text, "type": typ, "variablesReference": ref, **extra}

    def _tile_children(self, v: torch.Tensor, prev: Any, delta: float | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if prev is not None:
            out.append(self.var("previous pass", prev))
            out.append({"name": "|Δ|", "value": "-" if delta is None else f"{delta:.6g}", "variablesReference": 0})
        val = numeric(v)
        if val.dim() == 0:
            out.append({"name": "value", "value": element(val), "variablesReference": 0})
            return out
        n = int(val.shape[0])
        for i in range(min(n, _MAX_CHILDREN)):
            row = val[i]
            if row.dim() == 0:
                out.append({"name": f"[{i}]", "value": element(row), "variablesReference": 0})
            else:
                out.append(self._row(f"[{i}]", row))
        if n > _MAX_CHILDREN:
            out.append({"name": "…", "value": f"{n - _MAX_CHILDREN} more rows (evaluate name[i])", "variablesReference": 0})
        return out

    def _row(self, name: str, row: torch.Tensor) -> dict[str, Any]:
        flat = row.reshape(-1) if row.dim() > 1 else row
        preview = ", ".join(element(x) for x in flat[:8])
        more = ", …" if flat.numel() > 8 else ""
        ref = self.add(lambda: self._elements(row))
        return {"name": name, "value": f"[{preview}{more}]", "variablesReference": ref, "indexedVariables": int(row.shape[0])}

    def _elements(self, row: torch.Tensor) -> list[dict[str, Any]]:
        out = []
        for j in range(min(int(row.shape[0]), _MAX_CHILDREN)):
            x = row[j]
            out.append({"name": f"[{j}]", "value": element(x), "variablesReference": 0} if x.dim() == 0 else self._row(f"[{j}]", x))
        return out

    def pipes(self, fi: FrameInfo) -> list[dict[str, Any]]:
        rt = fi.rt
        if rt is None:
            return [{"name": "pipes", "value": "none: this frame runs outside a cross-core group", "variablesReference": 0}]
        out: list[dict[str, Any]] = []
        for key, q in sorted(rt.fifos.items(), key=lambda kv: repr(kv[0])):
            direction, split, lane, pid = key
            name = f"{direction}[split={split}, lane={'*' if lane is None else lane}, id={pid}]"
            tiles = list(q)
            ref = self.add(self._slots(tiles)) if tiles else 0
            out.append(
                {
                    "name": name,
                    "value": f"{len(tiles)} tile{'s' * (len(tiles) != 1)} queued",
                    "variablesReference": ref,
                    "indexedVariables": len(tiles),
                }
            )
        for slot, waits in rt.waiting().items():
            out.append({"name": f"core slot {slot}", "value": f"waiting in {waits}", "variablesReference": 0})
        if not out:
            out.append({"name": "pipes", "value": "empty (nothing pushed yet)", "variablesReference": 0})
        return out

    def _slots(self, tiles: list[Any]) -> Callable[[], list[dict[str, Any]]]:
        return lambda: [self.var(f"slot {i}", t) for i, t in enumerate(tiles)]

    def memory(self, fi: FrameInfo) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        m = memory_frame(fi.frame)
        plan = getattr(m, "plan", None)
        if plan is None:
            out.append({"name": "placements", "value": "none for this frame (no tile placed in an arena)", "variablesReference": 0})
        else:
            spaces: dict[str, list[Any]] = {}
            for s in plan.sites:
                if s.kind in ("w", "p"):
                    spaces.setdefault(s.space, []).append(s)
            for space, sites in sorted(spaces.items()):
                size = plan.sizes.get(space, 0)

                def rows(sites: list[Any] = sites) -> list[dict[str, Any]]:
                    r = []
                    for s in sorted(sites, key=lambda s: (s.start, s.line)):
                        what = f"[{s.start}, {s.start + s.nbytes}) {s.dtype} {list(s.shape)} line {s.line}"
                        if s.kind == "p":
                            what = f"ring of {s.slot_num} × {s.slot_size} B from {s.start}, line {s.line}"
                        r.append({"name": s.name, "value": what, "variablesReference": 0})
                    return r

                out.append(
                    {
                        "name": f"{space} ({getattr(m, 'core', '')})",
                        "value": f"{len(sites)} placements, {size} B used",
                        "variablesReference": self.add(rows),
                    }
                )
        st = self.session.stop
        if st is not None and st.findings:
            fs = list(st.findings)
            out.append(
                {
                    "name": "findings",
                    "value": f"{len(fs)} memory finding{'s' * (len(fs) != 1)}",
                    "variablesReference": self.add(
                        lambda: [{"name": f"line {f.line}", "value": f.message, "variablesReference": 0} for f in fs]
                    ),
                }
            )
        return out


def parse_expr(expr: str) -> tuple[str, tuple[Any, ...]]:
    """``name`` or ``name[i, j:k]``: parsed with ast, never evaluated."""
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"cannot read '{expr}': write a name, or name[i, j]") from exc
    if isinstance(node, ast.Name):
        return node.id, ()
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        idx: list[Any] = []
        for p in parts:
            idx.append(_index(p))
        return node.value.id, tuple(idx)
    raise ValueError(f"cannot evaluate '{expr}': write a name, or name[i, j]")


def _index(p: ast.expr) -> Any:
    if isinstance(p, ast.Constant) and isinstance(p.value, int):
        return p.value
    if (
        isinstance(p, ast.UnaryOp)
        and isinstance(p.op, ast.USub)
        and isinstance(p.operand, ast.Constant)
        and isinstance(p.operand.value, int)
    ):
        return -p.operand.value
    if isinstance(p, ast.Slice):
        return slice(*(None if x is None else _index(x) for x in (p.lower, p.upper, p.step)))
    raise ValueError("an index is an integer or a slice")
