"""Hover (with last-run value stats), go to definition, references, document symbols, over the real server."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import SOFTMAX, SOURCES, Healthy, client_fixture, copy_tree, dump, open_doc, require, wait_result

pytestmark = [pytest.mark.asyncio(loop_scope="module")]


def _workspace(lsp_client: LanguageClient, source: str, tmp: pytest.TempPathFactory) -> Path:
    case = lsp_client.case = SOFTMAX[require(source)]  # type: ignore[attr-defined]
    ws = copy_tree(case.folder, tmp.mktemp("nav"), [case.last])
    lsp_client.path = dump(ws, case.last)  # type: ignore[attr-defined]
    return ws


async def _opened(lsp_client: LanguageClient) -> None:
    lsp_client.uri = open_doc(lsp_client, lsp_client.path)  # type: ignore[attr-defined]
    await wait_result(lsp_client, lsp_client.uri)  # type: ignore[attr-defined]


client = client_fixture(_workspace, params=SOURCES, ready=_opened)


def pos(client: LanguageClient, needle: str, nth: int = 0, offset: int = 1) -> types.Position:
    lines = client.path.read_text().splitlines()  # type: ignore[attr-defined]
    hits = [(i, line.index(needle)) for i, line in enumerate(lines) if needle in line]
    i, c = hits[nth]
    return types.Position(line=i, character=c + offset)


def case(client: LanguageClient) -> Healthy:
    return client.case  # type: ignore[attr-defined,no-any-return]


def doc(client: LanguageClient) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=client.uri)  # type: ignore[attr-defined]


async def test_hover_shows_type_and_last_run_stats(client: LanguageClient) -> None:
    c = case(client)
    h = await client.text_document_hover_async(types.HoverParams(text_document=doc(client), position=pos(client, f"{c.local}:")))
    assert h is not None and c.local in h.contents.value
    assert c.local_shape in h.contents.value and "FP32" in h.contents.value and "Vec" in h.contents.value
    # an entry parameter carries the last run's value stats
    h = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(client), position=pos(client, f"{c.out_param}:", nth=-1))
    )
    assert h is not None and "last run" in h.contents.value and "NaN 0" in h.contents.value, h.contents.value


async def test_hover_on_an_op(client: LanguageClient) -> None:
    h = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(client), position=pos(client, "pl.tile.row_max(", offset=9))
    )
    assert h is not None and "row_max" in h.contents.value


async def test_definition_and_references(client: LanguageClient) -> None:
    c = case(client)
    use = pos(client, f"{c.local})")
    locs = await client.text_document_definition_async(types.DefinitionParams(text_document=doc(client), position=use))
    assert locs and locs[0].range.start.line == pos(client, f"{c.local}:").line
    refs = await client.text_document_references_async(
        types.ReferenceParams(text_document=doc(client), position=use, context=types.ReferenceContext(include_declaration=True))
    )
    assert refs and len(refs) >= 2
    # a function: from the call to its def
    call = pos(client, f"self.{c.incore}(", offset=6)
    locs = await client.text_document_definition_async(types.DefinitionParams(text_document=doc(client), position=call))
    assert locs and locs[0].range.start.line == pos(client, f"def {c.incore}").line


async def test_document_symbols(client: LanguageClient) -> None:
    syms = await client.text_document_document_symbol_async(types.DocumentSymbolParams(text_document=doc(client)))
    assert syms is not None
    c = case(client)
    names = {s.name: s for s in syms}
    assert {c.incore, c.orch} <= set(names)
    assert names[c.incore].kind == types.SymbolKind.Function
    assert "AIV" in (names[c.incore].detail or "")
    # the orchestration's scope is nested below it
    assert names[c.orch].children and names[c.orch].children[0].name.startswith("pl.scope")
