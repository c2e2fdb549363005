"""``pypto-lsp/passChart`` and ``pypto-lsp/errorMap`` over stdio, on the shipped broken example."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from pypto_lsp.validate.errormap import decode_cells

from .conftest import _plain, client_fixture, debug_info, execute, open_doc

pytestmark = [pytest.mark.asyncio(loop_scope="module")]
EX = Path(__file__).resolve().parents[2] / "examples"


def _workspace(lsp_client: LanguageClient, _param: object, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pictures")
    shutil.copytree(EX / "broken_elementwise", root / "broken_elementwise")
    shutil.copytree(EX / "elementwise", root / "elementwise")  # the goldens broken_elementwise uses
    lsp_client.folder = root / "broken_elementwise" / "passes_dump"  # type: ignore[attr-defined]
    return root


client = client_fixture(_workspace, options={"pypto-lsp": {"cache": False}})


async def request(client: LanguageClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return _plain(await client.protocol.send_request_async(method, params))  # type: ignore[no-any-return]


async def test_pass_chart_and_error_map(client: LanguageClient) -> None:
    folder: Path = client.folder  # type: ignore[attr-defined]
    dump11 = folder / "11_after_ConvertTensorToTileOps.py"
    # nothing validated yet: every pass is known by name only, and no map is kept
    chart = await request(client, "pypto-lsp/passChart", {"uri": folder.as_uri()})
    assert [p["status"] for p in chart["passes"]] == ["unknown"] * 5 and chart["known"] == 0
    # ... but whether each changed the IR is known (the VS Code pass tree reads it from here)
    assert [p["unchanged"] for p in chart["passes"]] == [False] * 5
    kept = await request(client, "pypto-lsp/errorMap", {"uri": dump11.as_uri(), "run": False})
    assert kept["maps"] == [] and "not computed" in kept["unavailable"]

    await execute(client, "pypto-lsp.validateFolder", folder.as_uri())
    chart = await request(client, "pypto-lsp/passChart", {"uri": dump11.as_uri()})  # a dump names its folder
    assert [p["status"] for p in chart["passes"]] == ["pass", "pass", "pass", "fail", "fail"]
    assert chart["first_divergent_index"] == 3 and chart["passes"][3]["uri"] == dump11.as_uri()
    assert len(chart["points"]) == 5 and chart["tensors"] == ["out"] and chart["atol"] == 5e-2

    res = await request(client, "pypto-lsp/errorMap", {"uri": dump11.as_uri(), "tensor": "out"})
    assert res["error"] is None and res["uri"] == dump11.as_uri()
    (m,) = res["maps"]
    assert m["tensor"] == "out" and m["view"] == [64, 128] and len(m["tiles"]) == 2 and m["stores"][0]["line"] == 14
    cells = decode_cells(m)
    bad_rows = {r for r, b in zip(cells["r"], cells["bad"], strict=True) if b}
    assert bad_rows and min(bad_rows) >= 32  # the second row chunk is the wrong one
    # asked again without running: the kept answer
    again = await request(client, "pypto-lsp/errorMap", {"uri": dump11.as_uri(), "tensor": "out", "run": False})
    assert again["kept"] is True and again["maps"][0]["bad_elements"] == m["bad_elements"]
    # the server itself still never imported torch
    assert (await debug_info(client))["torch_loaded"] is False


async def test_a_failing_tensor_has_an_error_map_lens(client: LanguageClient) -> None:
    folder: Path = client.folder  # type: ignore[attr-defined]
    uri = open_doc(client, folder / "11_after_ConvertTensorToTileOps.py")
    lenses: list[Any] = []
    for _ in range(200):
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))) or []
        if any(lens.command and lens.command.command == "pypto-lsp.showErrorMap" for lens in lenses):
            break
        await asyncio.sleep(0.1)
    maps = [lens.command for lens in lenses if lens.command and lens.command.command == "pypto-lsp.showErrorMap"]
    assert [(c.title, list(c.arguments)) for c in maps] == [("Show error map of 'out'", [uri, "out"])]
    # a passing dump has none
    ok = open_doc(client, folder / "09_after_OutlineIncoreScopes.py")
    await asyncio.sleep(1.0)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=ok))) or []
    assert not any(lens.command and lens.command.command == "pypto-lsp.showErrorMap" for lens in lenses)


async def test_bad_params(client: LanguageClient) -> None:
    with pytest.raises(Exception, match="uri"):
        await client.protocol.send_request_async("pypto-lsp/passChart", {})
