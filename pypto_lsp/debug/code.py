"""The debugged dump as the debugger reads its run: the compiled program and generated code,
and what a frame of that code is in IR terms (its function, kind, line, locals), through the
public accessors of :mod:`pypto_lsp.exec.frames` only."""

from __future__ import annotations

import re
from types import FrameType
from typing import Any

from ..exec import frames as gframes
from ..exec.codegen import GeneratedCode
from ..validate.engine import Compiled

__all__ = ["Code", "KERNEL_KINDS"]

KERNEL_KINDS = frozenset({"InCore", "AIC", "AIV"})


class Code:
    """One compiled dump (traced): its IR functions, lines and frames."""

    def __init__(self, comp: Compiled, text: str) -> None:
        assert comp.generated is not None
        self.comp = comp
        self.gen: GeneratedCode = comp.generated
        self.program = comp.program
        self.text_lines = text.splitlines()
        self.stop_lines = set(self.gen.stop_lines)
        self._group_calls: dict[tuple[str, str], int] = {}

    def function(self, f: FrameType) -> str | None:
        """The IR function a frame runs (None: not one of the script's functions)."""
        return gframes.ir_function(self.gen, f)

    def kind(self, f: FrameType) -> str | None:
        name = self.function(f)
        fn = self.program.function(name) if name is not None and self.program is not None else None
        return fn.kind if fn is not None else None

    def is_kernel(self, f: FrameType) -> bool:
        return self.kind(f) in KERNEL_KINDS

    def frames(self, f: FrameType | None) -> list[FrameType]:
        """The script's frames from ``f`` outwards."""
        return list(gframes.ir_frames(self.gen, f))

    def innermost(self, f: FrameType | None) -> FrameType | None:
        return gframes.innermost(self.gen, f)

    def line(self, f: FrameType) -> int:
        sp = self.gen.ir_span(f.f_lineno)
        return sp.line if sp is not None else 0

    def locals(self, f: FrameType) -> dict[str, Any]:
        return gframes.ir_locals(self.gen, f)

    def owner(self, line: int) -> Any:
        """The IR function ``line`` belongs to: inside its body, or on a decorator above its ``def``."""
        if self.program is None:
            return None
        for f in self.program.functions:
            if f.span.line <= line <= f.span.end_line:
                return f
        for f in self.program.functions:
            between = self.text_lines[line - 1 : f.span.line - 1] if line < f.span.line else []
            if between and between[0].strip().startswith("@") and all(t.strip().startswith(("@", "#")) or not t.strip() for t in between):
                return f
        return None

    def same_function(self, a: int, b: int) -> bool:
        fa = self.owner(a)
        return fa is not None and fa.span.line <= b <= fa.span.end_line

    def group_call_line(self, group: str, kernel: str) -> int:
        """The line of the group function ``group`` where it calls ``kernel`` (0: none)."""
        key = (group, kernel)
        if key not in self._group_calls:
            line = 0
            f = self.program.function(group) if self.program is not None else None
            if f is not None:
                pat = re.compile(r"\bself\." + re.escape(kernel) + r"\s*\(")
                for i in range(f.span.line, min(f.span.end_line, len(self.text_lines)) + 1):
                    if pat.search(self.text_lines[i - 1]):
                        line = i
                        break
            self._group_calls[key] = line
        return self._group_calls[key]
