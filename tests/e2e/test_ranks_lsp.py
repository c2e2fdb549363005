"""A multi-rank program in the editor: open examples/allreduce_ranks (4 ranks) -> PASS lenses on every pass."""

from __future__ import annotations

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from .conftest import EXAMPLES, VSCODE, copy_tree, dump, lens_titles, make_config, open_doc, start, wait_result

pytestmark = [pytest.mark.asyncio(loop_scope="module")]


@pytest_lsp.fixture(config=make_config(), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    ws = copy_tree(EXAMPLES / "allreduce_ranks", tmp_path_factory.mktemp("ranks"))
    lsp_client.ws = ws  # type: ignore[attr-defined]
    await start(lsp_client, VSCODE, ws)
    yield
    await lsp_client.shutdown_session()


@pytest.mark.parametrize("prefix", ["00_", "35_"])
async def test_every_rank_passes_with_a_pass_lens(client: LanguageClient, prefix: str) -> None:
    uri = open_doc(client, dump(client.ws, prefix))  # type: ignore[attr-defined]
    res = await wait_result(client, uri)
    assert res["status"] == "pass", res
    titles = await lens_titles(client, uri)
    assert [t for t in titles if t.startswith("✓ y")], titles
    assert not [d for d in client.diagnostics.get(uri, []) if d.severity == 1]
