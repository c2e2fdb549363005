"""The server's protocol-free core: it owns the documents, the configuration, the worker and the runs.

No pygls, no lsprotocol here (MLIR's language server keeps its ``LSPServer`` a thin layer over
such a core the same way): the LSP handlers (:mod:`.features`) translate requests and
notifications into calls on :class:`Core`, and the core tells the client what changed through
the small :class:`.ports.Client` interface. Every write to a :class:`.documents.DocState` happens
here or in :mod:`.validation`.

* Typing: :meth:`Core.change` keeps the text; a parse + static check follows DEBOUNCE_S later on
  a thread (:func:`.parse_diagnostics.parse_and_check`), then ``runOn: onType`` validation.
* Saving / opening: :class:`.validation.Validator` runs the file in the worker.
* Settings and watched files: :meth:`Core.apply_settings`, :meth:`Core.files_changed`.
* Configure Golden Tensors: :meth:`Core.write_golden_case`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..ir.model import Program, split_lines
from ..ir.symbols import SymbolIndex
from ..validate.case_writer import config_for, editor_case_problem, golden_entry, write_case
from ..validate.config import CONFIG_NAMES, GOLDEN_SUFFIXES, dump_folder
from ..validate.report import FileResult
from .config import ConfigCache, Settings
from .documents import Documents, DocView, is_dump, text_hash
from .parse_diagnostics import parse_and_check
from .ports import Client
from .validation import Validator
from .worker_client import WorkerClient

DEBOUNCE_S = 0.15


@dataclass(frozen=True, slots=True)
class Parsed:
    """What the navigation requests read: the last parse of an open document and its last result."""

    program: Program
    index: SymbolIndex
    lines: list[str]
    result: FileResult | None


class Core:
    def __init__(self, client: Client, worker: WorkerClient | None = None) -> None:
        self.client = client
        self.docs = Documents()
        self.config = ConfigCache()
        self.worker = worker if worker is not None else WorkerClient(client.log)
        self.validator = Validator(self.docs, self.config, self.worker, client)
        self._parses: dict[str, asyncio.Task[Any]] = {}

    def log(self, message: str, level: int = logging.INFO) -> None:
        self.client.log(message, level)

    def view(self, uri: str) -> DocView | None:
        return self.validator.view(uri)

    # ------------------------------------------------------------------ documents

    async def open(self, uri: str, version: int | None, text: str) -> None:
        if not is_dump(uri, text):
            return
        st = self.docs.ensure(uri)
        st.is_open = True
        st.version, st.text = version, text
        await self.parse_now(uri)
        self.validator.on_open(uri)

    def change(self, uri: str, version: int | None, text: str) -> None:
        st = self.docs.get(uri)
        if st is None or not st.is_open:
            return
        st.version, st.text = version, text
        self.schedule_parse(uri)

    def save(self, uri: str) -> None:
        st = self.docs.get(uri)
        if st is None or not st.is_open:
            return
        self.validator.on_save(uri)

    def close(self, uri: str) -> None:
        st = self.docs.get(uri)
        if st is None:
            return
        self.cancel_parse(uri)
        self.validator.cancel(uri)
        st.is_open = False
        st.version = None
        st.text = ""
        st.program = None
        st.parse_diags = []
        st.parsed_lines = []
        st.parsed_hash = None
        st.nav_index = st.nav_program = None
        # keep the validation result (folder views, first divergent pass); clear the squiggles
        self.client.clear(uri)

    def shutdown(self) -> None:
        for t in list(self._parses.values()):
            t.cancel()
        self.validator.cancel_all()

    # ------------------------------------------------------------------ parsing

    def schedule_parse(self, uri: str) -> None:
        """Parse ``uri`` DEBOUNCE_S after the last call."""
        self.cancel_parse(uri)
        self._parses[uri] = asyncio.ensure_future(self._debounced(uri))

    def cancel_parse(self, uri: str) -> None:
        t = self._parses.pop(uri, None)
        if t is not None and not t.done():
            t.cancel()

    async def _debounced(self, uri: str) -> None:
        await asyncio.sleep(DEBOUNCE_S)
        if await self.parse_now(uri):
            self.validator.after_parse(uri)

    async def parse_now(self, uri: str) -> bool:
        """Parse the current text of ``uri`` and publish; False when the document moved on."""
        st = self.docs.get(uri)
        if st is None or not st.is_open:
            return False
        text, version = st.text, st.version
        h = text_hash(text)
        if st.parsed_hash != h:
            entry = self.config.get(st.path).settings.entry if st.path is not None else None
            loop = asyncio.get_running_loop()
            program, diags = await loop.run_in_executor(None, parse_and_check, text, str(st.path) if st.path else uri, entry)
            if st.version != version or not st.is_open:
                return False
            st.program, st.parse_diags, st.parsed_hash = program, diags, h
            st.parsed_lines = split_lines(text)
        st.parsed_version = version
        self.validator.publish(uri)
        return True

    async def ensure_parsed(self, uri: str) -> None:
        """For requests (hover, lenses, ...): parse now if the last parse is older than the text."""
        st = self.docs.get(uri)
        if st is None or not st.is_open:
            return
        for _ in range(3):
            if st.parsed_version == st.version and st.parsed_hash is not None:
                break
            t = self._parses.get(uri)
            if t is not None and not t.done():
                t.cancel()  # the debounce is moot: someone is waiting for this parse
            if await self.parse_now(uri):
                self.validator.after_parse(uri)
                return

    async def parsed(self, uri: str) -> Parsed | None:
        """The program of the open document's current text (parsed now if need be), with its symbol
        index (built once per parse); None when it is not an open dump or does not parse."""
        await self.ensure_parsed(uri)
        st = self.docs.get(uri)
        if st is None or not st.is_open or st.program is None:
            return None
        if st.nav_index is None or st.nav_program is not st.program:
            st.nav_index = SymbolIndex.build(st.program)
            st.nav_program = st.program
        return Parsed(st.program, st.nav_index, st.parsed_lines, st.result)

    # ------------------------------------------------------------------ settings and files

    def apply_settings(self, raw: Any, where: str) -> None:
        """Merge ``raw`` settings; re-check open dumps when something that matters changed."""
        before = self.config.settings
        for p in self.config.update(raw):
            self.log(f"settings ({where}): {p}", logging.WARNING)
        after = self.config.settings
        if after != before:
            self.log(f"settings ({where}): {json.dumps(after.to_json())}")
            self._settings_changed(before, after)

    def _settings_changed(self, before: Settings, after: Settings) -> None:
        for st in self.docs.all():
            if not st.is_open:
                continue
            if not after.validation:
                self.validator.cancel(st.uri)
                self.validator.forget(st)
                st.pending = False
                self.validator.publish(st.uri)
            elif before.validation != after.validation or _run_relevant(before) != _run_relevant(after):
                self.validator.on_open(st.uri)
        self.client.refresh_lenses()

    def files_changed(self, paths: list[Path]) -> None:
        """Drop what ``paths`` changing makes stale; re-check the open dumps concerned.

        A dump changed: every result of its folder is dropped (closed files lose their
        diagnostics) and the open dumps of that folder are validated again; a config file or a
        golden bundle changed: the resolved configuration is dropped everywhere, and every open
        dump is re-checked."""
        config_changed = any(p.name in CONFIG_NAMES or p.suffix in GOLDEN_SUFFIXES for p in paths)
        folders = {p.parent for p in paths if p.suffix == ".py"}
        if config_changed:
            self.config.clear()
            folders |= {d.path.parent for d in self.docs.all() if d.path is not None}
        recheck = []
        for folder in folders:
            for st in self.docs.in_folder(folder):
                self.validator.forget(st)
                if st.is_open:
                    recheck.append(st.uri)
                else:
                    self.validator.publish(st.uri)  # clears what it showed
                    self.docs.drop(st.uri)
        self.client.refresh_lenses()
        for uri in recheck:
            doc = self.docs.get(uri)
            if doc is None:
                continue
            doc.parsed_hash = None  # the entry / config may differ now
            asyncio.ensure_future(self._recheck(uri))

    def write_golden_case(self, dumps: Path, inputs: Path, expected: Path) -> tuple[Path, str]:
        """Write the ``[[cases]]`` entry naming ``inputs`` / ``expected`` as the goldens of the dump
        folder ``dumps`` (or of the folder of a dump), through the one case writer: into the nearest
        ``pypto-lsp.toml`` up to the workspace root, else a new one beside the dumps; an entry of the
        same folder is updated in place. Returns (the config file, "added" | "updated"); ValueError
        for a file that is not there, ConfigError / OSError, the file unchanged, when it cannot be
        written. Only in a trusted workspace (validation on), for a folder inside it that holds dumps
        (:func:`..validate.case_writer.editor_case_problem`). The open dumps are checked again at once."""
        if not self.config.settings.validation:
            raise ValueError("the workspace is not trusted (validation is off): no [[cases]] entry is written")
        folder = dump_folder(dumps)
        for what, p, ok in (
            ("the dumps folder", folder, folder.is_dir()),
            ("the inputs", inputs, inputs.is_file()),
            ("the expected outputs", expected, expected.is_file()),
        ):
            if not ok:
                raise ValueError(f"{what} {p} does not exist")
        config = config_for(folder, self.config.root)
        problem = editor_case_problem(folder, config, self.config.root)
        if problem is not None:
            raise ValueError(problem)
        written = write_case(config, golden_entry(config, folder, inputs, expected, self.config.root), update=True)
        self.log(f"{written} the case of {folder} in {config}")
        self.files_changed([config])
        return config, written

    async def _recheck(self, uri: str) -> None:
        await self.parse_now(uri)
        self.validator.on_open(uri)


def _run_relevant(s: Settings) -> tuple[object, ...]:
    """The settings a change of which re-validates the open dumps."""
    return (s.golden_inputs, s.golden_expected, dict(s.run))  # the goldens and every run setting
