"""What ``compile`` of a folder's generated code can still give: the floor under its ``compile()`` row.

    python benchmarks/bench_compile_floor.py [FOLDER] [--rounds N]

``bench_phases.py`` counts ``compile()`` of the generated scripts (at once, and on a function's first
call: ``exec.script_code``) at about an eighth of the qwen3 folder's first run. Before a lever is aimed
at it, this says how much any lever could take. It runs the folder once (``validate_files``, one
process, no cache, the default settings) with every line of the generated code traced, keeps the
text of each block compiled for the first time (blocks seen before are reused already), and then
times, best of ``--rounds``, over those blocks:

* ``compile()`` of each block's text, as the engine does;
* ``ast.parse`` of it alone (the tokenizer and the parser);
* ``compile()`` of an ``ast.Module`` already parsed (what is left: the AST handed to the compiler,
  symbol tables, code generation, assembly);
* ``compile()`` of the text with every ``_pl_`` name made two or three characters long (whether
  shorter generated text would compile faster).

The collector is off while these are timed (the parsed trees, kept for the third row, are millions
of objects). Beside them the share of the compiled lines (and of their bytes) that the run executed: what compiling
only the branches a run takes could save at most. The trace slows the run; it does not change what
runs (the generated code is the untraced script's). No asserts: this measures, it does not judge.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import threading
import timeit
from collections.abc import Callable
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
QWEN3 = ROOT.parent / "shared" / "fixtures" / "qwen3_scope3_910b"


def _lines_of(code: CodeType) -> set[int]:
    """The lines ``code`` and the code objects nested in it execute, as the block numbers them."""
    out = {ln for _, _, ln in code.co_lines() if ln is not None}
    for c in code.co_consts:
        if isinstance(c, CodeType):
            out |= _lines_of(c)
    return out


def collect(folder: Path) -> tuple[list[str], int, int, int, int]:
    """The folder's first run, traced: the new blocks' texts, and the compiled lines and bytes,
    executed and in all."""
    import torch

    from pypto_lsp.exec import script_code
    from pypto_lsp.validate.config import RunSettings
    from pypto_lsp.validate.folders import validate_files
    from pypto_lsp.validate.golden import load_bundle
    from pypto_lsp.validate.process_setup import configure_process

    configure_process()
    new: dict[int, tuple[str, set[int]]] = {}  # id(code) -> (its text, its lines)
    placed: list[tuple[str, set[int], int, str]] = []  # (text, lines, line offset in the script, script name)
    block_code, moved = script_code._block_code, script_code._moved

    def first_compile(text: str) -> CodeType:
        seen = text in script_code._CACHE
        code = block_code(text)
        if not seen:
            new[id(code)] = (text, _lines_of(code))
        return code

    def placing(code: CodeType, delta: int, filename: str) -> CodeType:
        if id(code) in new:
            text, lines = new[id(code)]
            placed.append((text, lines, delta, filename))
        return moved(code, delta, filename)

    script_code._block_code, script_code._moved = first_compile, placing  # type: ignore[assignment]
    executed: set[tuple[str, int]] = set()

    def on_line(frame: FrameType, event: str, arg: Any) -> Callable[..., Any]:
        if event == "line":
            executed.add((frame.f_code.co_filename, frame.f_lineno))
        return on_line

    def on_call(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if not frame.f_code.co_filename.startswith("<pypto-lsp"):
            return None
        executed.add((frame.f_code.co_filename, frame.f_lineno))
        return on_line

    tensors = {k: v for k, v in load_bundle(folder / "tensors.pt").items() if isinstance(v, torch.Tensor)}
    expected = load_bundle(folder / "expected.pt")
    files = sorted((folder / "passes_dump").glob("*.py"))
    sys.settrace(on_call)
    threading.settrace(on_call)
    try:
        validate_files(files, tensors, expected, settings=RunSettings(timeout_s=0), jobs=1, use_cache=False)
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        script_code._block_code, script_code._moved = block_code, moved  # type: ignore[assignment]
    texts: list[str] = []
    lines = ran = nbytes = ran_bytes = 0
    seen: set[str] = set()
    for text, numbers, delta, filename in placed:
        if text in seen:
            continue
        seen.add(text)
        texts.append(text)
        rows = text.split("\n")
        for n in numbers:
            width = len(rows[n - 1]) if 0 < n <= len(rows) else 0
            lines += 1
            nbytes += width
            if (filename, n + delta) in executed:
                ran += 1
                ran_bytes += width
    return texts, lines, ran, nbytes, ran_bytes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=QWEN3, help="a case folder (passes_dump/, tensors.pt, expected.pt)")
    ap.add_argument("--rounds", type=int, default=5, help="best of this many (default 5)")
    args = ap.parse_args()
    texts, lines, ran, nbytes, ran_bytes = collect(args.folder)
    names: dict[str, str] = {}

    def short(m: re.Match[str]) -> str:
        return names.setdefault(m.group(0), f"_{len(names):x}")

    shortened = [re.sub(r"\b_pl_\w+", short, t) for t in texts]
    trees = [ast.parse(t) for t in texts]

    def best(fn: Callable[[], object]) -> float:
        # timeit turns the collector off while it times: the parsed trees are millions of objects,
        # and a collection walking them is no part of compile
        return min(timeit.repeat(fn, number=1, repeat=args.rounds))

    rows = {
        "compile() of the text": best(lambda: [compile(t, "<block>", "exec") for t in texts]),
        "ast.parse alone": best(lambda: [ast.parse(t) for t in texts]),
        "compile() of a parsed ast.Module": best(lambda: [compile(t, "<block>", "exec") for t in trees]),
        "compile(), _pl_ names shortened": best(lambda: [compile(t, "<block>", "exec") for t in shortened]),
    }
    size = sum(map(len, texts))
    print(f"{args.folder.name}: {len(texts)} blocks compiled for the first time in the folder's first run, {size / 1e3:.0f} kB")
    print(f"(shortened: {sum(map(len, shortened)) / 1e3:.0f} kB); best of {args.rounds}:")
    for label, sec in rows.items():
        print(f"  {label:<36}{sec * 1e3:8.1f} ms")
    print(
        f"lines of compiled code the run executed: {ran} of {lines} ({ran / max(lines, 1):.0%}), {ran_bytes / max(nbytes, 1):.0%} of their bytes"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
