"""What a failed run says, in the IR's terms: the IR line of the generated-code frame that raised,
the IR op on that line when Python or torch raised in their own words (``tile.reshape: shape
'[15, 16]' is invalid``), the expression of a scalar division by zero, where a stopped run's
thread was and which loop had not ended. Used by :mod:`.engine` for every error of a run.
"""

from __future__ import annotations

import re
import traceback
from types import TracebackType
from typing import Any

from ..exec.codegen import GeneratedCode
from ..ir.model import BinOp, Expr, For, If, OpCall, Program, Scope, Span, While, stmt_subexprs
from ..ir.printer import expr_str
from .report import ErrorInfo
from .run_thread import stuck_loops
from .run_thread import stuck_where as _stuck_where


def locate(exc: BaseException, gen: GeneratedCode) -> Span | None:
    """The IR span of the innermost generated-code frame in ``exc`` or its causes."""
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and len(chain) < 8:
        chain.append(e)
        e = e.__cause__ or e.__context__
    for ex in reversed(chain):  # the deepest cause first
        span = _locate_tb(ex.__traceback__, gen)
        if span is not None:
            return span
    return None


def _locate_tb(tb: TracebackType | None, gen: GeneratedCode) -> Span | None:
    found: Span | None = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == gen.filename:
            s = gen.ir_span(tb.tb_lineno)
            if s is not None:
                found = s
        tb = tb.tb_next
    return found


def _error_kind(exc: BaseException) -> str:
    k = getattr(exc, "kind", None)
    if isinstance(k, str):
        if type(exc).__name__ == "CrossCoreError":
            return f"cross-core:{k}"
        return k
    return type(exc).__name__


def _exc_message(exc: BaseException) -> str:
    msg = str(exc).strip() or type(exc).__name__
    if not isinstance(exc, RuntimeError | AssertionError) or type(exc).__name__ not in msg:
        msg = f"{type(exc).__name__}: {msg}" if type(exc).__module__ == "builtins" else msg
    return msg.splitlines()[0] if len(msg) > 2000 else msg


# what Python and torch themselves raise when a kernel is handed operands it cannot take (a list,
# a memory space, a string where a tile goes; shapes that do not broadcast): their words name
# torch's function, not the IR op. Exact types: our own errors subclass some of these and say more
_PYTHON_ERRORS = (TypeError, AttributeError, IndexError, ValueError, KeyError, RuntimeError, NotImplementedError, ZeroDivisionError)


def _line_subexprs(program: Program | None, line: int) -> list[Expr]:
    """Every expression the simple statement on ``line`` evaluates (a loop, a branch or a scope
    heads lines of its own body, so it is left out)."""
    if program is None:
        return []
    return [
        sub
        for fn in program.functions
        for st in fn.statements()
        if st.span.line == line and not isinstance(st, For | While | If | Scope)
        for sub in stmt_subexprs(st)
    ]


def _op_on_line(program: Program | None, line: int) -> str | None:
    """The one op the statement on ``line`` calls, or None (no statement there, or several ops)."""
    ops = {sub.op for sub in _line_subexprs(program, line) if isinstance(sub, OpCall)}
    return ops.pop() if len(ops) == 1 else None


_UNBOUND = re.compile(r"local variable '(\w+)'")
# what Python itself says of a division by zero (a kernel's own ZeroDivisionError says more)
_PYTHON_DIVISION_WORDS = frozenset(
    {
        "division by zero",
        "integer division or modulo by zero",
        "integer modulo by zero",
        "integer division by zero",
        "float division by zero",
        "float modulo",
        "float floor division by zero",
        "float divmod()",
    }
)


def _divisions_on_line(program: Program | None, line: int) -> list[BinOp]:
    """The scalar divisions (``/``, ``//``, ``%``) the statement on ``line`` makes."""
    return [sub for sub in _line_subexprs(program, line) if isinstance(sub, BinOp) and sub.op in ("/", "//", "%")]


def error_info(exc: BaseException, gen: GeneratedCode, program: Program | None = None) -> ErrorInfo:
    """The error a run raised, as the report gives it: kind, message, IR span, details."""
    span = locate(exc, gen)
    detail: dict[str, Any] = {}
    message = _exc_message(exc)
    python = exc if type(exc) in _PYTHON_ERRORS else exc.__cause__  # a rank's error carries its cause
    unbound_exc = exc if isinstance(exc, UnboundLocalError) else exc.__cause__
    unbound = _UNBOUND.search(str(unbound_exc)) if isinstance(unbound_exc, UnboundLocalError) else None
    if unbound is not None:
        # the DSL binds a name where it is assigned; a run reaches a read of it without having run
        # that statement (a loop of no iteration, a branch not taken, another pl.at block). Python
        # said "cannot access local variable ... where it is not associated with a value"; a
        # rank's error keeps its "rank 0 (fn): " head
        head = message.partition("): ")[0] + "): " if unbound_exc is not exc else ""
        message = (
            f"{head}'{unbound.group(1)}' is read, but no statement assigned it in this run: the one that does "
            "sits in a loop that ran no iteration, a branch that was not taken, or another pl.at block"
        )
    divs = _divisions_on_line(program, span.line) if span is not None and str(python) in _PYTHON_DIVISION_WORDS else []
    if divs and python is exc:
        # a scalar division of the dump itself (``n % z``, an offset ``i // z``): Python said
        # "integer modulo by zero", which names neither the expression nor the op around it
        said = " or ".join(f"'{expr_str(d)}'" for d in divs[:3])
        message = (
            f"ZeroDivisionError: {said} divides by zero: {'its' if len(divs) == 1 else 'a'} divisor is 0 (the device's result is undefined)"
        )
    elif span is not None and type(python) in _PYTHON_ERRORS and not hasattr(python, "op"):
        op = _op_on_line(program, span.line)
        if op is not None:  # say which op, in the IR's words (after a rank's "rank 0 (fn): ")
            head, sep, rest = message.partition("): ") if python is not exc else ("", "", message)
            message = f"{head}{sep}{op}: {rest}"
            detail["op"] = op
    if isinstance(exc, TimeoutError) and hasattr(exc, "stuck_frames"):
        # the run's thread was stopped: the IR line it was on, and where in our code when not the
        # script's (a hang in the runtime or a kernel, not in the program's own loop)
        span, inner = _stuck_where(exc, gen)
        loops = stuck_loops(exc, gen, program)
        if loops is not None:  # which loop did not end, and how far it had got
            detail["stuck_loops"] = loops
            message += f"; {loops}"
        if inner is not None:
            detail["stuck_in"] = inner
            message += f"; stopped in {inner}"
    # bytes, budget: alloc_budget; rank(s): exec.ranks
    for attr in ("op", "split", "lane", "role", "queue_depths", "bytes", "budget", "rank", "ranks"):
        v = getattr(exc, attr, None)
        if v is None and exc.__cause__ is not None:
            v = getattr(exc.__cause__, attr, None)
        if v is not None:
            detail[attr] = v
    err = ErrorInfo.at(_error_kind(exc), message, span, **detail)
    err.detail.setdefault("traceback", "".join(traceback.format_exception_only(type(exc), exc)).strip()[:2000])
    return err
