"""A deadlocking edit (the ``tpush`` deleted) -> a cross-core diagnostic on the blocked pop, and the server still answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import (
    CROSS_CORE,
    NEOVIM,
    SOURCES,
    client_fixture,
    copy_tree,
    dump,
    lens_titles,
    open_doc,
    require,
    results_for,
    save_doc,
    wait_result,
    wait_until,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module")]


def _workspace(lsp_client: LanguageClient, param: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    case = lsp_client.case = CROSS_CORE[require(param)]  # type: ignore[attr-defined]
    ws = copy_tree(case.folder, tmp_path_factory.mktemp("c2v"), [case.file])
    lsp_client.ws = ws  # type: ignore[attr-defined]
    return ws


client = client_fixture(_workspace, params=SOURCES, preset=NEOVIM)


async def test_deleted_tpush_deadlocks_on_the_pop_line(client: LanguageClient) -> None:
    popped = client.case.popped  # type: ignore[attr-defined]
    path = dump(client.ws, client.case.file)  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    assert (await wait_result(client, uri))["status"] == "pass"

    lines = path.read_text().splitlines()
    edited = [line for line in lines if "pl.tile.tpush_to_aiv(" not in line]
    assert len(edited) == len(lines) - 1
    pop_line = next(i for i, line in enumerate(edited) if "tpop_from_aic(" in line)
    n = len(results_for(client, uri))
    save_doc(client, path, "\n".join(edited) + "\n", uri, version=2)
    res = await wait_result(client, uri, after=n)
    assert res["status"] == "error", res
    assert res["error"]["kind"].startswith("cross-core:"), res["error"]

    diags = await wait_until(
        lambda: [d for d in client.diagnostics.get(uri, []) if d.severity == types.DiagnosticSeverity.Error], 10, "the deadlock diagnostic"
    )
    assert [d.range.start.line for d in diags] == [pop_line], [(d.range.start.line, d.message) for d in diags]
    msg = diags[0].message
    assert "tile.tpop_from_aic" in msg and "lane" in msg and "queue depths" in msg, msg
    assert str(diags[0].code).startswith("cross-core:")
    titles = await lens_titles(client, uri)
    assert any(t.startswith("✗ error: cross-core:") and f"(line {pop_line + 1})" in t for t in titles), titles

    # the server is still there for the editor
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=pop_line, character=edited[pop_line].index(popped) + 2),
        )
    )
    assert hover is not None and popped in hover.contents.value, hover


async def test_restoring_the_tpush_passes_again(client: LanguageClient) -> None:
    path = dump(client.ws, client.case.file)  # type: ignore[attr-defined]
    uri = path.as_uri()
    original = (client.case.folder / "passes_dump" / path.name).read_text()  # type: ignore[attr-defined]
    n = len(results_for(client, uri))
    save_doc(client, path, original, uri, version=3)
    res = await wait_result(client, uri, after=n)
    assert res["status"] == "pass", res
    await wait_until(
        lambda: not [d for d in client.diagnostics.get(uri, []) if d.severity == types.DiagnosticSeverity.Error], 10, "no errors"
    )
