"""Hostile input: injection attempts, a 20 MB file, binary bytes -> diagnostics, no crash, no hang, nothing executed."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import (
    SOFTMAX,
    SOURCES,
    client_fixture,
    copy_tree,
    debug_info,
    execute,
    lens_titles,
    open_doc,
    require,
    wait_result,
    wait_until,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module")]

BADINPUT = Path(__file__).resolve().parents[1] / "badinput"


def _workspace(lsp_client: LanguageClient, param: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    case = lsp_client.case = SOFTMAX[require(param)]  # type: ignore[attr-defined]
    ws = copy_tree(case.folder, tmp_path_factory.mktemp("hostile"), ["00_"])
    lsp_client.ws = ws  # type: ignore[attr-defined]
    return ws


client = client_fixture(_workspace, params=SOURCES)


def errors(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if d.severity == types.DiagnosticSeverity.Error]


async def test_injection_is_a_diagnostic_and_never_runs(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    canary = ws / "PWNED"
    text = (ws / "passes_dump" / "00_frontend.py").read_text()
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "pl.tile.exp(" in line)
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    payload = f"{indent}__import__('os').system('touch {canary}')\n"
    path = ws / "passes_dump" / "01_after_Injected.py"
    path.write_text("".join(lines[:at] + [payload] + lines[at:]))
    uri = open_doc(client, path)
    diags = await wait_until(lambda: errors(client, uri), 10, "a diagnostic")
    assert any(d.range.start.line == at for d in diags), [(d.range.start.line, d.code, d.message) for d in diags]
    res = await wait_result(client, uri)
    assert res["status"] == "error" and res["error"]["kind"].startswith("static:")
    titles = await lens_titles(client, uri)
    assert any(t.startswith("✗ error: static:") for t in titles), titles
    assert not canary.exists()


async def test_a_folder_of_hostile_files_is_all_errors(client: LanguageClient, tmp_path: Path) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    folder = ws / "passes_dump_hostile"
    folder.mkdir()
    bad = sorted(p for p in BADINPUT.glob("*.py"))
    for i, p in enumerate(bad):
        shutil.copyfile(p, folder / f"{i:02d}_after_{p.stem}.py")
    # goldens for this folder: the softmax ones (the files never get that far)
    case = client.case  # type: ignore[attr-defined]
    (ws / "pypto-lsp.toml").write_text(
        f'[[cases]]\ndumps = "passes_dump_hostile"\ninputs = "{case.inputs}"\nexpected = "{case.expected}"\n'
    )
    res = await execute(client, "pypto-lsp.validateFolder", folder.as_uri())
    assert len(res["files"]) == len(bad)
    statuses = {f["file"].rsplit("/", 1)[-1]: f["status"] for f in res["files"]}
    assert all(s == "error" for s in statuses.values()), {k: v for k, v in statuses.items() if v != "error"}
    assert (await debug_info(client))["torch_loaded"] is False


async def test_a_20mb_file(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "passes_dump" / "02_after_Huge.py"
    head = (ws / "passes_dump" / "00_frontend.py").read_text()
    filler = "# " + "x" * 98 + "\n"
    path.write_text(head + filler * (20 * 1024 * 1024 // len(filler)))
    assert path.stat().st_size > 20_000_000
    t0 = time.monotonic()
    uri = open_doc(client, path)
    diags = await wait_until(lambda: errors(client, uri), 30, "a diagnostic for the 20 MB file")
    assert diags[0].code == "too-large", diags[0]
    assert time.monotonic() - t0 < 30
    # still answering
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=0))
    )
    assert hover is None
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))


async def test_binary_and_non_utf8(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "passes_dump" / "03_after_Binary.py"
    data = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8
    path.write_bytes(data)
    text = data.decode("latin-1")  # what an editor that opened it anyway might send
    uri = open_doc(client, path, text=text)
    diags = await wait_until(lambda: errors(client, uri), 10, "a diagnostic for the binary file")
    assert diags[0].code == "binary", diags[0]
    # validating it from disk (closed, not UTF-8) is an error result too
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    res = await execute(client, "pypto-lsp.validateFile", uri)
    assert res["status"] == "error" and res["error"]["kind"] in ("static:encoding", "static:binary"), res["error"]
    info = await debug_info(client)
    assert info["torch_loaded"] is False and info["worker_pid"]
