"""With validation off (what the VS Code extension sends in an untrusted workspace) the pictures run nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from .conftest import _plain, client_fixture, debug_info

pytestmark = [pytest.mark.asyncio(loop_scope="module")]
EX = Path(__file__).resolve().parents[2] / "examples"


def _workspace(lsp_client: LanguageClient, _param: object, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("untrusted")
    shutil.copytree(EX / "broken_elementwise", root / "broken_elementwise")
    shutil.copytree(EX / "elementwise", root / "elementwise")
    lsp_client.folder = root / "broken_elementwise" / "passes_dump"  # type: ignore[attr-defined]
    return root


client = client_fixture(_workspace, options={"pypto-lsp": {"validation": False, "cache": False}})


async def test_nothing_runs_for_a_picture(client: LanguageClient) -> None:
    folder: Path = client.folder  # type: ignore[attr-defined]
    dump11 = (folder / "11_after_ConvertTensorToTileOps.py").as_uri()
    res = _plain(await client.protocol.send_request_async("pypto-lsp/errorMap", {"uri": dump11, "run": True}))
    assert res["maps"] == [] and "validation is off" in res["unavailable"]
    chart = _plain(await client.protocol.send_request_async("pypto-lsp/passChart", {"uri": folder.as_uri()}))
    assert len(chart["passes"]) == 5 and chart["known"] == 0
    info = await debug_info(client)
    assert info["worker_spawns"] == 0 and info["torch_loaded"] is False  # no worker was started for them
