"""``pypto-lsp/taskGraph`` over stdio: a hand-written dump whose consumer reads its producer's buffer
with ``no_dep`` (tests/unit/test_sanitizer.py's PIPELINE) is validated by the real server; its answer
has the two tasks in one layer, no dependency and the RAW pair, and the dump gets a "Show task
graph" lens. A dump not validated yet answers no nodes and says why; one without a race has no lens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from pytest_lsp import LanguageClient

from ..unit.test_sanitizer import PIPELINE, A, T, orch
from .conftest import _plain, client_fixture, debug_info, lens_titles, open_doc, wait_result

pytestmark = [pytest.mark.asyncio(loop_scope="module")]

RACE = "38_after_DeriveCallDirections.py"
ORDERED = "37_after_FuseCreateAssembleToSlice.py"


def workspace(dst: Path) -> Path:
    """A folder of two dumps (``input`` then ``no_dep`` on the consumer) with goldens made here."""
    (dst / "passes_dump").mkdir(parents=True)
    (dst / "passes_dump" / ORDERED).write_text(orch(PIPELINE.format(T=T, tag="input")), encoding="utf-8")
    (dst / "passes_dump" / RACE).write_text(orch(PIPELINE.format(T=T, tag="no_dep")), encoding="utf-8")
    torch.save({"a": A.clone(), "c": torch.zeros(16, 16)}, dst / "inputs.pt")
    torch.save({"c": 2 * A + 1}, dst / "expected.pt")
    (dst / "pypto-lsp.toml").write_text(
        '[[cases]]\ndumps = "passes_dump"\ninputs = "inputs.pt"\nexpected = "expected.pt"\n',
        encoding="utf-8",
    )
    return dst


def _workspace(lsp_client: LanguageClient, _param: object, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("taskgraph")
    lsp_client.ws = workspace(root / "race")  # type: ignore[attr-defined]
    return root


client = client_fixture(_workspace, options={"pypto-lsp": {"cache": False}})


async def task_graph(client: LanguageClient, path: Path) -> dict[str, Any]:
    return _plain(await client.protocol.send_request_async("pypto-lsp/taskGraph", {"uri": path.as_uri()}))  # type: ignore[no-any-return]


async def test_the_request_answers_the_tasks_the_dependencies_and_the_race(client: LanguageClient) -> None:
    folder: Path = client.ws / "passes_dump"  # type: ignore[attr-defined]
    before = await task_graph(client, folder / RACE)
    assert before["nodes"] == [] and "not validated" in before["unavailable"]

    uri = open_doc(client, folder / RACE)
    res = await wait_result(client, uri)
    assert res["status"] == "fail", res
    g = await task_graph(client, folder / RACE)
    assert g["uri"] == uri and g["unavailable"] is None and g["stale"] is False
    assert [(n["callee"], n["line"], n["x"], n["y"], n["racing"]) for n in g["nodes"]] == [
        ("k_scale", 21, -0.5, 0, True),
        ("k_add1", 22, 0.5, 0, True),
    ]
    assert g["edges"] == []
    assert [(r["from"], r["to"], r["kind"], r["x"], r["y"], r["x2"], r["y2"]) for r in g["races"]] == [(0, 1, "RAW", -0.5, 0, 0.5, 0)]
    assert "Show task graph" in await lens_titles(client, uri)
    assert (await debug_info(client))["torch_loaded"] is False  # the layout ran in the server, without torch


async def test_an_ordered_pipeline_has_its_dependency_and_no_lens(client: LanguageClient) -> None:
    folder: Path = client.ws / "passes_dump"  # type: ignore[attr-defined]
    uri = open_doc(client, folder / ORDERED)
    res = await wait_result(client, uri)
    assert res["status"] == "pass", res
    g = await task_graph(client, folder / ORDERED)
    assert [(n["callee"], n["y"]) for n in g["nodes"]] == [("k_scale", 0), ("k_add1", 1)]
    assert [(e["from"], e["to"]) for e in g["edges"]] == [(0, 1)] and g["races"] == []
    assert "Show task graph" not in await lens_titles(client, uri)


async def test_bad_params(client: LanguageClient) -> None:
    with pytest.raises(Exception, match="uri"):
        await client.protocol.send_request_async("pypto-lsp/taskGraph", {})
