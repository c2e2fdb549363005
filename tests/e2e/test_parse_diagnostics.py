"""Parse diagnostics as you type (no worker involved), which files are ours, and validation switched off."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import (
    NEOVIM,
    SOFTMAX,
    SOURCES,
    change_doc,
    client_fixture,
    copy_tree,
    debug_info,
    dump,
    lens_titles,
    open_doc,
    require,
    wait_until,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module")]


def _workspace(lsp_client: LanguageClient, param: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    case = lsp_client.case = SOFTMAX[require(param)]  # type: ignore[attr-defined]
    ws = copy_tree(case.folder, tmp_path_factory.mktemp("typing"), ["00_", case.last])
    lsp_client.ws = ws  # type: ignore[attr-defined]
    # validation off: parse diagnostics only, and no worker at all
    return ws


client = client_fixture(_workspace, params=SOURCES, preset=NEOVIM, options={"pypto-lsp": {"validation": False}})


def errors(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if d.severity == types.DiagnosticSeverity.Error]


async def test_typing_a_syntax_error_and_fixing_it(client: LanguageClient) -> None:
    exp = client.case.exp_last  # type: ignore[attr-defined]
    path = dump(client.ws, client.case.last)  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    await wait_until(lambda: uri in client.diagnostics, 10, "the first publish")
    assert errors(client, uri) == []
    text = path.read_text()
    assert exp in text
    broken = text.replace(exp, exp[:-1], 1)
    t0 = time.monotonic()
    change_doc(client, uri, broken, 2)
    diags = await wait_until(lambda: errors(client, uri), 10, "a syntax error")
    took = time.monotonic() - t0
    assert diags[0].code in ("syntax", "outside-grammar"), diags[0]
    assert diags[0].source == "pypto-lsp"
    assert took < 5, took
    change_doc(client, uri, text, 3)
    await wait_until(lambda: uri in client.diagnostics and not errors(client, uri), 10, "the error to go")


async def test_a_static_error_on_its_span(client: LanguageClient) -> None:
    path = dump(client.ws, "00_")  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    text = path.read_text()
    exp = client.case.exp_first  # type: ignore[attr-defined]
    name = exp.split("(", 1)[1].rstrip(")")
    assert exp in text
    edited = text.replace(exp, exp.replace(name, f"{name}d"))
    line = next(i for i, s in enumerate(edited.splitlines()) if f"{name}d" in s)
    change_doc(client, uri, edited, 2)
    diags = await wait_until(lambda: errors(client, uri), 10, "an undefined-name error")
    d = diags[0]
    assert d.range.start.line == line
    assert edited.splitlines()[line][d.range.start.character : d.range.end.character] == f"{name}d"


async def test_validation_off_means_no_validation_lenses_and_no_worker(client: LanguageClient) -> None:
    path = dump(client.ws, client.case.last)  # type: ignore[attr-defined]
    titles = await lens_titles(client, path.as_uri())
    assert not any(t.startswith(("✓", "✗", "Validate", "Configure")) for t in titles), titles
    assert "AIV" in titles and "Orchestration" in titles
    info = await debug_info(client)
    assert info["worker_pid"] is None and info["torch_loaded"] is False


async def test_other_python_files_are_left_alone(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    other = ws / "setup.py"
    other.write_text("import os\nprint(os.getcwd(\n")
    uri = open_doc(client, other)
    header = ws / "scratch.py"
    header.write_text("# pypto.program: Scratch\nimport pypto.language as pl\nthis is not python\n")
    huri = open_doc(client, header)
    # the header file is ours (diagnostics), the plain Python file is not (nothing at all)
    await wait_until(lambda: errors(client, huri), 10, "diagnostics for the header file")
    assert uri not in client.diagnostics
    assert await lens_titles(client, uri) == []
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=8))
    )
    assert hover is None
