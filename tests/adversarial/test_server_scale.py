"""Item 3 (and 4 in the server): a folder run's per-result work does not grow with the folder.

``validateFolder`` on 2005 dumps took 80 s (the CLI: 4.9 s): every result re-listed, stat'ed
and sorted the whole folder. The times are in ``benchmarks/bench_reliability.py``; here the
real server's result path (``apply_result``, as a folder run calls it) is driven over 2000
results and the folder scans are counted: a handful in all, not thousands."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from pypto_lsp.server.app import create_server
from pypto_lsp.server.config import Settings, resolve
from pypto_lsp.server.documents import path_to_uri, text_hash
from pypto_lsp.server.validation import Snapshot
from pypto_lsp.validate.report import FAIL, PASS, FileResult

N = 2000


@pytest.mark.asyncio
async def test_per_result_work_is_independent_of_the_folder_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "passes_dump"
    folder.mkdir()
    paths = []
    for i in range(N):
        p = folder / f"{i}_after_P{i}.py"
        p.write_text(f"# pass {i}\n")
        paths.append(p)
    ls = create_server()
    # the protocol's own initialize step (capabilities, workspace); no transport: sends are dropped
    for _ in ls.protocol.lsp_initialize(types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=tmp_path.as_uri())):
        break
    core = ls.core
    counts = {"in_folder": 0, "scandir": 0, "iterdir": 0}
    real_in_folder, real_scandir, real_iterdir = core.docs.in_folder, os.scandir, Path.iterdir

    def in_folder(f: Path) -> Any:
        counts["in_folder"] += 1
        return real_in_folder(f)

    def scandir(*a: Any) -> Any:
        counts["scandir"] += 1
        return real_scandir(*a)

    def iterdir(self: Path) -> Any:
        counts["iterdir"] += 1
        return real_iterdir(self)

    monkeypatch.setattr(core.docs, "in_folder", in_folder)
    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(Path, "iterdir", iterdir)
    resolved = resolve(paths[0], Settings(), None)
    bug = 1089  # as text, 1090.. would sort before 109..: numeric order says 1089
    for i, p in enumerate(paths):
        fr = FileResult(str(p), FAIL if i >= bug else PASS)
        core.validator.apply_result(Snapshot(path_to_uri(p), p, "", None, resolved, text_hash("")), fr, publish_closed=True)
        fd = core.validator.first_divergent(folder)
        assert (fd is None) if i < bug else (fd is not None and fd.path == paths[bug])
    scans = counts["in_folder"] + counts["scandir"] + counts["iterdir"]
    assert scans <= 20, counts  # before: several per result (> 6000 for 2000 results)
    # a result set elsewhere (not through apply_result) is seen too: no stale answer
    st = core.docs.get(path_to_uri(paths[bug]))
    assert st is not None
    core.docs.set_result(st, FileResult(str(paths[bug]), PASS))
    fd = core.validator.first_divergent(folder)
    assert fd is not None and fd.path == paths[bug + 1]
