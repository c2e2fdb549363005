"""One way to run a dump, many observers: every watcher of a run goes through ``engine.run``.

* a new observer needs no change in the code generator: a per-line timer, written here;
* validation, localisation, the error map's recorder, the memory model, call counting and the
  sanitizer all run through the one ``run`` (counted), and nothing else in the package executes
  generated code or calls the timeout runner (checked in the source's AST).
"""

from __future__ import annotations

import ast
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pypto_lsp
from pypto_lsp.exec.observe import Observer, RunInfo
from pypto_lsp.validate import engine, errormap, localize
from pypto_lsp.validate.golden import load_bundle

ROOT = Path(pypto_lsp.__file__).resolve().parent
EXAMPLES = ROOT.parent / "examples"


class LineTimer(Observer):
    """Seconds spent in kernels per IR line: wraps every op's kernel, finds the calling line."""

    def __init__(self) -> None:
        self.seconds: dict[int, float] = defaultdict(float)
        self.calls: dict[int, int] = defaultdict(int)

    def kernel(self, op: str, fn: Any, run: RunInfo) -> Any:
        gen_file = run.gen.filename

        def timed(*args: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                f: Any = sys._getframe(1)
                while f is not None and f.f_code.co_filename != gen_file:
                    f = f.f_back
                line = run.ir_line(f.f_lineno) if f is not None else None
                if line is not None:
                    self.seconds[line] += time.perf_counter() - t0
                    self.calls[line] += 1

        return timed


def _elementwise() -> tuple[Path, dict, dict]:
    d = EXAMPLES / "elementwise"
    dumps = sorted((d / "passes_dump").glob("*.py"))
    return dumps[-1], load_bundle(d / "golden" / "inputs.pt"), load_bundle(d / "golden" / "expected.pt")


def test_a_per_line_timer_is_an_observer_without_codegen_changes():
    path, inputs, expected = _elementwise()
    text = path.read_text()
    comp = engine.compile_text(text, str(path))
    timer = LineTimer()
    out = engine.run(comp, inputs, observers=[timer])
    assert out.error is None
    lines = text.split("\n")
    op_lines = {i + 1 for i, ln in enumerate(lines) if "= pl.tile." in ln or "pl.tile.store" in ln}
    assert timer.calls, "the timer saw no kernel call"
    assert set(timer.calls) <= op_lines  # every timed line is a line with an op
    assert any(n > 0 for n in timer.seconds.values())
    # the run's numbers are those of a run without the observer
    assert all(bool((out.tensors[k] - engine.run(comp, inputs).tensors[k]).abs().max() == 0) for k in expected if k in out.tensors)


def test_every_run_goes_through_the_one_run(monkeypatch):
    path, inputs, expected = _elementwise()
    text = path.read_text()
    calls: list[list[str]] = []
    real = engine.run

    def counted(comp: Any, ins: Any, **kw: Any) -> Any:
        calls.append([type(o).__name__ for o in kw.get("observers", ())])
        return real(comp, ins, **kw)

    monkeypatch.setattr(engine, "run", counted)
    monkeypatch.setattr(errormap, "run", counted)
    fr = engine.run_text(text, inputs, expected, filename=str(path))
    assert fr.status == "pass"
    assert calls == [["MemoryObserver", "CallCounter", "Sanitizer"]]
    calls.clear()
    rec = errormap.record_run(text, inputs, ["out"], filename=str(path))
    assert rec.error is None and calls == [["_Recorder"]]
    calls.clear()
    prev = sorted((EXAMPLES / "elementwise" / "passes_dump").glob("*.py"))[-2]
    localize.first_differing_value(prev.read_text(), text, inputs, rtol=1e-3, atol=1e-3, filename=str(path), previous_filename=str(prev))
    assert len(calls) == 2 and all("TraceObserver" in c for c in calls)


def test_nothing_else_executes_generated_code():
    """``exec`` is called in ``exec.script_code`` alone (a script's blocks in order, and a function's
    block on its first call), whose ``run_blocks`` and the timeout runner ``engine.run`` alone calls."""
    found: list[str] = []
    for f in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(f.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for sub in ast.walk(node):
                    if (
                        isinstance(sub, ast.Call)
                        and isinstance(sub.func, ast.Name)
                        and sub.func.id in ("exec", "_run_with_timeout", "run_blocks")
                    ):
                        found.append(f"{f.relative_to(ROOT)}:{node.name}:{sub.func.id}")
    assert sorted(set(found)) == [
        "exec/script_code.py:_stand_in:exec",  # (its nested stand_in's)
        "exec/script_code.py:run_blocks:exec",
        "exec/script_code.py:stand_in:exec",
        "validate/engine.py:run:_run_with_timeout",
        "validate/engine.py:run:run_blocks",
    ], found
