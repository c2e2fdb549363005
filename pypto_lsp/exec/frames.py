"""Python frames of a running generated script, read by IR names: which frames are the script's
own functions (not a task's thunk, not the runtime), their IR function, their locals under their
IR names, and the memory frame a placed function runs in.

The debugger (:mod:`pypto_lsp.debug`) sees a run only through these and its observer hooks: the
script's private names (``_pl_*``) and file name stay in ``exec/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import FrameType
from typing import Any

from .codegen import GeneratedCode

__all__ = ["ir_function", "ir_frames", "innermost", "ir_locals", "memory_frame"]


def ir_function(gen: GeneratedCode, frame: FrameType) -> str | None:
    """The IR function ``frame`` runs, None for any other frame (a task's thunk, the runtime)."""
    code = frame.f_code
    if code.co_filename != gen.filename:
        return None
    return gen.py_functions.get(code.co_name)


def ir_frames(gen: GeneratedCode, frame: FrameType | None) -> Iterator[FrameType]:
    """The frames of the script's functions from ``frame`` outwards."""
    f = frame
    while f is not None:
        if ir_function(gen, f) is not None:
            yield f
        f = f.f_back


def innermost(gen: GeneratedCode, frame: FrameType | None) -> FrameType | None:
    """The first frame of the script's functions from ``frame`` outwards."""
    return next(ir_frames(gen, frame), None)


def ir_locals(gen: GeneratedCode, frame: FrameType) -> dict[str, Any]:
    """The frame's values under their IR names (the script's own names left out; an IR name the
    script renamed, ``self`` or ``_pl_tr``, under the dump's name)."""
    names = gen.local_names.get(frame.f_code.co_name, {})
    try:
        loc = dict(frame.f_locals)
    except Exception:  # a frame that went away
        return {}
    return {names[k]: v for k, v in loc.items() if k in names}


def memory_frame(frame: FrameType | None) -> Any:
    """The memory model's frame (:class:`pypto_lsp.exec.memory` ``Frame``) the function runs in, or None."""
    if frame is None:
        return None
    try:
        return frame.f_locals.get("_pl_m")
    except Exception:
        return None
