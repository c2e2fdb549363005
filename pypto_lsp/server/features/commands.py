"""``workspace/executeCommand``: the ``pypto-lsp.*`` commands, and the ``pypto-lsp/debugInfo`` request.

Every command takes ``[uri]`` (a dump file; for ``validateFolder`` also a folder):

* ``pypto-lsp.validateFile`` -> the FileResult JSON + ``uri`` + ``first_divergent``;
* ``pypto-lsp.validateFolder`` -> ``{"files": [...], "first_divergent": uri | null,
  "cancelled": bool}``, with work-done progress per pass (``k/N <file>``), cancellable
  through ``$/cancelRequest`` and the progress' cancel button; diagnostics are
  published for the files that fail or error;
* ``pypto-lsp.firstDivergentPass`` -> ``{"uri", "range"}`` or null (validates the
  folder first when some of its results are unknown);
* ``pypto-lsp.showGeneratedCode`` -> the PyTorch script (made in the worker: the
  code generator consults the torch runtime's kernel table);
* ``pypto-lsp.showConfig`` -> the resolved configuration, interpreter and versions;
* ``pypto-lsp.writeGoldenCase`` (its own module, :mod:`.golden_case`).

``pypto-lsp.compareWithPrevious`` and ``pypto-lsp.configureGolden`` (lens commands; the latter's
file dialogs end in ``writeGoldenCase``) are implemented by the VS Code extension and deliberately not advertised here.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from ... import __version__
from ...worker import protocol as P
from .. import results as R
from ..contract import DEBUG_INFO, FIRST_DIVERGENT_PASS, SHOW_CONFIG, SHOW_GENERATED_CODE, VALIDATE_FILE, VALIDATE_FOLDER
from ..core import Core
from ..documents import path_to_uri, uri_to_path
from ..lsp import PyptoServer
from ..validation import NotADump, file_result_json, folder_files


def _uri_arg(args: tuple[Any, ...]) -> str:
    if not args:
        raise JsonRpcInvalidParams("expected [uri]")
    a = args[0]
    if isinstance(a, dict):
        a = a.get("uri")
    if not isinstance(a, str) or not a:
        raise JsonRpcInvalidParams(f"expected a document URI, got {a!r}")
    if "://" not in a and a.startswith("/"):
        a = path_to_uri(a)  # a plain path is forgiven
    return a


def _path_arg(uri: str) -> Path:
    p = uri_to_path(uri)
    if p is None:
        raise JsonRpcInvalidParams(f"not a file URI: {uri}")
    return p


def _skipped(uri: str, path: Path, kind: str, message: str) -> dict[str, Any]:
    return {
        "uri": uri,
        "file": str(path),
        "status": "skipped",
        "tensors": {},
        "error": {"kind": kind, "message": message, "line": None, "column": None},
        "seconds": 0.0,
        "cached": False,
        "first_divergent": None,
    }


class _Progress:
    """Server-initiated work-done progress when the client supports it, else nothing."""

    def __init__(self, ls: PyptoServer, cancel: asyncio.Event) -> None:
        self.ls = ls
        self.cancel = cancel
        self.token: str | None = None

    async def begin(self, title: str, message: str) -> None:
        ls = self.ls
        win = ls.client_capabilities.window if ls.client_capabilities else None
        if not (win and win.work_done_progress):
            return
        token = f"pypto-lsp/{uuid.uuid4()}"
        try:
            await asyncio.wait_for(ls.work_done_progress.create_async(token), 5.0)
        except Exception as exc:
            ls.log(f"no work-done progress: {exc}")
            return
        self.token = token
        ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True, message=message, percentage=0))
        fut = ls.work_done_progress.tokens.get(token)
        if fut is not None:
            loop = asyncio.get_running_loop()
            fut.add_done_callback(lambda f: loop.call_soon_threadsafe(self.cancel.set) if f.cancelled() else None)

    def report(self, k: int, n: int, name: str) -> None:
        if self.token is not None:
            pct = int(100 * k / n) if n else 100
            self.ls.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=f"{k}/{n} {name}", percentage=pct, cancellable=True)
            )

    def end(self, message: str) -> None:
        if self.token is not None:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
            self.ls.work_done_progress.tokens.pop(self.token, None)
            self.token = None


async def run_folder(ls: PyptoServer, core: Core, target: Path) -> dict[str, Any]:
    """Validate ``target``'s folder with progress; cancellable by request or progress cancel."""
    try:
        files = folder_files(target)
    except (OSError, ValueError) as exc:
        raise JsonRpcInvalidParams(str(exc)) from exc
    if not files:
        raise JsonRpcInvalidParams(f"no pass dumps in {target}")
    folder = files[0].parent
    cancel = core.validator.begin_folder_run(folder)  # a newer run of the same folder supersedes this one
    msg_id = ls.protocol.msg_id
    if msg_id is not None:
        ls.cancel_hooks[msg_id] = cancel.set
    progress = _Progress(ls, cancel)
    await progress.begin(f"Validating {folder.parent.name}/{folder.name}", f"0/{len(files)}")
    result: dict[str, Any] | None = None
    try:
        result = await core.validator.validate_folder(folder, on_progress=progress.report, cancel_event=cancel)
        return result
    finally:
        if msg_id is not None:
            ls.cancel_hooks.pop(msg_id, None)
        core.validator.end_folder_run(folder, cancel)
        if result is None:
            progress.end("cancelled")
        else:
            n_bad = sum(1 for f in result["files"] if f["status"] in ("fail", "error"))
            what = "cancelled" if result.get("cancelled") else result.get("error") or f"{len(result['files'])} passes, {n_bad} failing"
            progress.end(what)
        core.log(f"validateFolder {folder}: {'cancelled' if result is None or result.get('cancelled') else 'done'}")


def register(ls: PyptoServer, core: Core) -> None:
    validator = core.validator

    @ls.command(VALIDATE_FILE)
    async def validate_file(*args: Any) -> dict[str, Any]:
        uri = _uri_arg(args)
        path = _path_arg(uri)
        try:
            validator.snapshot(uri)  # a pass dump that exists, or an error for the caller
        except (NotADump, OSError) as exc:
            raise JsonRpcInvalidParams(str(exc)) from exc
        st = core.docs.get(uri)
        resolved = core.config.get(path)
        if not resolved.validation:
            return _skipped(uri, path, "disabled", "validation is off (setting pypto-lsp.validation)")
        if resolved.error:
            return _skipped(uri, path, "config", resolved.error)
        if not resolved.has_goldens:
            if st is not None:
                validator.prepare(st, resolved)
            return _skipped(uri, path, "no-golden", f"no golden tensors for {path.parent}")
        fr = await validator.validate_uri(uri, "command")
        if fr is None:
            return _skipped(uri, path, "skipped", "not validated")
        fd = validator.first_divergent(path.parent)
        return file_result_json(fr, uri, fd.uri if fd else None)

    @ls.command(VALIDATE_FOLDER)
    async def validate_folder(*args: Any) -> dict[str, Any]:
        uri = _uri_arg(args)
        return await run_folder(ls, core, _path_arg(uri))

    @ls.command(FIRST_DIVERGENT_PASS)
    async def first_divergent_pass(*args: Any) -> dict[str, Any] | None:
        uri = _uri_arg(args)
        path = _path_arg(uri)
        files = folder_files(path)
        if not files:
            return None
        folder = files[0].parent
        known = {d.path for d in core.docs.in_folder(folder) if d.result is not None}
        if any(f not in known for f in files):
            res = await run_folder(ls, core, folder)
            if res.get("cancelled"):
                return None
        fd = validator.first_divergent(folder)
        if fd is None or fd.result is None:
            return None
        rng = R.divergence_range(fd.result, fd.result_lines, ls.position_encoding)
        return {"uri": fd.uri, "range": ls.protocol._converter.unstructure(rng), "status": fd.result.status}

    @ls.command(SHOW_GENERATED_CODE)
    async def show_generated_code(*args: Any) -> str:
        uri = _uri_arg(args)
        try:
            snap = validator.snapshot(uri)
        except (NotADump, OSError) as exc:
            raise JsonRpcInvalidParams(str(exc)) from exc
        try:
            res = await core.worker.codegen(P.CodegenParams(snap.text, str(snap.path), snap.resolved.settings.entry))
        except P.WorkerError as exc:
            return f"# pypto-lsp: no generated code ({exc})\n"
        if res.source is None:
            where = f" (line {res.line})" if res.line else ""
            return f"# pypto-lsp: no generated code for {snap.path.name}{where}: {res.error}\n"
        return res.source

    @ls.command(SHOW_CONFIG)
    async def show_config(*args: Any) -> dict[str, Any]:
        uri = _uri_arg(args)
        path = _path_arg(uri)
        resolved = core.config.get(path)
        worker_info = dict(core.worker.info)
        if not worker_info.get("torch"):
            try:
                worker_info = await asyncio.wait_for(core.worker.ping(), 30.0)
            except (P.WorkerError, asyncio.TimeoutError) as exc:
                worker_info = {"error": str(exc) or "no answer"}
        from importlib.metadata import PackageNotFoundError, version

        def ver(pkg: str) -> str | None:
            try:
                return version(pkg)
            except PackageNotFoundError:
                return None

        return {
            "uri": uri,
            **resolved.to_json(),
            "settings": core.config.settings.to_json(),
            "interpreter": sys.executable,
            "versions": {
                "pypto-lsp": __version__,
                "python": sys.version.split()[0],
                "pygls": ver("pygls"),
                "lsprotocol": ver("lsprotocol"),
                "torch": worker_info.get("torch"),
            },
            "worker": {"pid": core.worker.pid, **worker_info},
        }

    @ls.feature(DEBUG_INFO)
    def debug_info(params: Any) -> dict[str, Any]:
        w = core.worker
        return {
            "torch_loaded": "torch" in sys.modules,
            "pid": os.getpid(),
            "worker_pid": w.pid,
            "worker_spawns": w.stats.spawns,
            "worker_crashes": w.stats.crashes,
            "worker_timeouts": w.stats.timeouts,
            "worker_startup_s": w.stats.startup_s,
            "documents": len(core.docs.all()),
            "open_documents": len(core.docs.open_docs()),
            "runs_in_flight": validator.running(),
        }
