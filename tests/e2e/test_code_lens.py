"""textDocument/codeLens: open a fixture dump -> the PASS lens with the max diff, the actions, each function's kind."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import LanguageClient

from .conftest import (
    NEOVIM,
    SOFTMAX,
    SOURCES,
    VSCODE,
    client_fixture,
    copy_tree,
    dump,
    lens_titles,
    open_doc,
    require,
    wait_result,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module")]


def _workspace(lsp_client: LanguageClient, param: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    _preset, source = param
    case = lsp_client.case = SOFTMAX[require(source)]  # type: ignore[attr-defined]
    ws = copy_tree(case.folder, tmp_path_factory.mktemp("softmax"), ["00_", case.last])
    lsp_client.ws = ws  # type: ignore[attr-defined]
    return ws


client = client_fixture(
    _workspace, params=[(p, s) for s in SOURCES for p in (VSCODE, NEOVIM)], ids=lambda ps: "-".join(ps), preset=lambda ps: ps[0]
)


async def test_pass_lens_with_max_diff(client: LanguageClient) -> None:
    out = client.case.output  # type: ignore[attr-defined]
    path = dump(client.ws, client.case.last)  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    res = await wait_result(client, uri)
    assert res["status"] == "pass", res
    diff = res["tensors"][out]["max_abs_diff"]
    titles = await lens_titles(client, uri)
    verdict = [t for t in titles if t.startswith(f"✓ {out}")]
    assert verdict, titles
    assert verdict[0].startswith(f"✓ {out} max|Δ| {diff:.2e} (atol 5e-2) · "), verdict
    assert re.search(r"· (\d+ ms|cached)$", verdict[0]), verdict
    for action in ("Validate this pass", "Validate all passes", "Compare with previous pass", "Debug this pass"):
        assert action in titles
    # one lens per function, with its kind
    text = path.read_text()
    n_funcs = len(re.findall(r"^    def ", text, re.M))
    kinds = [t for t in titles if t.split(" ")[0] in ("InCore", "Orchestration", "AIC", "AIV", "Group", "Opaque", "Spmd", "Inline")]
    assert len(kinds) == n_funcs, titles


async def test_no_diagnostics_for_a_passing_dump(client: LanguageClient) -> None:
    path = dump(client.ws, "00_")  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    res = await wait_result(client, uri)
    assert res["status"] == "pass"
    assert not [d for d in client.diagnostics.get(uri, []) if d.severity == 1]


async def test_lens_commands_are_advertised(client: LanguageClient) -> None:
    caps = client.init_result.capabilities  # type: ignore[attr-defined]
    assert caps.code_lens_provider is not None
    cmds = set(caps.execute_command_provider.commands)
    assert {
        "pypto-lsp.validateFile",
        "pypto-lsp.validateFolder",
        "pypto-lsp.firstDivergentPass",
        "pypto-lsp.showGeneratedCode",
        "pypto-lsp.showConfig",
    } <= cmds
    # implemented by the VS Code extension: advertising them would clash with its own commands
    assert not cmds & {"pypto-lsp.compareWithPrevious", "pypto-lsp.configureGolden"}
    assert client.init_result.server_info.name == "pypto-lsp"  # type: ignore[attr-defined]
