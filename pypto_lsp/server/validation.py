"""Numeric validation of dumps in the worker: on save (``runOn``), on open, on command, per folder.

The ruff-server habit: a run works on a read-only **snapshot** (text, document version,
resolved configuration) taken when it starts, and its result is published only if the
document is still at that version. A newer run of the same file cancels the older one
(the worker skips it if it has not started, or its answer is dropped).

Results land in the document state (:mod:`.documents`); :mod:`.publish` turns them into
diagnostics, :mod:`.code_lens` into lenses, and every file result is also announced
with a ``pypto-lsp/fileResult`` notification (the VS Code extension's pass list).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ..ir.model import split_lines
from ..ir.parser import MAX_BYTES, parse_bytes
from ..ir.passdiff import dump_order_key, previous_dump
from ..validate.config import discover_dumps, is_dump_path
from ..validate.report import ERROR, FAIL, PASS, RAN, ErrorInfo, FileResult, ValueDivergence
from ..worker import protocol as P
from . import results as R
from .config import Resolved
from .config_warnings import publish_config_warnings
from .documents import DocState, Localized, path_to_uri, results_generation, text_hash, uri_to_path
from .publish import publish

if TYPE_CHECKING:
    from .app import PyptoServer

FILE_RESULT_NOTIFICATION = "pypto-lsp/fileResult"
ON_TYPE_DELAY_S = 0.35
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


# ---------------------------------------------------------------------- triggers


def _runs_automatically(ls: PyptoServer, path: Path | None, *events: str) -> bool:
    if path is None:
        return False
    s = ls.config.settings
    return s.validation and s.run_on in events


async def on_open(ls: PyptoServer, uri: str) -> None:
    st = ls.docs.get(uri)
    if st is None or st.path is None:
        return
    resolved = ls.config.get(st.path)
    if not prepare(ls, st, resolved):
        return
    text = ls.workspace.get_text_document(uri).source
    if st.result is not None and st.result_hash == text_hash(text) and st.result_config == resolved.key():
        st.result_lines = split_lines(text)
        publish(ls, uri)  # known from a folder run or an earlier open
        return
    if resolved.run_on != "manual":
        start_run(ls, uri, "open")


def on_change(ls: PyptoServer, uri: str) -> None:
    """Typing: the parse runs debounced; with ``runOn: onType`` a validation follows it."""


def after_parse(ls: PyptoServer, uri: str) -> None:
    st = ls.docs.get(uri)
    if st is None or not _runs_automatically(ls, st.path, "onType"):
        return
    if any(d.severity == "error" for d in st.parse_diags):
        return  # nothing to run yet; the parse diagnostics say why
    start_run(ls, uri, "type")


def on_save(ls: PyptoServer, uri: str) -> None:
    st = ls.docs.get(uri)
    if st is None or not _runs_automatically(ls, st.path, "onSave", "onType"):
        return
    start_run(ls, uri, "save")


def cancel(ls: PyptoServer, uri: str) -> None:
    t = ls.run_tasks.pop(uri, None)
    if t is not None and not t.done():
        t.cancel()


def golden_params(r: Resolved) -> P.Golden:
    """What the worker compares with: the golden bundles, or (no goldens) the folder's earliest dump."""
    if r.inputs is not None and r.expected is not None:
        return P.Golden(str(r.inputs), str(r.expected))
    return P.Golden("", "", differential=str(r.folder))


def prepare(ls: PyptoServer, st: DocState, resolved: Resolved) -> bool:
    """Record a configuration problem / missing goldens on ``st``; True when a run can go ahead."""
    publish_config_warnings(ls, resolved.folder)
    before = (st.config_error, st.no_golden)
    st.config_error = resolved.error if resolved.validation else None
    st.no_golden = resolved.validation and resolved.error is None and not resolved.has_goldens
    if (st.config_error, st.no_golden) != before:
        if st.config_error or st.no_golden:
            st.result = None
        publish(ls, st.uri)
        ls.refresh_lenses()
    return resolved.validation and resolved.error is None and resolved.has_goldens


# ---------------------------------------------------------------------- one file


def snapshot(ls: PyptoServer, uri: str) -> Snapshot:
    path = uri_to_path(uri)
    if path is None:
        raise NotADump(f"not a file: {uri}")
    st = ls.docs.get(uri)
    static: ErrorInfo | None = None
    if st is not None and st.is_open:
        doc = ls.workspace.get_text_document(uri)
        text, version = doc.source, doc.version
    else:
        if not path.is_file():
            raise NotADump(f"no such file: {path}")
        data = path.read_bytes()[: MAX_BYTES + 1]
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
    return Snapshot(uri, path, text, version, ls.config.get(path), text_hash(text), static)


def start_run(ls: PyptoServer, uri: str, reason: str) -> asyncio.Task[FileResult | None]:
    """Start validating ``uri`` now, superseding a run of the same file that is still going."""
    cancel(ls, uri)
    task = asyncio.ensure_future(_run(ls, uri, reason))
    ls.run_tasks[uri] = task
    task.add_done_callback(lambda t: ls.run_tasks.pop(uri, None) if ls.run_tasks.get(uri) is t else None)
    return task


async def validate_uri(ls: PyptoServer, uri: str, reason: str = "command") -> FileResult | None:
    """Run (superseding older runs) and wait for the latest run of ``uri``."""
    task = start_run(ls, uri, reason)
    while True:
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            newer = ls.run_tasks.get(uri)
            if newer is None or newer is task or not task.cancelled():
                raise
            task = newer  # superseded by a newer save: its answer is ours too


def _static_result(snap: Snapshot, st: DocState | None) -> FileResult | None:
    """A parse/static error known in-process: no need to bother the worker."""
    if snap.static_error is not None:
        return FileResult(str(snap.path), ERROR, error=snap.static_error, rtol=snap.resolved.rtol, atol=snap.resolved.atol)
    if st is None or not st.is_open or st.parsed_hash != snap.hash:
        return None
    errors = [d for d in st.parse_diags if d.severity == "error"]
    if not errors:
        return None
    return FileResult(str(snap.path), ERROR, error=ErrorInfo.from_diagnostic(errors[0]), rtol=snap.resolved.rtol, atol=snap.resolved.atol)


async def _run(ls: PyptoServer, uri: str, reason: str) -> FileResult | None:
    try:
        snap = snapshot(ls, uri)
    except (NotADump, OSError) as exc:
        ls.log(f"validate {uri}: {exc}", logging.WARNING)
        return None
    st = ls.docs.ensure(uri)
    if not prepare(ls, st, snap.resolved):
        return None
    fr = _static_result(snap, st)
    if fr is None:
        st.pending = True
        ls.refresh_lenses()
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
            raw = await ls.worker.validate(params)
            fr = FileResult.from_json(raw)
        except P.WorkerError as exc:
            fr = FileResult(str(snap.path), ERROR, error=ErrorInfo(exc.kind, exc.message), rtol=r.rtol, atol=r.atol)
            ls.log(f"validate {snap.path.name}: {exc}", logging.WARNING)
        except (KeyError, TypeError, ValueError) as exc:  # a malformed answer: say so, do not hang the lens
            log.exception("bad worker answer")
            fr = FileResult(
                str(snap.path), ERROR, error=ErrorInfo(P.E_INTERNAL, f"unreadable worker answer: {exc!r}"), rtol=r.rtol, atol=r.atol
            )
        except asyncio.CancelledError:
            if ls.run_tasks.get(uri) is None or ls.run_tasks.get(uri) is asyncio.current_task():
                st.pending = False
                ls.refresh_lenses()
            raise
    ls.log(
        f"validated {snap.path.name} ({reason}): {fr.status}{' [' + fr.error.kind + ']' if fr.error else ''} in {fr.seconds:.3f} s",
        logging.INFO,
    )
    # a user's save / edit / command on a failing file may fetch the previous pass; opening
    # (also how configuration changes re-validate) and the fetched run itself do not
    apply_result(ls, snap, fr, fetch_previous=reason in ("save", "type", "command"))
    return fr


# ---------------------------------------------------------------------- results


def apply_result(ls: PyptoServer, snap: Snapshot, fr: FileResult, *, publish_closed: bool = True, fetch_previous: bool = False) -> bool:
    """Record a result for ``snap``; publish and announce it unless the document moved on.

    ``fetch_previous``: when this file fails and nothing is known of the pass before it,
    validate that one too (see :func:`localize_first_divergent`).
    """
    st = ls.docs.ensure(snap.uri)
    if st.is_open and snap.version is not None and ls.workspace.get_text_document(snap.uri).version != snap.version:
        st.pending = False
        ls.refresh_lenses()
        return False  # stale: the text it describes is gone
    folder = snap.path.parent
    before = first_divergent(ls, folder)
    generation = results_generation()
    st.result = fr
    if results_generation() == generation + 1 and st.path is not None and st.path.parent == folder:
        _note_result(ls, folder, st, before)  # O(1): a folder run's results need no re-scan
    st.result_hash = snap.hash
    st.result_config = snap.resolved.key()
    st.result_lines = split_lines(snap.text)
    st.pending = False
    st.no_golden = False
    st.config_error = None
    if st.is_open or publish_closed:
        publish(ls, snap.uri)
    after = first_divergent(ls, folder)
    if (before.uri if before else None) != (after.uri if after else None):
        # the related information of the other failing files points elsewhere now
        for other in ls.docs.in_folder(folder):
            if other.uri != snap.uri and other.result is not None and other.result.status in (FAIL, ERROR):
                publish(ls, other.uri)
    notify_file_result(ls, snap.uri, fr, after.uri if after else None)
    ls.refresh_lenses()
    localize_first_divergent(ls, folder, fetch_previous=fetch_previous and after is not None and after.uri == snap.uri)
    return True


PREVIOUS = "previous pass"  # the reason of a run that fetch_previous started


def localize_first_divergent(ls: PyptoServer, folder: Path, *, fetch_previous: bool = False) -> None:
    """On a first divergent pass that fails right after a passing one: ask the worker which
    value first differs (it re-runs both traced), then publish it there. Once per pair of texts.

    ``fetch_previous``: when nothing is known of the previous pass yet (a single file was
    saved), validate it first -- one step back only, and not with ``runOn: manual``; its
    result comes back here.
    """
    fd = first_divergent(ls, folder)
    if fd is None or fd.path is None or fd.result is None or fd.result.status != FAIL or not ls.config.settings.validation:
        return
    prev_path = previous_dump(fd.path)
    if prev_path is None:
        return
    prev_uri = path_to_uri(prev_path)
    prev = ls.docs.get(prev_uri)
    if prev is None or prev.result is None:
        if fetch_previous and ls.config.settings.run_on != "manual" and prev_uri not in ls.run_tasks:
            start_run(ls, prev_uri, PREVIOUS)
        return
    if prev.result.status not in (PASS, RAN):
        return
    key = localize_key(fd, prev, prev_path)
    if fd.divergence is not None and fd.divergence.key == key:
        return
    running = ls.localize_tasks.get(fd.uri)
    if running is not None and not running[1].done():
        if running[0] == key:
            return
        running[1].cancel()
    task = asyncio.ensure_future(_localize(ls, fd, prev, prev_path, key))
    ls.localize_tasks[fd.uri] = (key, task)


def localize_key(fd: DocState, prev: DocState, prev_path: Path) -> tuple[Any, ...]:
    """What a localisation depends on: both results (text and configuration) and which pass is previous."""
    return (fd.result_hash, fd.result_config, prev.result_hash, prev.result_config, prev_path.name)


async def _localize(ls: PyptoServer, fd: DocState, prev: DocState, prev_path: Path, key: tuple[Any, ...]) -> None:
    assert fd.path is not None
    resolved = ls.config.get(fd.path)
    if not resolved.has_goldens:
        return
    try:
        prev_text = ls.workspace.get_text_document(prev.uri).source if prev.is_open else prev_path.read_text(encoding="utf-8")
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
        raw = await ls.worker.localize(params)
        found = ValueDivergence.from_json(raw) if raw is not None else None
    except (P.WorkerError, KeyError, TypeError, ValueError) as exc:
        ls.log(f"localize {fd.path.name}: {exc}", logging.WARNING)
        return
    if localize_key(fd, prev, prev_path) != key:
        return  # a newer result came in meanwhile
    fd.divergence = Localized(key, prev_path, found)
    if found is not None:
        ls.log(f"localized {fd.path.name}: line {found.line}, '{found.name}'", logging.INFO)
    publish(ls, fd.uri)
    ls.refresh_lenses()


def notify_file_result(ls: PyptoServer, uri: str, fr: FileResult, first_div: str | None) -> None:
    ls.protocol.notify(FILE_RESULT_NOTIFICATION, R.file_result_json(fr, uri, first_div))


def _order(d: DocState) -> tuple[int, int, str]:
    return dump_order_key(d.path.name if d.path else "")


def first_divergent(ls: PyptoServer, folder: Path) -> DocState | None:
    """The first pass of ``folder`` (in pipeline order) known to fail or error.

    Remembered per folder until any result changes (:func:`.documents.results_generation`);
    :func:`apply_result` keeps it current itself, so a folder run does not re-scan the folder
    per result."""
    generation = results_generation()
    hit = ls.docs.first_divergent_memo.get(folder)
    if hit is not None and hit[0] == generation:
        return hit[1]
    failing = [d for d in ls.docs.in_folder(folder) if d.result is not None and d.path is not None and d.result.status in (FAIL, ERROR)]
    fd = min(failing, key=_order) if failing else None
    ls.docs.first_divergent_memo[folder] = (generation, fd)
    return fd


def _note_result(ls: PyptoServer, folder: Path, st: DocState, before: DocState | None) -> None:
    """``st`` got a new result and ``before`` was the first divergent pass just before: update
    the remembered one without a scan (a scan only when that pass itself stopped failing)."""
    assert st.result is not None
    fd: DocState | None = before
    if st.result.status in (FAIL, ERROR):
        if before is None or _order(st) < _order(before):
            fd = st
    elif before is st:
        return  # the next first_divergent() scans
    ls.docs.first_divergent_memo[folder] = (results_generation(), fd)


def first_divergent_location(ls: PyptoServer, uri: str) -> types.Location | None:
    """For ``relatedInformation``: the first divergent pass when that is another file."""
    st = ls.docs.get(uri)
    if st is None or st.path is None:
        return None
    fd = first_divergent(ls, st.path.parent)
    if fd is None or fd.uri == uri or fd.result is None or fd.path is None or _order(fd) > _order(st):
        return None
    return types.Location(fd.uri, R.divergence_range(fd.result, fd.result_lines, ls.position_encoding))


# ---------------------------------------------------------------------- folders


def folder_files(target: Path) -> list[Path]:
    folder = target.parent if target.is_file() else target
    return [f for f in discover_dumps(folder) if is_dump_path(f)]


async def validate_folder(
    ls: PyptoServer,
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
    resolved = ls.config.get(files[0])
    publish_config_warnings(ls, folder)
    if not resolved.validation:
        return {"files": [], "first_divergent": None, "cancelled": False, "error": "validation is off (setting pypto-lsp.validation)"}
    if resolved.error:
        return {"files": [], "first_divergent": None, "cancelled": False, "error": f"configuration: {resolved.error}"}
    if not resolved.has_goldens:
        for f in files:
            st = ls.docs.get(path_to_uri(f))
            if st is not None and st.is_open:
                prepare(ls, st, resolved)
        return {"files": [], "first_divergent": None, "cancelled": False, "error": f"no golden tensors for {folder}"}
    # the open documents go in with their buffer text, snapshotted now
    snaps: dict[str, Snapshot] = {}
    texts: dict[str, str] = {}
    for f in files:
        uri = path_to_uri(f)
        st = ls.docs.get(uri)
        if st is not None and st.is_open:
            s = snapshot(ls, uri)
            snaps[str(f)] = s
            texts[str(f)] = s.text
            st.pending = True
    ls.refresh_lenses()
    done: list[dict[str, Any]] = []
    total = len(files)

    def on_file(note: P.FileResultNote) -> None:
        fr = FileResult.from_json(note.result)
        path = Path(fr.file)
        uri = path_to_uri(path)
        snap = snaps.get(str(path))
        if snap is None:
            try:
                data = path.read_bytes()[: MAX_BYTES + 1]
                text = data.decode("utf-8", "replace")
            except OSError:
                text = ""
            snap = Snapshot(uri, path, text, None, resolved, text_hash(text))
        apply_result(ls, snap, fr, publish_closed=fr.status in (FAIL, ERROR) or uri in ls.published)
        fd = first_divergent(ls, folder)
        done.append(R.file_result_json(fr, uri, fd.uri if fd else None))
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
    run = asyncio.ensure_future(ls.worker.validate_folder(params, on_file))
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
            st = ls.docs.get(s.uri)
            if st is not None:
                st.pending = False
        ls.refresh_lenses()
    fd = first_divergent(ls, folder)
    out: dict[str, Any] = {"files": done, "first_divergent": fd.uri if fd else None, "cancelled": cancelled}
    if error:
        out["error"] = error
    return out
