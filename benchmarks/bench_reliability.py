"""Reliability figures (issue 12): linear-time text handling, and the server on a large folder.

    python benchmarks/bench_reliability.py [--files 2000] [--sizes 150000,1500000,5000000] [--skip-server]

1. A dump with a long run of spaces inside a call (the input that once made the cache-key
   normalisation backtrack for minutes): parse and normalise time at three sizes up to 5 MB,
   and the time per MB, which stays flat when the growth is linear.
2. ``pypto-lsp.validateFolder`` through the real server (stdio, its worker) on a generated
   folder of ``--files`` dumps (the 50 passes of ``example_elementwise_chunked_add`` repeated,
   named ``0_after_P0.py`` .. so that numeric order matters; from the middle on every dump
   carries a bug, so half of them publish diagnostics), against ``pypto-lsp validate`` on the
   same folder; both with the result cache off. While the folder runs, a hover request every
   50 ms on an open dump: its latency p50/p95. Goals: server total <= 2x the CLI's, p95 <= 100 ms.

Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures"
CASE = FIXTURES / "example_elementwise_chunked_add"
sys.path.insert(0, str(ROOT))


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


# ---------------------------------------------------------------------- 1. whitespace


def whitespace_dump(n: int) -> str:
    src = (CASE / "passes_dump" / "00_frontend.py").read_text()
    return src.replace("pl.tile.add(tile_a, tile_b)", "pl.tile.add(tile_a," + " " * n + "tile_b)")


def bench_whitespace(sizes: list[int]) -> None:
    from pypto_lsp.ir.parser import parse_text
    from pypto_lsp.validate.folders import ResultCache, normalise

    print("== a dump with a long run of spaces inside a call: parse + normalise (the cache key) ==")
    print(f"{'size':>10} {'parse':>10} {'normalise':>10} {'cache key':>10} {'total/MB':>10}")
    cache = ResultCache(enabled=False)
    for n in sizes:
        text = whitespace_dump(n)
        best = [float("inf")] * 3
        for _ in range(3):
            t0 = time.perf_counter()
            res = parse_text(text, "ws.py")
            t1 = time.perf_counter()
            normalise(text)
            t2 = time.perf_counter()
            cache.key(text, "b", 0.05, 0.05, None)
            t3 = time.perf_counter()
            best = [min(a, b) for a, b in zip(best, (t1 - t0, t2 - t1, t3 - t2), strict=True)]
        assert res.program is not None
        mb = len(text) / 1e6
        print(
            f"{len(text) / 1000:>8.0f}kB {best[0] * 1000:>8.1f}ms {best[1] * 1000:>8.1f}ms {best[2] * 1000:>8.1f}ms "
            f"{sum(best) * 1000 / mb:>8.1f}ms"
        )


# ---------------------------------------------------------------------- 2. server folder


def make_folder(root: Path, n: int) -> Path:
    srcs = sorted((CASE / "passes_dump").glob("*.py"))
    dumps = root / "big" / "passes_dump"
    dumps.mkdir(parents=True)
    for name in ("tensors.pt", "expected.pt"):
        shutil.copyfile(CASE / name, root / "big" / name)
    for i in range(n):
        text = srcs[i % len(srcs)].read_text()
        if i >= n // 2:
            text = text.replace("pl.tile.add(", "pl.tile.sub(")  # a bug from the middle on
        (dumps / f"{i}_after_P{i}.py").write_text(text + f"# copy {i}\n")
    return dumps


def cli_run(folder: Path, cache: Path) -> tuple[float, dict[str, Any]]:
    env = {**os.environ, "PYPTO_LSP_CACHE_DIR": str(cache)}
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "pypto_lsp", "validate", str(folder), "--json", "--no-cache", "--no-localize"],
        capture_output=True,
        text=True,
        env=env,
    )
    wall = time.perf_counter() - t0
    return wall, json.loads(p.stdout)


async def server_run(folder: Path, cache: Path) -> dict[str, Any]:
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient
    from pygls.protocol import JsonRPCNotification, default_converter

    def conv() -> Any:
        c = default_converter()
        c.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(**obj))
        return c

    client = LanguageClient("bench-reliability", "1", converter_factory=conv)
    results: list[float] = []
    pending_results = asyncio.Event()

    @client.feature("pypto-lsp/fileResult")
    def on_result(params: Any) -> None:
        results.append(time.perf_counter())
        pending_results.set()

    for method in (types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, types.WINDOW_LOG_MESSAGE, types.PROGRESS):
        client.feature(method)(lambda params: None)
    for method in (types.WINDOW_WORK_DONE_PROGRESS_CREATE, types.WORKSPACE_CODE_LENS_REFRESH, types.CLIENT_REGISTER_CAPABILITY):
        client.feature(method)(lambda params: None)

    env = {**os.environ, "PYPTO_LSP_CACHE_DIR": str(cache)}
    await client.start_io(sys.executable, *os.environ.get("BENCH_PROFILE", "").split(), "-m", "pypto_lsp", "serve", env=env)
    caps = types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=True),
        workspace=types.WorkspaceClientCapabilities(code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True)),
    )
    await client.initialize_async(
        types.InitializeParams(capabilities=caps, root_uri=folder.parent.as_uri(), initialization_options={"pypto-lsp": {"cache": False}})
    )
    client.initialized(types.InitializedParams())
    # an open dump to ask about while the folder runs (the worker is warm after its first result)
    probe = folder / "3_after_P3.py"
    probe_uri = probe.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(probe_uri, "python", 1, probe.read_text())))
    deadline = time.monotonic() + 120
    while not results and time.monotonic() < deadline:
        pending_results.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(pending_results.wait(), 1)
    results.clear()
    lines = probe.read_text().splitlines()
    line = next(i for i, t in enumerate(lines) if "tile_a" in t and "=" in t)
    col = lines[line].index("tile_a")

    t0 = time.perf_counter()
    run = asyncio.ensure_future(
        client.protocol.send_request_async(
            types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams(command="pypto-lsp.validateFolder", arguments=[folder.as_uri()])
        )
    )
    lat: list[float] = []
    while not run.done():
        s = time.perf_counter()
        await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(probe_uri), types.Position(line, col)))
        lat.append(time.perf_counter() - s)
        await asyncio.sleep(0.05)
    answer = run.result()
    total = time.perf_counter() - t0
    files = answer.files if hasattr(answer, "files") else answer["files"]
    first = answer.first_divergent if hasattr(answer, "first_divergent") else answer["first_divergent"]
    await client.shutdown_async(None)
    client.exit(None)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.stop(), 10)
    return {"total": total, "files": len(files), "first_divergent": first, "latency": lat}


def bench_server(n: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="pypto-lsp-bench-rel-"))
    try:
        folder = make_folder(tmp, n)
        cli_wall, report = cli_run(folder, tmp / "cache")
        s = report["summary"]
        print(f"\n== {n} generated dumps, result cache off ==")
        print(
            f"CLI    pypto-lsp validate:       {cli_wall:7.2f} s  ({s['pass']} pass, {s['fail']} fail, {s['error']} error; "
            f"first divergent {Path(report['first_divergent']).name})"
        )
        out = asyncio.run(server_run(folder, tmp / "cache"))
        lat = [x * 1000 for x in out["latency"]]
        print(
            f"server pypto-lsp.validateFolder: {out['total']:7.2f} s  ({out['files']} files; "
            f"first divergent {Path(out['first_divergent']).name if out['first_divergent'] else None})"
        )
        print(f"server / CLI: {out['total'] / cli_wall:.2f}x (goal <= 2x)")
        print(
            f"hover during the run: n={len(lat)} p50 {pct(lat, 50):.1f} ms  p95 {pct(lat, 95):.1f} ms  "
            f"max {max(lat) if lat else float('nan'):.1f} ms (goal p95 <= 100 ms)"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--sizes", default="150000,1500000,5000000")
    ap.add_argument("--skip-server", action="store_true")
    args = ap.parse_args()
    if not CASE.is_dir():
        print(f"no fixtures at {FIXTURES}; nothing to measure")
        return 0
    bench_whitespace([int(x) for x in args.sizes.split(",")])
    if not args.skip_server:
        bench_server(args.files)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
