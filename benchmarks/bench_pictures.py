"""Pictures: how long until the pass chart's and the error map's data are ready, once results exist.

    python benchmarks/bench_pictures.py

* pass chart of the 50 ``qwen3_scope3_910b`` dumps (shared fixtures), from their results:
  what ``pypto-lsp/passChart`` does (results to chart data, IR-unchanged check of every pair
  of passes) plus the JSON encoding; best of 5.
* error map of a [512, 4096] FP32 output written by 64 [64, 512] tile stores (a generated
  dump with a wrong row offset in one load): the dump re-run with its stores recorded, the
  binned map (128 x 128 cells), the JSON encoding: what ``pypto-lsp/errorMap`` does in the
  worker; best of 5, with a plain validation run of the same dump for comparison.
* with Debian's chromium: the report of that map and chart drawn in headless Chromium
  (``data-render-ms``, time from the data to the drawn SVG).

The target is 500 ms from results to data. No asserts: figures only.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT.parent / "shared" / "fixtures"
QWEN = FIXTURES / "qwen3_scope3_910b"

R, C, TR, TC = 512, 4096, 64, 512

BIG_DUMP = f"""# pypto.program: BigExpAddMul
import pypto.language as pl

@pl.program
class BigExpAddMul:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def big_incore_0(x__ssa_v0: pl.Tensor[[{R}, {C}], pl.FP32], y__ssa_v0: pl.Tensor[[{R}, {C}], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[{R}, {C}], pl.FP32]]) -> pl.Tensor[[{R}, {C}], pl.FP32]:
        for r__idx_v0, (out__iter_v1,) in pl.range(0, {R}, {TR}, init_values=(out__ssa_v0,)):
            for c__idx_v0, (out__iter_v2,) in pl.range(0, {C}, {TC}, init_values=(out__iter_v1,)):
                x_t: pl.Tile[[{TR}, {TC}], pl.FP32, pl.Mem.Vec] = pl.tile.load(x__ssa_v0, [r__idx_v0, c__idx_v0], [{TR}, {TC}], [{TR}, {TC}], target_memory=pl.Mem.Vec)
                y_t: pl.Tile[[{TR}, {TC}], pl.FP32, pl.Mem.Vec] = pl.tile.load(y__ssa_v0, [0, c__idx_v0], [{TR}, {TC}], [{TR}, {TC}], target_memory=pl.Mem.Vec)
                t_t: pl.Tile[[{TR}, {TC}], pl.FP32, pl.Mem.Vec] = pl.tile.adds(x_t, 1.0)
                p_t: pl.Tile[[{TR}, {TC}], pl.FP32, pl.Mem.Vec] = pl.tile.mul(t_t, y_t)
                out__tile: pl.Tensor[[{R}, {C}], pl.FP32] = pl.tile.store(p_t, [r__idx_v0, c__idx_v0], out__iter_v2)
                out__rv_v3: pl.Tensor[[{R}, {C}], pl.FP32] = pl.yield_(out__tile)
            out__rv_v2: pl.Tensor[[{R}, {C}], pl.FP32] = pl.yield_(out__rv_v3)
        return out__ssa_v0
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def big(self, x__ssa_v0: pl.Tensor[[{R}, {C}], pl.FP32], y__ssa_v0: pl.Tensor[[{R}, {C}], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[{R}, {C}], pl.FP32]]) -> pl.Tensor[[{R}, {C}], pl.FP32]:
        out__rv_v2: pl.Tensor[[{R}, {C}], pl.FP32] = self.big_incore_0(x__ssa_v0, y__ssa_v0, out__ssa_v0)
        return out__rv_v2
"""


def best(fn, n: int = 5) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    out = None
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> int:
    import torch

    from pypto_lsp.validate.engine import configure_torch, run_text
    from pypto_lsp.validate.errormap import error_maps
    from pypto_lsp.validate.passchart import pass_chart
    from pypto_lsp.validate.passes import validate_passes

    configure_torch()
    chart = None
    if QWEN.is_dir():
        report = validate_passes(QWEN / "passes_dump")
        rows = [f.to_json() for f in report.files]
        texts = {f.file: Path(f.file).read_text() for f in report.files}
        fd = report.first_divergent.file if report.first_divergent else None
        t, chart = best(lambda: json.dumps(pass_chart(rows, fd, texts), separators=(",", ":")))
        print(f"pass chart, qwen3_scope3_910b ({len(rows)} passes): {t * 1000:.1f} ms (JSON {len(chart) / 1024:.0f} KiB)")  # type: ignore[arg-type]
        t, _ = best(lambda: json.dumps(pass_chart(rows, fd)))
        print(f"pass chart, same, dump texts read from disk: {t * 1000:.1f} ms")
    else:
        print(f"pass chart: skipped (no {QWEN})")

    g = torch.Generator().manual_seed(0)
    x = torch.randn(R, C, generator=g)
    y = torch.randn(R, C, generator=g)
    ins = {"x": x, "y": y, "out": torch.zeros(R, C)}
    exp = {"out": (x + 1.0) * y}
    t_run, fr = best(lambda: run_text(BIG_DUMP, ins, exp, filename="big.py", rtol=5e-2, atol=5e-2))
    print(f"[{R}, {C}] output, {R // TR * (C // TC)} tile stores: plain validation run {t_run * 1000:.1f} ms ({fr.status})")  # type: ignore[attr-defined]

    def make_map() -> str:
        res = error_maps(BIG_DUMP, ins, exp, filename="big.py", rtol=5e-2, atol=5e-2, only_failing=True)
        return json.dumps(res, separators=(",", ":"))  # as the worker protocol sends it

    t_map, js = best(make_map)
    res = json.loads(js)  # type: ignore[arg-type]
    m = res["maps"][0]
    print(
        f"error map [{R}, {C}]: {t_map * 1000:.1f} ms from results to JSON (re-run with stores recorded {res['run_seconds'] * 1000:.1f} ms; "
        f"{m['grid'][0]}x{m['grid'][1]} cells of {m['bin'][0]}x{m['bin'][1]}, {len(m['tiles'])} tiles, JSON {len(js) / 1024:.0f} KiB)"  # type: ignore[arg-type]
    )

    chromium = shutil.which("chromium")
    if chromium is None:
        print("drawing: skipped (no chromium)")
        return 0
    from pypto_lsp.validate.html_report import _json_script, asset_text

    data = {"chart": json.loads(chart) if chart else None, "maps": res["maps"]}  # type: ignore[arg-type]
    scripts = "".join(f"<script>{asset_text(n)}</script>" for n in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js", "render.js"))
    page = (
        "<!DOCTYPE html><html><body><div id='pictures'></div>"
        f"<script type='application/json' id='d'>{_json_script(data)}</script>{scripts}"
        "<script>pyptoPictures.renderAll(document.getElementById('pictures'), JSON.parse(document.getElementById('d').textContent));</script>"
        "</body></html>"
    )
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "bench.html"
        f.write_text(page, encoding="utf-8")
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=60000", "--dump-dom", f.as_uri()]
        dom = subprocess.run(cmd, capture_output=True, text=True, timeout=180).stdout
    import re

    ms = re.search(r'data-render-ms="(\d+)"', dom)
    print(f"drawing the 50-pass chart and the [{R}, {C}] map in headless Chromium: {ms.group(1) + ' ms' if ms else 'not drawn'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
