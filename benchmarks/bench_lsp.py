"""Language-server latencies, measured through a real LSP session over stdio.

    python benchmarks/bench_lsp.py [--saves 20] [--requests 100]
    python benchmarks/bench_lsp.py --case DIR --goldens DIR [--target FILE] [--memory on|off] [--saves N]

1. didSave -> publishDiagnostics for the largest ``qwen3_scope3_910b`` dump
   (``32_after_InitMemRef.py``) with a warm worker and the result cache off: each round
   edits a comment (didChange), waits for the as-you-type parse to settle, writes the
   file, sends didSave and times the publish that carries the validation (also the
   ``pypto-lsp/fileResult`` that follows it, and the worker's own run time).
2. hover and codeLens latency on that file while ``pypto-lsp.validateFolder`` runs
   over another copy of the 50-file folder.

Prints p50/p95 (goals: save p50 <= 150 ms; hover/codeLens p95 <= 50 ms while a folder
runs). No asserts.

``--case`` (a folder holding ``passes_dump/``) with ``--goldens`` (a folder holding
``tensors.pt`` and ``expected.pt``, e.g. the scale goldens ``make_goldens.py`` writes) measures
part 1 alone on that case's ``--target`` (default: its last dump), with ``--memory``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.protocol import JsonRPCNotification, default_converter

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures"
QWEN = FIXTURES / "qwen3_scope3_910b"
TARGET = "32_after_InitMemRef.py"


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def fmt(label: str, xs: list[float]) -> str:
    ms = [x * 1000 for x in xs]
    return f"{label:<52} n={len(ms):<4} p50 {pct(ms, 50):7.1f} ms   p95 {pct(ms, 95):7.1f} ms   max {max(ms):7.1f} ms"


def _converter() -> Any:
    conv = default_converter()
    conv.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(**obj))
    return conv


class Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("bench-lsp", "1", converter_factory=_converter)
        self.events: list[tuple[float, str, Any]] = []
        self.changed = asyncio.Event()

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diags(params: types.PublishDiagnosticsParams) -> None:
            self.events.append((time.perf_counter(), "diagnostics", params))
            self.changed.set()

        @self.feature("pypto-lsp/fileResult")
        def on_result(params: Any) -> None:
            self.events.append((time.perf_counter(), "fileResult", params))
            self.changed.set()

        @self.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params: types.LogMessageParams) -> None:
            pass

        @self.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def on_progress_create(params: Any) -> None:
            return None

        @self.feature(types.PROGRESS)
        def on_progress(params: Any) -> None:
            pass

        @self.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def on_refresh(params: Any) -> None:
            return None

        @self.feature(types.CLIENT_REGISTER_CAPABILITY)
        def on_register(params: Any) -> None:
            return None

    async def wait_for(self, pred: Any, timeout: float = 120.0) -> tuple[float, str, Any]:
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for ev in self.events[seen:]:
                if pred(ev):
                    return ev
            seen = len(self.events)
            self.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no matching event")
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except asyncio.TimeoutError:
                pass


def uri_of(ev: tuple[float, str, Any]) -> str:
    p = ev[2]
    return p.uri if hasattr(p, "uri") else p.get("uri")


async def bench(
    saves: int, requests: int, case: Path = QWEN, goldens: Path = QWEN, target: str = TARGET, memory: bool = True, folder: bool = True
) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="pypto-lsp-bench-"))
    try:
        ws = tmp / "qwen3"
        ws.mkdir()
        (ws / "passes_dump").mkdir()
        for name in ("tensors.pt", "expected.pt"):
            shutil.copyfile(goldens / name, ws / name)
        shutil.copyfile(case / "passes_dump" / target, ws / "passes_dump" / target)
        other = tmp / "qwen3_other"
        if folder:
            shutil.copytree(QWEN, other)
            for p in other.rglob("*"):
                p.chmod(p.stat().st_mode | 0o200)
        path = ws / "passes_dump" / target
        uri = path.as_uri()

        client = Client()
        env = {**os.environ, "PYPTO_LSP_CACHE_DIR": str(tmp / "cache")}
        await client.start_io(sys.executable, "-m", "pypto_lsp", "serve", env=env)
        caps = types.ClientCapabilities(
            window=types.WindowClientCapabilities(work_done_progress=True),
            workspace=types.WorkspaceClientCapabilities(code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True)),
        )
        t0 = time.perf_counter()
        await client.initialize_async(
            types.InitializeParams(
                capabilities=caps,
                root_uri=tmp.as_uri(),
                initialization_options={"pypto-lsp": {"cache": False, "memory": memory}},
            )
        )
        client.initialized(types.InitializedParams())
        print(f"initialize: {1000 * (time.perf_counter() - t0):.0f} ms")

        text = path.read_text()
        version = 1
        client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", version, text)))
        t0 = time.perf_counter()
        first = await client.wait_for(lambda e: e[1] == "fileResult" and uri_of(e) == uri, 300)
        print(f"first validation after open (worker start + torch import + run): {first[0] - t0:.2f} s, status {first[2]['status']}")

        # ---- 1. didSave -> publishDiagnostics
        lat_diag: list[float] = []
        lat_result: list[float] = []
        worker_run: list[float] = []
        for i in range(saves + 2):
            version += 1
            new = text + f"# bench edit {i}\n"
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    [types.TextDocumentContentChangeWholeDocument(text=new)],
                )
            )
            await asyncio.sleep(0.4)  # the user stops typing; the as-you-type parse publishes
            path.write_text(new)
            n = len(client.events)
            t0 = time.perf_counter()
            client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
            res = await client.wait_for(lambda e, n=n: e[1] == "fileResult" and uri_of(e) == uri and client.events.index(e) >= n)
            diag = next(e for e in client.events[n:] if e[1] == "diagnostics" and uri_of(e) == uri)
            if i >= 2:  # two warm-up rounds
                lat_diag.append(diag[0] - t0)
                lat_result.append(res[0] - t0)
                worker_run.append(float(res[2]["seconds"]))
        load = os.getloadavg()[0]
        print(f"\n== didSave -> publishDiagnostics, {target} ({len(text) / 1000:.0f} kB), warm worker, cache off, load {load:.1f} ==")
        print(fmt("didSave -> publishDiagnostics", lat_diag))
        print(fmt("didSave -> pypto-lsp/fileResult", lat_result))
        print(fmt("  of which the worker's run (FileResult.seconds)", worker_run))

        # ---- 2. hover / codeLens while validateFolder runs elsewhere
        if not folder:
            await client.shutdown_async(None)
            client.exit(None)
            await asyncio.sleep(0.5)
            await client.stop()
            return
        lines = path.read_text().splitlines()
        hover_pos = [
            (i, line.index(":") - 2) for i, line in enumerate(lines) if "__ssa_v" in line and ":" in line and line.startswith("        ")
        ][:50]
        folder_uri = (other / "passes_dump").as_uri()
        run = asyncio.ensure_future(
            client.protocol.send_request_async(
                types.WORKSPACE_EXECUTE_COMMAND,
                types.ExecuteCommandParams(command="pypto-lsp.validateFolder", arguments=[folder_uri]),
                msg_id="bench-folder",
            )
        )
        await client.wait_for(lambda e: e[1] == "fileResult" and "qwen3_other" in uri_of(e), 120)
        lat_hover: list[float] = []
        lat_lens: list[float] = []
        k = 0
        while not run.done() and len(lat_hover) < requests:
            line, col = hover_pos[k % len(hover_pos)]
            k += 1
            t0 = time.perf_counter()
            await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, max(col, 0))))
            lat_hover.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await client.text_document_code_lens_async(types.CodeLensParams(types.TextDocumentIdentifier(uri)))
            lat_lens.append(time.perf_counter() - t0)
            await asyncio.sleep(0.05)
        done_files = sum(1 for e in client.events if e[1] == "fileResult" and "qwen3_other" in uri_of(e))
        print(f"\n== while validateFolder runs over 50 other files ({done_files} validated during the sample) ==")
        print(fmt("hover", lat_hover))
        print(fmt("codeLens", lat_lens))
        if not run.done():
            client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="bench-folder"))
        with contextlib.suppress(Exception):
            await asyncio.wait_for(run, 60)
        # memory: the worker holds one copy of each golden bundle, shared by every file it runs
        with contextlib.suppress(Exception):
            info = await client.protocol.send_request_async("pypto-lsp/debugInfo", {})
            get = info.get if isinstance(info, dict) else lambda k: getattr(info, k, None)
            pids = {"server": get("pid") or client_server_pid(client), "worker": get("worker_pid")}
            print("\n== memory (peak resident set, VmHWM) ==")
            for label, pid in pids.items():
                if pid:
                    print(f"{label:<8} pid {pid}: {peak_rss_mb(int(pid)):.0f} MB")
        await client.shutdown_async(None)
        client.exit(None)
        await asyncio.sleep(0.5)
        await client.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def client_server_pid(client: object) -> int | None:
    proc = getattr(client, "_server", None)
    return getattr(proc, "pid", None)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--saves", type=int, default=20)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--case", type=Path, default=None, help="a folder holding passes_dump/ (part 1 only)")
    ap.add_argument("--goldens", type=Path, default=None, help="the folder holding its tensors.pt and expected.pt")
    ap.add_argument("--target", default=None, help="the dump file name (default: the case's last)")
    ap.add_argument("--memory", choices=("on", "off"), default="on")
    args = ap.parse_args()
    if not QWEN.is_dir():
        print(f"no fixtures at {FIXTURES}; nothing to measure")
        return 0
    if args.case is not None:
        target = args.target or sorted(p.name for p in (args.case / "passes_dump").glob("*.py"))[-1]
        goldens = args.goldens or args.case
        asyncio.run(bench(args.saves, args.requests, args.case, goldens, target, args.memory == "on", folder=False))
        return 0
    asyncio.run(bench(args.saves, args.requests, memory=args.memory == "on"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
