"""A multi-rank program in the editor: open examples/allreduce_ranks (4 ranks) -> PASS lenses on every pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from .conftest import EXAMPLES, client_fixture, copy_tree, dump, lens_titles, open_doc, wait_result

pytestmark = [pytest.mark.asyncio(loop_scope="module")]


def _workspace(lsp_client: LanguageClient, _param: object, tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = copy_tree(EXAMPLES / "allreduce_ranks", tmp_path_factory.mktemp("ranks"))
    lsp_client.ws = ws  # type: ignore[attr-defined]
    return ws


client = client_fixture(_workspace)


@pytest.mark.parametrize("prefix", ["00_", "35_"])
async def test_every_rank_passes_with_a_pass_lens(client: LanguageClient, prefix: str) -> None:
    uri = open_doc(client, dump(client.ws, prefix))  # type: ignore[attr-defined]
    res = await wait_result(client, uri)
    assert res["status"] == "pass", res
    titles = await lens_titles(client, uri)
    assert [t for t in titles if t.startswith("✓ y")], titles
    assert not [d for d in client.diagnostics.get(uri, []) if d.severity == 1]


async def test_a_deadlocking_edit_names_the_ranks_on_the_wait_line(client: LanguageClient) -> None:
    path = dump(client.ws, "00_")  # type: ignore[attr-defined]
    text = path.read_text().replace("[my_rank, 0], pl.const(1, pl.INT32), op=0)", "[my_rank, 0], pl.const(0, pl.INT32), op=0)")
    edited = path.with_name("01_after_Edit.py")
    edited.write_text(text)
    uri = open_doc(client, edited)
    res = await wait_result(client, uri)
    assert res["status"] == "error" and res["error"]["kind"] == "distributed:deadlock", res
    wait_line = next(i for i, ln in enumerate(text.splitlines()) if "pld.system.wait(" in ln)
    titles = await lens_titles(client, uri)
    assert any(t.startswith("✗ error: distributed:deadlock") and t.endswith("on ranks 0, 1, 2, 3") for t in titles), titles
    errors = [d for d in client.diagnostics.get(uri, []) if d.severity == 1]
    assert any(d.range.start.line == wait_line and "waiting ranks: 0, 1, 2, 3" in d.message for d in errors), errors
