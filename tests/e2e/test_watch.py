"""workspace/didChangeWatchedFiles: a re-compiled dump folder invalidates results and re-checks the open dumps."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import (
    SOFTMAX,
    SOURCES,
    VSCODE,
    copy_tree,
    dump,
    execute,
    make_config,
    open_doc,
    require,
    results_for,
    start,
    wait_result,
    wait_until,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module")]


@pytest_lsp.fixture(config=make_config(), scope="module", params=SOURCES)
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    case = lsp_client.case = SOFTMAX[require(request.param)]  # type: ignore[attr-defined]
    ws = copy_tree(case.folder, tmp_path_factory.mktemp("watch"), [case.late, case.last])
    lsp_client.ws = ws  # type: ignore[attr-defined]
    await start(lsp_client, VSCODE, ws)
    yield
    await lsp_client.shutdown_session()


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
