"""Parse + static-check time per file over every shared fixture dump.

    python benchmarks/bench_parse.py

Prints the median and the max over all files, each parsed with no line known
(``ir/line_reuse``: every kept line forgotten first), and the largest file on its own
(best of 10). Then what known lines buy: each folder parsed in pass order as ``validate`` does
(cold, then with the lines of the dumps before known), and the largest dump parsed again as
the language server does after an edit (the same text; a line inserted at its top; its last
statement edited). No asserts.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT.parent / "shared" / "fixtures"


def one(text: str, known: bool = False) -> float:
    from pypto_lsp.ir import line_reuse
    from pypto_lsp.ir.check import check_program
    from pypto_lsp.ir.parser import parse_text

    if not known:
        line_reuse.forget()
    t0 = time.perf_counter()
    res = parse_text(text)
    if res.program is not None:
        check_program(res.program)
    return time.perf_counter() - t0


def _timed(fn, *args) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def main() -> int:
    files = sorted(FIXTURES.glob("**/passes_dump/*.py"))
    if not files:
        print(f"no fixtures at {FIXTURES}")
        return 0
    texts = [(f, f.read_text()) for f in files]
    one(texts[0][1])  # warm imports
    times = [(min(one(t) for _ in range(2)), f, len(t)) for f, t in texts]
    vals = [t for t, _, _ in times]
    largest = max(texts, key=lambda ft: len(ft[1]))
    import ast
    import gc

    gc.collect()
    best = min(one(largest[1]) for _ in range(10))
    ast_best = min(_timed(ast.parse, largest[1]) for _ in range(10))
    worst = max(times)
    folders, reuse = _folders(texts), _edits(largest[1])
    print(f"files: {len(files)}")
    print(
        f"parse+check median: {statistics.median(vals) * 1e3:.2f} ms, p95: {sorted(vals)[int(0.95 * len(vals))] * 1e3:.2f} ms, max: {worst[0] * 1e3:.2f} ms ({worst[1].relative_to(FIXTURES)})"
    )
    print(
        f"largest dump {largest[0].relative_to(FIXTURES)} ({len(largest[1]) / 1024:.1f} KiB): {best * 1e3:.2f} ms (best of 10); "
        f"Python's own ast.parse of it alone: {ast_best * 1e3:.2f} ms (ratio {best / ast_best:.2f})"
    )
    print(folders)
    print(reuse)
    return 0


def _folders(texts: list[tuple[Path, str]]) -> str:
    """Every folder's dumps parsed (parse only) in order, with no line known and with the lines of the dumps before known."""
    from pypto_lsp.ir import line_reuse
    from pypto_lsp.ir.parser import parse_text

    by_folder: dict[Path, list[str]] = {}
    for f, t in texts:
        by_folder.setdefault(f.parent, []).append(t)
    cold = warm = 0.0
    for _ in range(3):  # interleaved rounds, the best of each
        c = w = 0.0
        for dumps in by_folder.values():
            for t in dumps:
                line_reuse.forget()
                c += _timed(parse_text, t)
            line_reuse.forget()
            for t in dumps:
                w += _timed(parse_text, t)
        cold, warm = (c, w) if not cold else (min(cold, c), min(warm, w))
    n = len(texts)
    return (
        f"{len(by_folder)} folders in pass order, parse only: {cold * 1e3:.0f} ms with no line known, "
        f"{warm * 1e3:.0f} ms with the lines of the dumps before known ({warm / cold:.2f}x; {warm / n * 1e3:.2f} ms a dump)"
    )


def _edits(text: str) -> str:
    """The language server's parse after an edit of the largest dump (best of 10 each)."""
    from pypto_lsp.ir import line_reuse
    from pypto_lsp.ir.parser import parse_text

    lines = text.split("\n")
    last = max(i for i, ln in enumerate(lines) if ln.strip().startswith("return "))
    inserted = "\n".join([*lines[:3], "", *lines[3:]])
    edited = "\n".join([*lines[:last], lines[last] + "  ", *lines[last + 1 :]])

    def after(new: str) -> float:
        line_reuse.forget()
        parse_text(text)
        return _timed(parse_text, new)

    cold = min(_timed(lambda: (line_reuse.forget(), parse_text(text))) for _ in range(10))
    same = min(after(text) for _ in range(10))
    top = min(after(inserted) for _ in range(10))
    end = min(after(edited) for _ in range(10))
    return (
        f"largest dump parsed again (parse only): no line known {cold * 1e3:.2f} ms; the same text {same * 1e3:.2f} ms; "
        f"a line inserted at its top {top * 1e3:.2f} ms; its last return edited {end * 1e3:.2f} ms"
    )


if __name__ == "__main__":
    raise SystemExit(main())
