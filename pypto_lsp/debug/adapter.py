"""The Debug Adapter Protocol side: messages in and out (``Content-Length`` framed JSON over
stdio or a socket), each request answered from the :class:`~.session.Session`.

``pypto-lsp debug`` runs :func:`serve_stdio` (or :func:`serve_port` with ``--port N``).
"""

from __future__ import annotations

import ast
import json
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import torch

from .launch import LaunchError, prepare
from .session import FILTERS, ORCH, Session
from .state import FrameInfo, Stop
from .values import describe, element, is_tile, numeric

__all__ = ["Adapter", "serve_stdio", "serve_port", "read_message", "write_message"]

_MAX_CHILDREN = 1000


def read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    """One framed message, or None at the end of the stream."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            if length is not None:
                break
            continue
        k, _, v = line.decode("ascii", "replace").partition(":")
        if k.strip().lower() == "content-length":
            try:
                length = int(v.strip())
            except ValueError:
                length = None
    body = stream.read(length)
    if len(body) < length:
        return None
    try:
        msg = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {"type": "invalid"}
    return msg if isinstance(msg, dict) else {"type": "invalid"}


def write_message(stream: IO[bytes], msg: dict[str, Any]) -> None:
    data = json.dumps(msg, allow_nan=False, default=str).encode("utf-8")
    stream.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
    stream.flush()


class _Handles:
    """Variable references of the current stop (they end when the run goes on)."""

    def __init__(self) -> None:
        self.items: dict[int, Callable[[], list[dict[str, Any]]]] = {}

    def add(self, fn: Callable[[], list[dict[str, Any]]]) -> int:
        ref = len(self.items) + 1
        self.items[ref] = fn
        return ref

    def clear(self) -> None:
        self.items.clear()


class Adapter:
    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.lock = threading.Lock()
        self.seq = 0
        self.session: Session | None = None
        self.handles = _Handles()
        self.pending_breakpoints: dict[str, list[tuple[int, str | None]]] = {}
        self.filters: set[str] = set()
        self.launch_args: dict[str, Any] = {}
        self.configured = False
        self.frames: dict[int, FrameInfo] = {}
        self.stop_seen: Stop | None = None
        self.closed = False

    # ------------------------------------------------------------------ wire

    def send(self, msg: dict[str, Any]) -> None:
        with self.lock:
            if self.closed:
                return
            self.seq += 1
            msg["seq"] = self.seq
            try:
                write_message(self.out, msg)
            except (OSError, ValueError):
                self.closed = True

    def event(self, name: str, body: dict[str, Any]) -> None:
        self.send({"type": "event", "event": name, "body": body})

    def respond(self, req: dict[str, Any], body: dict[str, Any] | None = None, error: str | None = None) -> None:
        msg: dict[str, Any] = {
            "type": "response",
            "request_seq": req.get("seq", 0),
            "command": req.get("command", ""),
            "success": error is None,
        }
        if error is not None:
            msg["message"] = error
            msg["body"] = {"error": {"id": 1, "format": error, "showUser": True}}
        else:
            msg["body"] = body or {}
        self.send(msg)

    def handle(self, msg: dict[str, Any]) -> bool:
        """Answer one message; False once the session is over (disconnect)."""
        if msg.get("type") != "request":
            return True
        cmd = msg.get("command")
        args = msg.get("arguments") or {}
        if not isinstance(args, dict):
            args = {}
        fn = getattr(self, f"on_{cmd}", None)
        if fn is None:
            self.respond(msg, error=f"'{cmd}' is not supported by the pypto debugger")
            return True
        try:
            return fn(msg, args) is not False
        except Exception as exc:  # a bad request never ends the adapter
            self.respond(msg, error=f"{cmd}: {type(exc).__name__}: {exc}")
            return True

    # ------------------------------------------------------------------ requests

    def on_initialize(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self.respond(
            req,
            {
                "supportsConfigurationDoneRequest": True,
                "supportsHitConditionalBreakpoints": True,
                "supportsConditionalBreakpoints": False,
                "supportsEvaluateForHovers": True,
                "supportsTerminateRequest": True,
                "supportsDelayedStackTraceLoading": False,
                "supportsSingleThreadExecutionRequests": True,
                "supportsStepBack": True,
                "supportsRestartRequest": True,
                "supportsValueFormattingOptions": False,
                "exceptionBreakpointFilters": [
                    {"filter": k, "label": v.split(":")[0], "description": v, "default": k in ("deadlock",)} for k, v in FILTERS.items()
                ],
            },
        )

    def on_launch(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        try:
            prep = prepare(args)
        except LaunchError as exc:
            self.respond(req, error=str(exc))
            return
        self.launch_args = args
        self.session = Session(prep, self.event, stop_on_entry=bool(args.get("stopOnEntry")))
        self.session.record_previous = args.get("recordPrevious", True) is not False
        self.filters |= _launch_filters(args)
        self.session.filters = set(self.filters)
        self.respond(req)
        for path, lines in self.pending_breakpoints.items():
            if self._same_file(path):
                self.session.set_breakpoints(lines)
        self.event("initialized", {})
        if args.get("noConfigurationDone"):
            self._start()

    def _same_file(self, path: str) -> bool:
        if self.session is None:
            return False
        try:
            return Path(path).resolve() == self.session.prep.path
        except OSError:
            return False

    def on_setBreakpoints(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        src = args.get("source") or {}
        path = str(src.get("path") or "")
        bps = args.get("breakpoints")
        if bps is None:
            bps = [{"line": n} for n in args.get("lines") or []]
        lines = [(int(b.get("line", 0)), b.get("hitCondition")) for b in bps if isinstance(b, dict)]
        if self.session is None:
            self.pending_breakpoints[path] = lines
            self.respond(req, {"breakpoints": [{"verified": False, "line": n, "message": "not launched yet"} for n, _ in lines]})
            return
        if not self._same_file(path):
            self.respond(req, {"breakpoints": [{"verified": False, "line": n, "message": "not the dump being debugged"} for n, _ in lines]})
            return
        out = self.session.set_breakpoints(lines)
        for b in out:
            b["source"] = {"path": str(self.session.prep.path), "name": self.session.prep.path.name}
        self.respond(req, {"breakpoints": out})

    def on_setExceptionBreakpoints(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        wanted = set(args.get("filters") or [])
        for o in args.get("filterOptions") or []:
            if isinstance(o, dict) and o.get("filterId"):
                wanted.add(o["filterId"])
        self.filters = {f for f in wanted if f in FILTERS}
        if self.session is not None and not self.configured:
            # before the run starts the launch's stopOn* flags add to the client's defaults;
            # afterwards the client's choice is the whole of it
            self.filters |= _launch_filters(self.launch_args)
        if self.session is not None:
            self.session.filters = set(self.filters)
        self.respond(req, {"breakpoints": [{"verified": True} for _ in self.filters]})

    def on_configurationDone(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self.respond(req)
        self._start()

    def _start(self) -> None:
        if self.session is not None and not self.configured:
            self.configured = True
            self.session.start()

    def on_threads(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        s = self.session
        threads = []
        if s is not None:
            st = s.stop
            for tid, th in sorted(s.threads.items()):
                name = th.name
                if st is not None and tid in st.waiting:
                    name += f" (waiting on {st.waiting[tid]})"
                elif st is not None and tid in st.finished:
                    name += " (finished)"
                threads.append({"id": tid, "name": name})
        if not threads:
            threads = [{"id": ORCH, "name": "orchestration"}]
        self.respond(req, {"threads": threads})

    def _stopped(self) -> Stop | None:
        s = self.session
        st = s.stop if s is not None else None
        if st is not self.stop_seen:
            self.handles.clear()
            self.frames = {}
            self.stop_seen = st
            if st is not None:
                for frames in st.frames.values():
                    for fi in frames:
                        self.frames[fi.id] = fi
        return st

    def on_stackTrace(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        st = self._stopped()
        if st is None:
            self.respond(req, error="the run is not stopped")
            return
        assert self.session is not None
        frames = st.frames.get(int(args.get("threadId", 0))) or []
        start = int(args.get("startFrame") or 0)
        levels = int(args.get("levels") or 0)
        chosen = frames[start : start + levels] if levels else frames[start:]
        src = {"path": str(self.session.prep.path), "name": self.session.prep.path.name}
        out = [{"id": fi.id, "name": fi.name, "line": fi.line, "column": 1, "source": src} for fi in chosen]
        self.respond(req, {"stackFrames": out, "totalFrames": len(frames)})

    def on_scopes(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self._stopped()
        fi = self.frames.get(int(args.get("frameId", 0)))
        if fi is None:
            self.respond(req, error="no such frame (the run went on)")
            return
        scopes = [
            {
                "name": "Locals",
                "presentationHint": "locals",
                "variablesReference": self.handles.add(lambda: self._locals(fi)),
                "expensive": False,
            },
            {"name": "Pipes", "variablesReference": self.handles.add(lambda: self._pipes(fi)), "expensive": False},
            {"name": "Memory", "variablesReference": self.handles.add(lambda: self._memory(fi)), "expensive": False},
        ]
        self.respond(req, {"scopes": scopes})

    def on_variables(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self._stopped()
        fn = self.handles.items.get(int(args.get("variablesReference", 0)))
        if fn is None:
            self.respond(req, error="no such variables reference (the run went on)")
            return
        out = fn()
        filt = args.get("filter")
        if filt in ("indexed", "named"):  # a client paging a long tile: rows [i] apart from the named children
            out = [v for v in out if v["name"].startswith("[") == (filt == "indexed")]
        start = int(args.get("start") or 0)
        count = int(args.get("count") or 0)
        if start or count:
            out = out[start : start + count] if count else out[start:]
        self.respond(req, {"variables": out})

    def on_evaluate(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        st = self._stopped()
        expr = str(args.get("expression") or "").strip()
        if st is None:
            self.respond(req, error="the run is not stopped")
            return
        fi = self._frame_arg(st, args)
        if fi is None or self.session is None:
            self.respond(req, error="no frame to evaluate in")
            return
        try:
            v, prev = self._lookup(fi, expr)
        except ValueError as exc:
            self.respond(req, error=str(exc))
            return
        var = self._var(expr, v, prev)
        self.respond(req, {"result": var["value"], "type": var.get("type"), "variablesReference": var["variablesReference"]})

    def _frame_arg(self, st: Stop, args: dict[str, Any]) -> FrameInfo | None:
        """The request's ``frameId``, else the top frame of the stopped thread."""
        fi = self.frames.get(int(args.get("frameId") or 0))
        if fi is None:
            top = st.frames.get(st.thread) or []
            fi = top[0] if top else None
        return fi

    def _lookup(self, fi: FrameInfo, expr: str) -> tuple[Any, Any]:
        """The value of ``name`` / ``name[i, j]`` in the frame, and its previous pass's (or None)."""
        assert self.session is not None
        name, index = _parse_expr(expr)
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

    def on_pyptoErrorMap(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        """A tile as an error map (the VS Code extension's picture): against the previous pass's
        value of the same name when known, else against itself (its values, nothing over tolerance)."""
        st = self._stopped()
        if st is None or self.session is None:
            self.respond(req, error="the run is not stopped")
            return
        fi = self._frame_arg(st, args)
        expr = str(args.get("expression") or "").strip()
        if fi is None:
            self.respond(req, error="no frame")
            return
        try:
            v, prev = self._lookup(fi, expr)
        except ValueError as exc:
            self.respond(req, error=str(exc))
            return
        if not isinstance(v, torch.Tensor) or v.dim() == 0:
            self.respond(req, error=f"'{expr}' is not a tile")
            return
        from ..validate.errormap import error_map

        cur = numeric(v)
        old = numeric(prev) if isinstance(prev, torch.Tensor) else None
        against = "the previous pass"
        if old is None or tuple(old.shape) != tuple(cur.shape):
            old, against = cur, "itself (no previous value)"
        s = self.session.prep.settings
        m = error_map(expr, cur.detach().to(torch.float32), old.detach().to(torch.float32), rtol=s.rtol, atol=s.atol)
        self.respond(req, {"maps": [m], "against": against, "line": fi.line})

    def _resume(self, req: dict[str, Any], args: dict[str, Any], kind: str) -> None:
        s = self.session
        if s is None or s.stop is None:
            self.respond(
                req, {"allThreadsContinued": True} if kind == "continue" else None, None if kind == "continue" else "the run is not stopped"
            )
            return
        tid = int(args.get("threadId") or s.stop.thread)
        self.respond(req, {"allThreadsContinued": True} if kind == "continue" else {})
        s.resume(kind, tid)

    def on_continue(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self._resume(req, args, "continue")

    def on_next(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self._resume(req, args, "next")

    def on_stepIn(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self._resume(req, args, "in")

    def on_stepOut(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self._resume(req, args, "out")

    def on_stepBack(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        s = self.session
        if s is None or s.stop is None:
            self.respond(req, error="the run is not stopped")
            return
        tid = int(args.get("threadId") or s.stop.thread)
        target = s.step_back_target(tid)
        if target is None:
            self.respond(req, error="this is the thread's first statement: nothing to step back to")
            return
        self.respond(req)
        s.replay(target)

    def on_reverseContinue(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        s = self.session
        if s is None or s.stop is None:
            self.respond(req, error="the run is not stopped")
            return
        self.respond(req)
        s.replay(s.reverse_target())

    def on_restart(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        s = self.session
        if s is None or s.stop is None:
            self.respond(req, error="restart: only while stopped (the run is replayed from its start)")
            return
        self.respond(req)
        s.replay(None)

    def on_pause(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        if self.session is not None:
            self.session.pause()
        self.respond(req)

    def on_terminate(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        if self.session is not None:
            self.session.terminate()
        self.respond(req)

    def on_disconnect(self, req: dict[str, Any], args: dict[str, Any]) -> bool:
        if self.session is not None:
            self.session.terminate()
            self.session.done.wait(5.0)
        self.respond(req)
        return False

    # ------------------------------------------------------------------ variables

    def _locals(self, fi: FrameInfo) -> list[dict[str, Any]]:
        assert self.session is not None
        loc = self.session.frame_locals(fi)
        first = list(fi.assigned)
        names = first + [k for k in loc if k not in fi.assigned]
        previous = self.session.previous_of(fi)
        return [{**self._var(k, loc[k], previous.get(k)), "evaluateName": k} for k in names]

    def _var(self, name: str, v: Any, prev: Any = None) -> dict[str, Any]:
        from .values import max_abs_delta

        delta = max_abs_delta(v, prev) if prev is not None else None
        text, typ = describe(v, delta)
        ref = 0
        extra: dict[str, Any] = {}
        if is_tile(v):
            ref = self.handles.add(lambda: self._tile_children(v, prev, delta))
            extra["indexedVariables"] = min(int(numeric(v).shape[0]), _MAX_CHILDREN) if v.dim() else 0
            if prev is not None:
                extra["namedVariables"] = 2
        elif isinstance(v, tuple | list) and v:
            ref = self.handles.add(lambda: [self._var(f"[{i}]", x) for i, x in enumerate(v[:_MAX_CHILDREN])])
        return {"name": name, "value": text, "type": typ, "variablesReference": ref, **extra}

    def _tile_children(self, v: torch.Tensor, prev: Any, delta: float | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if prev is not None:
            out.append(self._var("previous pass", prev))
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
        ref = self.handles.add(lambda: self._elements(row))
        return {"name": name, "value": f"[{preview}{more}]", "variablesReference": ref, "indexedVariables": int(row.shape[0])}

    def _elements(self, row: torch.Tensor) -> list[dict[str, Any]]:
        out = []
        for j in range(min(int(row.shape[0]), _MAX_CHILDREN)):
            x = row[j]
            out.append({"name": f"[{j}]", "value": element(x), "variablesReference": 0} if x.dim() == 0 else self._row(f"[{j}]", x))
        return out

    def _pipes(self, fi: FrameInfo) -> list[dict[str, Any]]:
        rt = fi.rt
        if rt is None:
            return [{"name": "pipes", "value": "none: this frame runs outside a cross-core group", "variablesReference": 0}]
        out: list[dict[str, Any]] = []
        for key, q in sorted(rt.fifos.items(), key=lambda kv: repr(kv[0])):
            direction, split, lane, pid = key
            name = f"{direction}[split={split}, lane={'*' if lane is None else lane}, id={pid}]"
            tiles = list(q)
            ref = self.handles.add(self._slots(tiles)) if tiles else 0
            out.append(
                {
                    "name": name,
                    "value": f"{len(tiles)} tile{'s' * (len(tiles) != 1)} queued",
                    "variablesReference": ref,
                    "indexedVariables": len(tiles),
                }
            )
        for slot, b in sorted(rt.blocked.items()):
            out.append({"name": f"core slot {slot}", "value": f"waiting in {b[4]}", "variablesReference": 0})
        if not out:
            out.append({"name": "pipes", "value": "empty (nothing pushed yet)", "variablesReference": 0})
        return out

    def _slots(self, tiles: list[Any]) -> Callable[[], list[dict[str, Any]]]:
        return lambda: [self._var(f"slot {i}", t) for i, t in enumerate(tiles)]

    def _memory(self, fi: FrameInfo) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        m = None
        if fi.frame is not None:
            try:
                m = fi.frame.f_locals.get("_pl_m")
            except Exception:
                m = None
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
                        "variablesReference": self.handles.add(rows),
                    }
                )
        st = self.session.stop if self.session is not None else None
        if st is not None and st.findings:
            fs = list(st.findings)
            out.append(
                {
                    "name": "findings",
                    "value": f"{len(fs)} memory finding{'s' * (len(fs) != 1)}",
                    "variablesReference": self.handles.add(
                        lambda: [{"name": f"line {f.line}", "value": f.message, "variablesReference": 0} for f in fs]
                    ),
                }
            )
        return out


def _launch_filters(args: dict[str, Any]) -> set[str]:
    """The exception stops a launch asks for (``stopOnNaN`` ...; ``stopOnDeadlock`` unless false)."""
    out = {f for flag, f in (("stopOnNaN", "nan"), ("stopOnFirstDifference", "difference"), ("stopOnFinding", "finding")) if args.get(flag)}
    if args.get("stopOnDeadlock", True) is not False:
        out.add("deadlock")
    return out


def _parse_expr(expr: str) -> tuple[str, tuple[Any, ...]]:
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


def _loop(inp: IO[bytes], out: IO[bytes]) -> None:
    a = Adapter(out)
    while True:
        msg = read_message(inp)
        if msg is None:
            break
        if not a.handle(msg):
            break
    if a.session is not None:
        a.session.terminate()


def serve_stdio() -> int:
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write into the protocol stream
    from ..validate.engine import configure_torch

    configure_torch()
    _loop(sys.stdin.buffer, out)
    return 0


def serve_port(port: int, host: str = "127.0.0.1") -> int:
    from ..validate.engine import configure_torch

    configure_torch()
    with socket.create_server((host, port)) as srv:
        print(f"pypto-lsp debug: listening on {host}:{srv.getsockname()[1]}", file=sys.stderr, flush=True)
        conn, _ = srv.accept()
        with conn, conn.makefile("rb") as inp, conn.makefile("wb") as outp:
            _loop(inp, outp)
    return 0
