"""Hover (with last-run value stats), go to definition, references, document symbols, over the real server."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import FIXTURES, VSCODE, copy_tree, dump, make_config, needs_fixtures, open_doc, start, wait_result

pytestmark = [needs_fixtures, pytest.mark.asyncio(loop_scope="module")]


@pytest_lsp.fixture(config=make_config(), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    ws = copy_tree(FIXTURES / "example_softmax", tmp_path_factory.mktemp("nav"), ["49_"])
    lsp_client.path = dump(ws, "49_")  # type: ignore[attr-defined]
    await start(lsp_client, VSCODE, ws)
    lsp_client.uri = open_doc(lsp_client, lsp_client.path)  # type: ignore[attr-defined]
    await wait_result(lsp_client, lsp_client.uri)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


def pos(client: LanguageClient, needle: str, nth: int = 0, offset: int = 1) -> types.Position:
    lines = client.path.read_text().splitlines()  # type: ignore[attr-defined]
    hits = [(i, line.index(needle)) for i, line in enumerate(lines) if needle in line]
    i, c = hits[nth]
    return types.Position(line=i, character=c + offset)


def doc(client: LanguageClient) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=client.uri)  # type: ignore[attr-defined]


async def test_hover_shows_type_and_last_run_stats(client: LanguageClient) -> None:
    h = await client.text_document_hover_async(types.HoverParams(text_document=doc(client), position=pos(client, "row_max__ssa_v0:")))
    assert h is not None and "row_max__ssa_v0" in h.contents.value
    assert "[64, 1]" in h.contents.value and "FP32" in h.contents.value and "Vec" in h.contents.value
    # an entry parameter carries the last run's value stats
    h = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(client), position=pos(client, "output__ssa_v0:", nth=-1))
    )
    assert h is not None and "last run" in h.contents.value and "NaN 0" in h.contents.value, h.contents.value


async def test_hover_on_an_op(client: LanguageClient) -> None:
    h = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(client), position=pos(client, "pl.tile.row_max(", offset=9))
    )
    assert h is not None and "row_max" in h.contents.value


async def test_definition_and_references(client: LanguageClient) -> None:
    use = pos(client, "row_max__ssa_v0)")
    locs = await client.text_document_definition_async(types.DefinitionParams(text_document=doc(client), position=use))
    assert locs and locs[0].range.start.line == pos(client, "row_max__ssa_v0:").line
    refs = await client.text_document_references_async(
        types.ReferenceParams(text_document=doc(client), position=use, context=types.ReferenceContext(include_declaration=True))
    )
    assert refs and len(refs) >= 2
    # a function: from the call to its def
    call = pos(client, "self.tile_softmax_incore_0(", offset=6)
    locs = await client.text_document_definition_async(types.DefinitionParams(text_document=doc(client), position=call))
    assert locs and locs[0].range.start.line == pos(client, "def tile_softmax_incore_0").line


async def test_document_symbols(client: LanguageClient) -> None:
    syms = await client.text_document_document_symbol_async(types.DocumentSymbolParams(text_document=doc(client)))
    assert syms is not None
    names = {s.name: s for s in syms}
    assert {"tile_softmax_incore_0", "tile_softmax"} <= set(names)
    assert names["tile_softmax_incore_0"].kind == types.SymbolKind.Function
    assert "AIV" in (names["tile_softmax_incore_0"].detail or "")
    # the orchestration's scope is nested below it
    assert names["tile_softmax"].children and names["tile_softmax"].children[0].name.startswith("pl.scope")
