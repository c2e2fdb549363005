"""workspace/didChangeWatchedFiles: a re-compiled dump folder invalidates results and re-checks the open dumps."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import (
    SOFTMAX,
    SOURCES,
    client_fixture,
    copy_tree,
    dump,
    execute,
    open_doc,
    require,
    results_for,
    wait_result,
    wait_until,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module")]


def _workspace(lsp_client: LanguageClient, source: str, tmp: pytest.TempPathFactory) -> Path:
    case = lsp_client.case = SOFTMAX[require(source)]  # type: ignore[attr-defined]
    ws = lsp_client.ws = copy_tree(case.folder, tmp.mktemp("watch"), [case.late, case.last])  # type: ignore[attr-defined]
    return ws


client = client_fixture(_workspace, params=SOURCES)


async def test_watchers_are_registered(client: LanguageClient) -> None:
    regs = await wait_until(
        lambda: [r for r in client.registrations if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES], 10, "a registration"
    )  # type: ignore[attr-defined]
    globs = [w["globPattern"] if isinstance(w, dict) else w.glob_pattern for w in _watchers(regs[0])]
    assert "**/passes_dump*/*.py" in globs and "**/pypto-lsp.toml" in globs


def _watchers(reg: types.Registration) -> list:  # type: ignore[type-arg]
    opts = reg.register_options
    return list(opts["watchers"] if isinstance(opts, dict) else opts.watchers)  # type: ignore[union-attr]


async def test_recompiled_folder_rechecks_open_files_and_clears_closed_ones(client: LanguageClient) -> None:
    ws = client.ws  # type: ignore[attr-defined]
    open_path, closed_path = dump(ws, client.case.last), dump(ws, client.case.late)  # type: ignore[attr-defined]
    uri = open_doc(client, open_path)
    assert (await wait_result(client, uri))["status"] == "pass"
    # a closed dump that fails (as the compiler wrote it): diagnostics without being open
    good = closed_path.read_text()
    assert "pl.tile.row_expand_div(" in good
    closed_path.write_text(good.replace("pl.tile.row_expand_div(", "pl.tile.row_expand_mul("))
    res = await execute(client, "pypto-lsp.validateFile", closed_path.as_uri())
    assert res["status"] == "fail"
    await wait_until(lambda: client.diagnostics.get(closed_path.as_uri()), 10, "diagnostics of the closed file")

    # the compiler runs again and rewrites the folder
    closed_path.write_text(good)
    n = len(results_for(client, uri))
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=p.as_uri(), type=types.FileChangeType.Changed) for p in (open_path, closed_path)]
        )
    )
    res = await wait_result(client, uri, after=n)  # the open dump was checked again
    assert res["status"] == "pass"
    await wait_until(lambda: len(client.diagnostics.get(closed_path.as_uri(), [1])) == 0, 10, "the closed file's diagnostics to be cleared")
