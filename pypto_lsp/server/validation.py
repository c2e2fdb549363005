"""Numeric validation of dumps in the worker: on save (``runOn``), on open, on command, per folder.

The ruff-server habit: a run works on a read-only **snapshot** (text, document version,
resolved configuration) taken when it starts, and its result is published only if the
document is still at that version. A newer run of the same file cancels the older one
(the worker skips it if it has not started, or its answer is dropped).

:class:`Validator` is part of the protocol-free core: it owns the runs (by file), the
localisations and the folder runs, writes results into the document state
(:mod:`.documents`), and tells the client what changed through :class:`.ports.Client`
(diagnostics of a :class:`.documents.DocView`, lenses, the ``pypto-lsp/fileResult``
notification).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..ir.model import split_lines
from ..ir.parser import parse_bytes, read_dump
from ..ir.passdiff import changed_blocks, dump_order_key, previous_dump
from ..validate.config import discover_dumps, is_dump_path
from ..validate.report import ERROR, FAIL, PASS, RAN, ErrorInfo, FileResult, ValueDivergence
from ..worker import protocol as P
from .config import ConfigCache, Resolved
from .config_warnings import ConfigWarnings
from .documents import DocState, Documents, DocView, Localized, Related, path_to_uri, text_hash, uri_to_path
from .ports import Client
from .worker_client import WorkerClient

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Snapshot:
    uri: str
    path: Path
    text: str
    version: int | None
    resolved: Resolved
    hash: str
    static_error: ErrorInfo | None = None  # known without running (bytes that are not UTF-8)


class NotADump(Exception):
    pass


def golden_params(r: Resolved) -> P.Golden:
    """What the worker compares with: the golden bundles, or (no goldens) the folder's earliest dump."""
    if r.inputs is not None and r.expected is not None:
        return P.Golden(str(r.inputs), str(r.expected))
    return P.Golden("", "", differential=str(r.folder))


def file_result_json(fr: FileResult, uri: str, first_divergent: str | None) -> dict[str, Any]:
    """A file's result as the client sees it (the fileResult notification, the validate commands)."""
    d = fr.to_json()
    d["uri"] = uri
    d["first_divergent"] = first_divergent
    return d


def folder_files(target: Path) -> list[Path]:
    folder = target.parent if target.is_file() else target
    return [f for f in discover_dumps(folder) if is_dump_path(f)]


def localize_key(fd: DocState, prev: DocState, prev_path: Path) -> tuple[Any, ...]:
    """What a localisation depends on: both results (text and configuration) and which pass is previous."""
    return (fd.result_hash, fd.result_config, prev.result_hash, prev.result_config, prev_path.name)


def _order(d: DocState) -> tuple[int, int, str]:
    return dump_order_key(d.path.name if d.path else "")


PREVIOUS = "previous pass"  # the reason of a run that fetch_previous started


class Validator:
    """Runs, results and the first divergent pass of every folder; the only writer of results."""

    def __init__(self, docs: Documents, config: ConfigCache, worker: WorkerClient, client: Client) -> None:
        self.docs = docs
        self.config = config
        self.worker = worker
        self.client = client
        self._runs: dict[str, asyncio.Task[FileResult | None]] = {}
        self._localizing: dict[str, tuple[tuple[Any, ...], asyncio.Task[None]]] = {}
        self._folder_runs: dict[Path, asyncio.Event] = {}
        self._config_warnings = ConfigWarnings()
        self._changed: dict[str, tuple[tuple[object, ...], list[tuple[int, int]]]] = {}  # see _changed_blocks

    # ------------------------------------------------------------------ what the client sees

    def view(self, uri: str) -> DocView | None:
        """A frozen picture of ``uri`` for the diagnostics and the lenses."""
        st = self.docs.get(uri)
        if st is None:
            return None
        first = previous = None
        blocks: list[tuple[int, int]] = []
        if st.result is not None and not st.config_error and not st.no_golden:
            first = self._first_divergent_before(st)
            previous, blocks = self._changed_blocks(st)
        div_prev = None
        if st.divergence is not None:
            d = self.docs.get(path_to_uri(st.divergence.previous))
            div_prev = Related(d.uri, st.divergence.previous, d.result, d.result_lines) if d is not None else None
        return DocView(
            uri=uri,
            path=st.path,
            version=st.version,
            is_open=st.is_open,
            validation=self.config.settings.validation,
            program=st.program,
            parse_diags=st.parse_diags,
            parsed_lines=st.parsed_lines,
            result=st.result,
            result_hash=st.result_hash,
            result_lines=st.result_lines,
            stale=st.is_open and st.result is not None and st.result_hash != text_hash(st.text),
            pending=st.pending,
            no_golden=st.no_golden,
            config_error=st.config_error,
            compared_label=self.config.get(st.path).compared_label if st.path is not None else None,
            divergence=st.divergence,
            divergence_previous=div_prev,
            first_divergent=first,
            previous=previous,
            changed_blocks=blocks,
        )

    def publish(self, uri: str) -> None:
        v = self.view(uri)
        if v is not None:
            self.client.publish(v)

    def _first_divergent_before(self, st: DocState) -> Related | None:
        """For ``relatedInformation``: the first divergent pass when that is another, earlier file."""
        if st.path is None:
            return None
        fd = self.first_divergent(st.path.parent)
        if fd is None or fd.uri == st.uri or fd.result is None or fd.path is None or _order(fd) > _order(st):
            return None
        return Related(fd.uri, fd.path, fd.result, fd.result_lines)

    def _changed_blocks(self, st: DocState) -> tuple[Related | None, list[tuple[int, int]]]:
        """On a failing pass right after a passing one: that pass, and the lines this one changed."""
        if st.result is None or st.result.status not in (FAIL, ERROR) or st.path is None:
            return None, []
        prev_path = previous_dump(st.path)
        if prev_path is None:
            return None, []
        prev = self.docs.get(path_to_uri(prev_path))
        if prev is None or prev.result is None or prev.result.status not in (PASS, RAN):
            return None, []
        related = Related(prev.uri, prev_path, prev.result, prev.result_lines)
        key = (st.result_hash, prev.result_hash, prev_path.name)
        cached = self._changed.get(st.uri)
        if cached is not None and cached[0] == key:
            return related, cached[1]
        try:
            prev_text = (
                "\n".join(prev.parsed_lines)
                if prev.is_open and prev.parsed_lines
                else prev_path.read_text(encoding="utf-8", errors="replace")
            )
        except OSError:
            return None, []
        blocks = changed_blocks(prev_text, "\n".join(st.result_lines or st.parsed_lines))
        self._changed[st.uri] = (key, blocks)
        return related, blocks

    def publish_config_warnings(self, folder: Path) -> None:
        for path, warnings, lines in self._config_warnings.changed(folder):
            self.client.config_warnings(path, warnings, lines)

    # ------------------------------------------------------------------ triggers

    def _runs_automatically(self, path: Path | None, *events: str) -> bool:
        if path is None:
            return False
        s = self.config.settings
        return s.validation and s.run_on in events

    def on_open(self, uri: str) -> None:
        st = self.docs.get(uri)
        if st is None or st.path is None:
            return
        resolved = self.config.get(st.path)
        if not self.prepare(st, resolved):
            return
        if st.result is not None and st.result_hash == text_hash(st.text) and st.result_config == resolved.key():
            st.result_lines = split_lines(st.text)
            self.publish(uri)  # known from a folder run or an earlier open
            return
        if resolved.run_on != "manual":
            self.start_run(uri, "open")

    def after_parse(self, uri: str) -> None:
        """Typing: after the debounced parse, ``runOn: onType`` validates."""
        st = self.docs.get(uri)
        if st is None or not self._runs_automatically(st.path, "onType"):
            return
        if any(d.severity == "error" for d in st.parse_diags):
            return  # nothing to run yet; the parse diagnostics say why
        self.start_run(uri, "type")

    def on_save(self, uri: str) -> None:
        st = self.docs.get(uri)
        if st is None or not self._runs_automatically(st.path, "onSave", "onType"):
            return
        self.start_run(uri, "save")

    def cancel(self, uri: str) -> None:
        t = self._runs.pop(uri, None)
        if t is not None and not t.done():
            t.cancel()

    def cancel_all(self) -> None:
        for t in list(self._runs.values()) + [t for _, t in self._localizing.values()]:
            t.cancel()
        for ev in list(self._folder_runs.values()):
            ev.set()

    def running(self, uri: str | None = None) -> int:
        """How many file runs are in flight (for ``uri``: 0 or 1)."""
        return len(self._runs) if uri is None else int(uri in self._runs)

    def forget(self, st: DocState) -> None:
        """Drop what is known of ``st``'s validation (validation off, a recompiled folder)."""
        self.docs.set_result(st, None)
        st.result_hash = None
        st.no_golden = False
        st.config_error = None

    def prepare(self, st: DocState, resolved: Resolved) -> bool:
        """Record a configuration problem / missing goldens on ``st``; True when a run can go ahead."""
        self.publish_config_warnings(resolved.folder)
        before = (st.config_error, st.no_golden)
        st.config_error = resolved.error if resolved.validation else None
        st.no_golden = resolved.validation and resolved.error is None and not resolved.has_goldens
        if (st.config_error, st.no_golden) != before:
            if st.config_error or st.no_golden:
                self.docs.set_result(st, None)
            self.publish(st.uri)
            self.client.refresh_lenses()
        return resolved.validation and resolved.error is None and resolved.has_goldens

    # ------------------------------------------------------------------ one file

    def snapshot(self, uri: str) -> Snapshot:
        path = uri_to_path(uri)
        if path is None:
            raise NotADump(f"not a file: {uri}")
        st = self.docs.get(uri)
        static: ErrorInfo | None = None
        if st is not None and st.is_open:
            text, version = st.text, st.version
        else:
            if not path.is_file():
                raise NotADump(f"no such file: {path}")
            data = read_dump(path)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = data.decode("utf-8", "replace")
                bad = parse_bytes(data, str(path)).errors
                if bad:  # not UTF-8: an error result without a run
                    static = ErrorInfo.from_diagnostic(bad[0])
            version = None
        if not is_dump_path(path, text[:256].split("\n", 1)[0]):
            raise NotADump(f"not a pass dump (a .py under passes_dump*/ or starting with '# pypto.program:'): {path}")
        return Snapshot(uri, path, text, version, self.config.get(path), text_hash(text), static)

    def start_run(self, uri: str, reason: str) -> asyncio.Task[FileResult | None]:
        """Start validating ``uri`` now, superseding a run of the same file that is still going."""
        self.cancel(uri)
        task = asyncio.ensure_future(self._run(uri, reason))
        self._runs[uri] = task
        task.add_done_callback(lambda t: self._runs.pop(uri, None) if self._runs.get(uri) is t else None)
        return task

    async def validate_uri(self, uri: str, reason: str = "command") -> FileResult | None:
        """Run (superseding older runs) and wait for the latest run of ``uri``."""
        task = self.start_run(uri, reason)
        while True:
            try:
                return await asyncio.shield(task)
            except asyncio.CancelledError:
                newer = self._runs.get(uri)
                if newer is None or newer is task or not task.cancelled():
                    raise
                task = newer  # superseded by a newer save: its answer is ours too

    @staticmethod
    def _static_result(snap: Snapshot, st: DocState | None) -> FileResult | None:
        """A parse/static error known in-process: no need to bother the worker."""
        if snap.static_error is not None:
            return FileResult(
                str(snap.path), ERROR, error=snap.static_error, rtol=snap.resolved.settings.rtol, atol=snap.resolved.settings.atol
            )
        if st is None or not st.is_open or st.parsed_hash != snap.hash:
            return None
        errors = [d for d in st.parse_diags if d.severity == "error"]
        if not errors:
            return None
        err = ErrorInfo.from_diagnostic(errors[0])
        return FileResult(str(snap.path), ERROR, error=err, rtol=snap.resolved.settings.rtol, atol=snap.resolved.settings.atol)

    async def _run(self, uri: str, reason: str) -> FileResult | None:
        try:
            snap = self.snapshot(uri)
        except (NotADump, OSError) as exc:
            self.client.log(f"validate {uri}: {exc}", logging.WARNING)
            return None
        st = self.docs.ensure(uri)
        if not self.prepare(st, snap.resolved):
            return None
        fr = self._static_result(snap, st)
        if fr is None:
            st.pending = True
            self.client.refresh_lenses()
            r = snap.resolved
            params = P.ValidateParams(
                file=str(snap.path),
                text=snap.text,
                golden=golden_params(r),
                settings=r.run_settings(),
                use_cache=r.use_cache,
                collect_stats=True,
            )
            try:
                raw = await self.worker.validate(params)
                fr = FileResult.from_json(raw)
            except P.WorkerError as exc:
                fr = FileResult(str(snap.path), ERROR, error=ErrorInfo(exc.kind, exc.message), rtol=r.settings.rtol, atol=r.settings.atol)
                self.client.log(f"validate {snap.path.name}: {exc}", logging.WARNING)
            except (KeyError, TypeError, ValueError) as exc:  # a malformed answer: say so, do not hang the lens
                log.exception("bad worker answer")
                fr = FileResult(
                    str(snap.path),
                    ERROR,
                    error=ErrorInfo(P.E_INTERNAL, f"unreadable worker answer: {exc!r}"),
                    rtol=r.settings.rtol,
                    atol=r.settings.atol,
                )
            except asyncio.CancelledError:
                if self._runs.get(uri) is None or self._runs.get(uri) is asyncio.current_task():
                    st.pending = False
                    self.client.refresh_lenses()
                raise
        self.client.log(
            f"validated {snap.path.name} ({reason}): {fr.status}{' [' + fr.error.kind + ']' if fr.error else ''} in {fr.seconds:.3f} s",
            logging.INFO,
        )
        # a user's save / edit / command on a failing file may fetch the previous pass; opening
        # (also how configuration changes re-validate) and the fetched run itself do not
        self.apply_result(snap, fr, fetch_previous=reason in ("save", "type", "command"))
        return fr

    # ------------------------------------------------------------------ results

    def apply_result(self, snap: Snapshot, fr: FileResult, *, publish_closed: bool = True, fetch_previous: bool = False) -> bool:
        """Record a result for ``snap``; publish and announce it unless the document moved on.

        ``fetch_previous``: when this file fails and nothing is known of the pass before it,
        validate that one too (see :meth:`localize_first_divergent`).
        """
        st = self.docs.ensure(snap.uri)
        if st.is_open and snap.version is not None and st.version != snap.version:
            st.pending = False
            self.client.refresh_lenses()
            return False  # stale: the text it describes is gone
        folder = snap.path.parent
        before = self.first_divergent(folder)
        generation = self.docs.generation
        self.docs.set_result(st, fr)
        if self.docs.generation == generation + 1 and st.path is not None and st.path.parent == folder:
            self._note_result(folder, st, before)  # O(1): a folder run's results need no re-scan
        st.result_hash = snap.hash
        st.result_config = snap.resolved.key()
        st.result_lines = split_lines(snap.text)
        st.pending = False
        st.no_golden = False
        st.config_error = None
        if st.is_open or publish_closed:
            self.publish(snap.uri)
        after = self.first_divergent(folder)
        if (before.uri if before else None) != (after.uri if after else None):
            # the related information of the other failing files points elsewhere now
            for other in self.docs.in_folder(folder):
                if other.uri != snap.uri and other.result is not None and other.result.status in (FAIL, ERROR):
                    self.publish(other.uri)
        self.client.file_result(file_result_json(fr, snap.uri, after.uri if after else None))
        self.client.refresh_lenses()
        self.localize_first_divergent(folder, fetch_previous=fetch_previous and after is not None and after.uri == snap.uri)
        return True

    def localize_first_divergent(self, folder: Path, *, fetch_previous: bool = False) -> None:
        """On a first divergent pass that fails right after a passing one: ask the worker which
        value first differs (it re-runs both traced), then publish it there. Once per pair of texts.

        ``fetch_previous``: when nothing is known of the previous pass yet (a single file was
        saved), validate it first -- one step back only, and not with ``runOn: manual``; its
        result comes back here.
        """
        fd = self.first_divergent(folder)
        if fd is None or fd.path is None or fd.result is None or fd.result.status != FAIL or not self.config.settings.validation:
            return
        prev_path = previous_dump(fd.path)
        if prev_path is None:
            return
        prev_uri = path_to_uri(prev_path)
        prev = self.docs.get(prev_uri)
        if prev is None or prev.result is None:
            if fetch_previous and self.config.settings.run_on != "manual" and prev_uri not in self._runs:
                self.start_run(prev_uri, PREVIOUS)
            return
        if prev.result.status not in (PASS, RAN):
            return
        key = localize_key(fd, prev, prev_path)
        if fd.divergence is not None and fd.divergence.key == key:
            return
        running = self._localizing.get(fd.uri)
        if running is not None and not running[1].done():
            if running[0] == key:
                return
            running[1].cancel()
        task = asyncio.ensure_future(self._localize(fd, prev, prev_path, key))
        self._localizing[fd.uri] = (key, task)

    async def _localize(self, fd: DocState, prev: DocState, prev_path: Path, key: tuple[Any, ...]) -> None:
        assert fd.path is not None
        resolved = self.config.get(fd.path)
        if not resolved.has_goldens:
            return
        try:
            prev_text = prev.text if prev.is_open else prev_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return
        if text_hash(prev_text) != prev.result_hash:
            return  # the previous pass changed since it passed: its next result will ask again
        params = P.LocalizeParams(
            previous_file=str(prev_path),
            previous_text=prev_text,
            file=str(fd.path),
            text="\n".join(fd.result_lines),
            golden=golden_params(resolved),
            settings=resolved.run_settings(),
        )
        try:
            raw = await self.worker.localize(params)
            found = ValueDivergence.from_json(raw) if raw is not None else None
        except (P.WorkerError, KeyError, TypeError, ValueError) as exc:
            self.client.log(f"localize {fd.path.name}: {exc}", logging.WARNING)
            return
        if localize_key(fd, prev, prev_path) != key:
            return  # a newer result came in meanwhile
        fd.divergence = Localized(key, prev_path, found)
        if found is not None:
            self.client.log(f"localized {fd.path.name}: line {found.line}, '{found.name}'", logging.INFO)
        self.publish(fd.uri)
        self.client.refresh_lenses()

    def first_divergent(self, folder: Path) -> DocState | None:
        """The first pass of ``folder`` (in pipeline order) known to fail or error.

        Remembered per folder until any result changes (:attr:`.documents.Documents.generation`);
        :meth:`apply_result` keeps it current itself, so a folder run does not re-scan the folder
        per result."""
        generation = self.docs.generation
        hit = self.docs.first_divergent_memo.get(folder)
        if hit is not None and hit[0] == generation:
            return hit[1]
        failing = [
            d for d in self.docs.in_folder(folder) if d.result is not None and d.path is not None and d.result.status in (FAIL, ERROR)
        ]
        fd = min(failing, key=_order) if failing else None
        self.docs.first_divergent_memo[folder] = (generation, fd)
        return fd

    def _note_result(self, folder: Path, st: DocState, before: DocState | None) -> None:
        """``st`` got a new result and ``before`` was the first divergent pass just before: update
        the remembered one without a scan (a scan only when that pass itself stopped failing)."""
        assert st.result is not None
        fd: DocState | None = before
        if st.result.status in (FAIL, ERROR):
            if before is None or _order(st) < _order(before):
                fd = st
        elif before is st:
            return  # the next first_divergent() scans
        self.docs.first_divergent_memo[folder] = (self.docs.generation, fd)

    # ------------------------------------------------------------------ folders

    def begin_folder_run(self, folder: Path) -> asyncio.Event:
        """The stop of a new run of ``folder``; a run of the same folder still going is stopped."""
        cancel = asyncio.Event()
        older = self._folder_runs.get(folder)
        if older is not None:
            older.set()
        self._folder_runs[folder] = cancel
        return cancel

    def end_folder_run(self, folder: Path, cancel: asyncio.Event) -> None:
        if self._folder_runs.get(folder) is cancel:
            del self._folder_runs[folder]

    async def validate_folder(
        self,
        target: Path,
        *,
        on_progress: Any = None,
        cancel_event: asyncio.Event | None = None,
    ) -> dict[str, Any]:
        """Validate every dump of ``target``'s folder in the worker, streaming results.

        Diagnostics are published for files that fail or error (and open files); every
        result is announced. Returns ``{"files": [...], "first_divergent": uri | None,
        "cancelled": bool}``.
        """
        files = folder_files(target)
        if not files:
            raise NotADump(f"no pass dumps in {target}")
        folder = files[0].parent
        resolved = self.config.get(files[0])
        self.publish_config_warnings(folder)
        if not resolved.validation:
            return {"files": [], "first_divergent": None, "cancelled": False, "error": "validation is off (setting pypto-lsp.validation)"}
        if resolved.error:
            return {"files": [], "first_divergent": None, "cancelled": False, "error": f"configuration: {resolved.error}"}
        if not resolved.has_goldens:
            for f in files:
                st = self.docs.get(path_to_uri(f))
                if st is not None and st.is_open:
                    self.prepare(st, resolved)
            return {"files": [], "first_divergent": None, "cancelled": False, "error": f"no golden tensors for {folder}"}
        # the open documents go in with their buffer text, snapshotted now
        snaps: dict[str, Snapshot] = {}
        texts: dict[str, str] = {}
        for f in files:
            uri = path_to_uri(f)
            st = self.docs.get(uri)
            if st is not None and st.is_open:
                s = self.snapshot(uri)
                snaps[str(f)] = s
                texts[str(f)] = s.text
                st.pending = True
        self.client.refresh_lenses()
        done: list[dict[str, Any]] = []
        total = len(files)

        def on_file(note: P.FileResultNote) -> None:
            fr = FileResult.from_json(note.result)
            path = Path(fr.file)
            uri = path_to_uri(path)
            snap = snaps.get(str(path))
            if snap is None:
                try:
                    data = read_dump(path)
                    text = data.decode("utf-8", "replace")
                except OSError:
                    text = ""
                snap = Snapshot(uri, path, text, None, resolved, text_hash(text))
            self.apply_result(snap, fr, publish_closed=fr.status in (FAIL, ERROR) or self.client.shown(uri))
            fd = self.first_divergent(folder)
            done.append(file_result_json(fr, uri, fd.uri if fd else None))
            if on_progress is not None:
                on_progress(note.index + 1, total, path.name)

        params = P.ValidateFolderParams(
            files=[str(f) for f in files],
            golden=golden_params(resolved),
            settings=resolved.run_settings(),
            use_cache=resolved.use_cache,
            collect_stats=False,
            texts=texts,
        )
        run = asyncio.ensure_future(self.worker.validate_folder(params, on_file))
        cancelled = False
        error: str | None = None
        try:
            if cancel_event is not None:
                waiter = asyncio.ensure_future(cancel_event.wait())
                await asyncio.wait({run, waiter}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                if not run.done():
                    cancelled = True
                    run.cancel()
                    with contextlib.suppress(asyncio.CancelledError, P.WorkerError):
                        await run
            else:
                await run
            if run.done() and not run.cancelled():
                exc = run.exception()
                if isinstance(exc, P.WorkerError):
                    error = str(exc)
                elif exc is not None:
                    raise exc
                else:
                    cancelled = cancelled or run.result().cancelled
        except asyncio.CancelledError:
            run.cancel()
            raise
        finally:
            for s in snaps.values():
                st = self.docs.get(s.uri)
                if st is not None:
                    st.pending = False
            self.client.refresh_lenses()
        fd = self.first_divergent(folder)
        out: dict[str, Any] = {"files": done, "first_divergent": fd.uri if fd else None, "cancelled": cancelled}
        if error:
            out["error"] = error
        return out
