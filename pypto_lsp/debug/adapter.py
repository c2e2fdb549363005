"""The Debug Adapter Protocol side: each request (:mod:`.wire`; served by :mod:`.serve`) goes to an
``on_<command>`` handler that returns the response's body or raises :class:`RequestError` to answer
with an error (as debugpy's handlers do). The Variables view is :mod:`.variables`, the run :mod:`.session`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from .launch import LaunchError, launch_filters, prepare, read_text
from .session import FILTERS, ORCH, Session
from .state import FrameInfo, Stop
from .variables import Variables
from .wire import Invalid, write_message

__all__ = ["Adapter", "RequestError", "requires_stop"]

Body = dict[str, Any] | None
Handler = Callable[["Adapter", dict[str, Any], dict[str, Any]], Body]


class RequestError(Exception):
    """Raised by a handler: the request is answered ``success: false`` with this message."""


class _Answered(Exception):
    """A handler that responded itself (before an event that must follow its response)."""


def requires_stop(fn: Handler) -> Handler:
    """A handler that answers only while the run is stopped."""

    @functools.wraps(fn)
    def guarded(self: Adapter, req: dict[str, Any], args: dict[str, Any]) -> Body:
        if self.stopped() is None:
            raise RequestError("the run is not stopped")
        return fn(self, req, args)

    return guarded


class Adapter:
    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.lock = threading.Lock()
        self.seq = 0
        self.session: Session | None = None
        self.variables: Variables | None = None
        self.pending_breakpoints: dict[str, list[tuple[int, str | None]]] = {}
        self.filters: set[str] = set()
        self.launch_args: dict[str, Any] = {}
        self.configured = False
        self.frames: dict[int, FrameInfo] = {}
        self.stop_seen: Stop | None = None
        self.closed = False
        self.ending = False  # disconnect answered: the loop ends

    # ------------------------------------------------------------------ wire

    def send(self, msg: dict[str, Any]) -> None:
        with self.lock:
            if self.closed:
                return
            self.seq += 1
            msg["seq"] = self.seq
            try:
                write_message(self.out, msg)
            except OSError:
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

    def handle(self, msg: dict[str, Any] | Invalid) -> bool:
        """Answer one message; False once the session is over (disconnect)."""
        if isinstance(msg, Invalid):
            self.respond({"seq": msg.seq, "command": msg.command}, error=f"invalid message: {msg.reason}")
            return True
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
            self.respond(msg, fn(msg, args))
        except _Answered:
            pass
        except RequestError as exc:
            self.respond(msg, error=str(exc))
        except Exception as exc:  # a bad request never ends the adapter
            self.respond(msg, error=f"{cmd}: {type(exc).__name__}: {exc}")
        return not self.ending

    # ------------------------------------------------------------------ requests

    def on_initialize(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        return {
            "supportsConfigurationDoneRequest": True,
            "supportsHitConditionalBreakpoints": True,
            "supportsConditionalBreakpoints": False,
            "supportsEvaluateForHovers": True,
            "supportsTerminateRequest": True,
            "supportsDelayedStackTraceLoading": False,
            "supportsSingleThreadExecutionRequests": True,
            "supportsStepBack": True,
            "supportsRestartRequest": True,
            "supportsRestartFrame": True,
            "supportsValueFormattingOptions": False,
            "exceptionBreakpointFilters": [
                {"filter": k, "label": v.split(":")[0], "description": v, "default": k in ("deadlock",)} for k, v in FILTERS.items()
            ],
        }

    def on_launch(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        if self.session is not None:
            raise RequestError(
                "launch: this session runs a dump already (one launch per session); restart it, or disconnect and launch again"
            )
        try:
            prep = prepare(args)
        except LaunchError as exc:
            raise RequestError(str(exc)) from exc
        self.launch_args = args
        self.session = Session(prep, self.event, stop_on_entry=bool(args.get("stopOnEntry")))
        self.variables = Variables(self.session)
        self.session.previous.enabled = args.get("recordPrevious", True) is not False
        self.filters |= launch_filters(args)
        self.session.filters = set(self.filters)
        for path, lines in self.pending_breakpoints.items():
            if self._same_file(path):
                self.session.set_breakpoints(lines)
        self.respond(req)
        self.event("initialized", {})
        if args.get("noConfigurationDone"):
            self._start()
        raise _Answered

    def _same_file(self, path: str) -> bool:
        if self.session is None:
            return False
        try:
            return Path(path).resolve() == self.session.prep.path
        except OSError:
            return False

    def on_setBreakpoints(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        src = args.get("source") or {}
        path = str(src.get("path") or "")
        bps = args.get("breakpoints")
        if bps is None:
            bps = [{"line": n} for n in args.get("lines") or []]
        lines = [
            (int(b.get("line", 0)), None if b.get("hitCondition") is None else str(b["hitCondition"])) for b in bps if isinstance(b, dict)
        ]
        if self.session is None:
            self.pending_breakpoints[path] = lines
            return {"breakpoints": [{"verified": False, "line": n, "message": "not launched yet"} for n, _ in lines]}
        if not self._same_file(path):
            return {"breakpoints": [{"verified": False, "line": n, "message": "not the dump being debugged"} for n, _ in lines]}
        out = self.session.set_breakpoints(lines)
        for b in out:
            b["source"] = {"path": str(self.session.prep.path), "name": self.session.prep.path.name}
        return {"breakpoints": out}

    def on_setExceptionBreakpoints(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        wanted = set(args.get("filters") or [])
        for o in args.get("filterOptions") or []:
            if isinstance(o, dict) and o.get("filterId"):
                wanted.add(o["filterId"])
        self.filters = {f for f in wanted if f in FILTERS}
        if self.session is not None and not self.configured:
            # before the run starts the launch's stopOn* flags add to the client's defaults
            self.filters |= launch_filters(self.launch_args)
        if self.session is not None:
            self.session.filters = set(self.filters)
        return {"breakpoints": [{"verified": True} for _ in self.filters]}

    def on_configurationDone(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        self.respond(req)
        self._start()
        raise _Answered

    def _start(self) -> None:
        if self.session is not None and not self.configured:
            self.configured = True
            self.session.start()

    def on_threads(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        s = self.session
        threads = []
        if s is not None:
            st = s.stop
            for tid, th in sorted(s.threads.by_id.items()):
                name = th.name
                if st is not None and tid in st.waiting:
                    name += f" (waiting on {st.waiting[tid]})"
                elif st is not None and tid in st.finished:
                    name += " (finished)"
                threads.append({"id": tid, "name": name})
        if not threads:
            threads = [{"id": ORCH, "name": "orchestration"}]
        return {"threads": threads}

    def stopped(self) -> Stop | None:
        """The current stop (a new one drops the references of the one before)."""
        s = self.session
        st = s.stop if s is not None else None
        if st is not self.stop_seen:
            if self.variables is not None:
                self.variables.clear()
            self.frames = {}
            self.stop_seen = st
            if st is not None:
                for frames in st.frames.values():
                    for fi in frames:
                        self.frames[fi.id] = fi
        return st

    def _stop(self) -> tuple[Session, Variables, Stop]:
        st = self.stopped()
        assert st is not None and self.session is not None and self.variables is not None
        return self.session, self.variables, st

    @requires_stop
    def on_stackTrace(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        s, _, st = self._stop()
        frames = st.frames.get(int(args.get("threadId", 0))) or []
        start = int(args.get("startFrame") or 0)
        levels = int(args.get("levels") or 0)
        chosen = frames[start : start + levels] if levels else frames[start:]
        src = {"path": str(s.prep.path), "name": s.prep.path.name}
        out = [{"id": fi.id, "name": fi.name, "line": fi.line, "column": 1, "source": src} for fi in chosen]
        return {"stackFrames": out, "totalFrames": len(frames)}

    @requires_stop
    def on_scopes(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        _, v, _ = self._stop()
        fi = self.frames.get(int(args.get("frameId", 0)))
        if fi is None:
            raise RequestError("no such frame (the run went on)")
        return {"scopes": v.scopes(fi)}

    @requires_stop
    def on_variables(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        _, v, _ = self._stop()
        fn = v.items.get(int(args.get("variablesReference", 0)))
        if fn is None:
            raise RequestError("no such variables reference (the run went on)")
        out = fn()
        filt = args.get("filter")
        if filt in ("indexed", "named"):  # a client paging a long tile: rows [i] apart from the named children
            out = [x for x in out if x["name"].startswith("[") == (filt == "indexed")]
        start = int(args.get("start") or 0)
        count = int(args.get("count") or 0)
        if start or count:
            out = out[start : start + count] if count else out[start:]
        return {"variables": out}

    def _frame_arg(self, st: Stop, args: dict[str, Any]) -> FrameInfo:
        """The request's ``frameId``, else the top frame of the stopped thread."""
        fi = self.frames.get(int(args.get("frameId") or 0))
        if fi is None:
            top = st.frames.get(st.thread) or []
            fi = top[0] if top else None
        if fi is None:
            raise RequestError("no frame to evaluate in")
        return fi

    def _lookup(self, args: dict[str, Any]) -> tuple[FrameInfo, str, Any, Any]:
        _, v, st = self._stop()
        fi = self._frame_arg(st, args)
        expr = str(args.get("expression") or "").strip()
        try:
            value, prev = v.lookup(fi, expr)
        except ValueError as exc:
            raise RequestError(str(exc)) from exc
        return fi, expr, value, prev

    @requires_stop
    def on_evaluate(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        _, expr, value, prev = self._lookup(args)
        assert self.variables is not None
        var = self.variables.var(expr, value, prev)
        return {"result": var["value"], "type": var.get("type"), "variablesReference": var["variablesReference"]}

    @requires_stop
    def on_pyptoErrorMap(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        """A tile as an error map (the VS Code extension's picture): against the previous pass's
        value of the same name when known, else against itself (its values, nothing over tolerance)."""
        fi, expr, v, prev = self._lookup(args)
        assert self.variables is not None
        try:
            m, against = self.variables.error_map(expr, v, prev)
        except ValueError as exc:
            raise RequestError(str(exc)) from exc
        return {"maps": [m], "against": against, "line": fi.line}

    def _resume(self, req: dict[str, Any], args: dict[str, Any], kind: str) -> Body:
        s = self.session
        if s is None or s.stop is None:
            if kind == "continue":
                return {"allThreadsContinued": True}
            raise RequestError("the run is not stopped")
        tid = int(args.get("threadId") or s.stop.thread)
        self.respond(req, {"allThreadsContinued": True} if kind == "continue" else {})
        s.resume(kind, tid)
        raise _Answered

    def on_continue(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        return self._resume(req, args, "continue")

    on_next = functools.partialmethod(_resume, kind="next")
    on_stepIn = functools.partialmethod(_resume, kind="in")
    on_stepOut = functools.partialmethod(_resume, kind="out")

    def _replay(self, req: dict[str, Any], target: int | None) -> Body:
        assert self.session is not None
        self.respond(req)
        self.session.replay(target)
        raise _Answered

    @requires_stop
    def on_stepBack(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        s, _, st = self._stop()
        target = s.step_back_target(int(args.get("threadId") or st.thread))
        if target is None:
            raise RequestError("this is the thread's first statement: nothing to step back to")
        return self._replay(req, target)

    @requires_stop
    def on_reverseContinue(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        s, _, _ = self._stop()
        return self._replay(req, s.reverse_target())

    @requires_stop
    def on_restartFrame(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        """Back to the first statement of the frame's call (a replay)."""
        s, _, st = self._stop()
        fi = self.frames.get(int(args.get("frameId") or 0))
        target = s.frame_start_target(fi) if fi is not None else None
        if target is None:
            raise RequestError("restartFrame: not a frame of a function call the run can go back to")
        return self._replay(req, target)

    @requires_stop
    def on_restart(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        s, _, _ = self._stop()
        try:
            changed = read_text(s.prep.path) != s.prep.text
        except (OSError, UnicodeDecodeError):
            changed = True
        if changed:
            s.output(
                f"restart replays {s.prep.path.name} as it was at launch: the file changed on disk since "
                "(stop the session and start it again to run the file as it is now)\n",
                "important",
            )
        return self._replay(req, None)

    def on_pause(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        if self.session is not None:
            self.session.pause_requested = True
        return None

    def on_terminate(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        if self.session is not None:
            self.session.terminate()
        return None

    def on_disconnect(self, req: dict[str, Any], args: dict[str, Any]) -> Body:
        if self.session is not None:
            self.session.terminate()
            self.session.done.wait(5.0)
        self.ending = True
        return None
