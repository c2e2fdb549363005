"""Memory findings in the editor, over stdio: examples/broken_memory (a tile placed on bytes
another tile overwrites) gets an error on the reading line with the overwriting line as related
information, a lens at the top, and a hover with the tile's bytes; a tile inside a pipe buffer
shows as you type. With the ``memory`` setting off the same dump passes (values only)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import change_doc, client_fixture, lens_titles, open_doc, wait_result, wait_until

pytestmark = [pytest.mark.asyncio(loop_scope="module")]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BROKEN = "35_after_AllocateMemoryAddr.py"


def workspace(dst: Path, memory: bool | None = None) -> Path:
    """examples/broken_memory with its config pointing at the elementwise goldens (absolute)."""
    (dst / "passes_dump").mkdir(parents=True)
    for f in (EXAMPLES / "broken_memory" / "passes_dump").iterdir():
        shutil.copyfile(f, dst / "passes_dump" / f.name)
    golden = EXAMPLES / "elementwise" / "golden"
    extra = "" if memory is None else f"memory = {str(memory).lower()}\n"
    (dst / "pypto-lsp.toml").write_text(
        f'[[cases]]\ndumps = "passes_dump"\ninputs = "{golden / "inputs.pt"}"\nexpected = "{golden / "expected.pt"}"\n{extra}',
        encoding="utf-8",
    )
    return dst


def line_of(path: Path, needle: str) -> int:
    """0-based line of the only line that contains ``needle``."""
    hits = [i for i, ln in enumerate(path.read_text().splitlines()) if needle in ln]
    assert len(hits) == 1, hits
    return hits[0]


def _workspace(lsp_client: LanguageClient, _param: object, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("memory")
    lsp_client.ws = workspace(root / "broken_memory")  # type: ignore[attr-defined]
    lsp_client.off = workspace(root / "memory_off", memory=False)  # type: ignore[attr-defined]
    return root


client = client_fixture(_workspace)


def memory_errors(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if str(d.code).startswith("memory-")]


async def test_overwrite_diagnostic_lens_and_hover(client: LanguageClient) -> None:
    path = client.ws / "passes_dump" / BROKEN  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    res = await wait_result(client, uri)
    assert res["status"] == "fail", res
    assert res["memory"]["checked"] is True
    (h,) = res["memory"]["hazards"]
    read, load, write = line_of(path, "prod__tile: "), line_of(path, "y_chunk__tile: "), line_of(path, "t__tile_1: ")
    assert (h["kind"], h["name"], h["line"], h["other_line"]) == ("overwrite", "y_chunk__tile", read + 1, write + 1)

    (d,) = await wait_until(lambda: memory_errors(client, uri), 10, "the memory diagnostic")
    assert d.code == "memory-overwrite" and d.severity == types.DiagnosticSeverity.Error
    assert d.range.start.line == read and "y_chunk__tile" in d.message
    assert d.related_information and d.related_information[0].location.range.start.line == write

    titles = await lens_titles(client, uri)
    assert f"⚠ memory: y_chunk__tile overwritten at line {write + 1}" in titles, titles

    col = path.read_text().splitlines()[load].index("y_chunk__tile") + 3
    hover = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(load, col)))
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert "Vec on the AIV · bytes [32768, 49152)" in text, text
    assert "shares bytes with: `t__tile`" in text and "`t__tile_1`" in text, text


async def test_memory_map_request_and_its_lens(client: LanguageClient) -> None:
    path = client.ws / "passes_dump" / BROKEN  # type: ignore[attr-defined]
    uri = path.as_uri()
    await wait_result(client, uri)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(types.TextDocumentIdentifier(uri)))
    show = [ln.command for ln in lenses or [] if ln.command is not None and ln.command.command == "pypto-lsp.showMemoryMap"]
    assert [list(c.arguments or []) for c in show] == [[uri]]
    d = await client.protocol.send_request_async("pypto-lsp/memoryMap", {"uri": uri})
    d = d if isinstance(d, dict) else client.protocol._converter.unstructure(d)
    assert d["uri"] == uri and d["run"] is True and d["addressed"] is True
    assert d["counts"] == {"strips": 1, "bars": 5, "overlaps": 1, "findings": 1}
    (st,) = d["strips"]
    (o,) = st["overlaps"]
    load, write = line_of(path, "y_chunk__tile: "), line_of(path, " t__tile: ")
    assert (st["space"], o["name"], o["line"], o["other_name"], o["other_line"]) == ("Vec", "y_chunk__tile", load + 1, "t__tile", write + 1)
    assert [f["name"] for f in st["findings"]] == ["y_chunk__tile"]
    # the pass before: nothing red, no lens (no finding)
    before = client.ws / "passes_dump" / "32_after_InitMemRef.py"  # type: ignore[attr-defined]
    d = await client.protocol.send_request_async("pypto-lsp/memoryMap", {"uri": before.as_uri()})
    d = d if isinstance(d, dict) else client.protocol._converter.unstructure(d)
    assert d["counts"]["overlaps"] == 0 and d["counts"]["bars"] == 5 and d["run"] is False


async def test_pipe_slot_as_you_type(client: LanguageClient) -> None:
    path = client.ws / "passes_dump" / BROKEN  # type: ignore[attr-defined]
    uri = path.as_uri()
    text = path.read_text()
    reserve = (
        "        ring: pl.Scalar[pl.INT32] = pl.system.reserve_buffer(name='ring', size=32768, base=0)\n"
        "        pl.system.aiv_initialize_pipe(ring, pl.const(0, pl.INT32), dir_mask=1, slot_size=16384, slot_num=2)\n"
    )
    edited = text.replace("        for r__idx_v0", reserve + "        for r__idx_v0", 1)
    change_doc(client, uri, edited, 2)

    def pipe_slot() -> list[types.Diagnostic]:
        return [d for d in client.diagnostics.get(uri, []) if d.code == "memory-pipe-slot"]

    diags = await wait_until(pipe_slot, 10, "pipe-slot diagnostics")
    lines = edited.splitlines()
    assert {lines[d.range.start.line].split(":")[0].strip() for d in diags} == {"x_chunk__tile", "prod__tile"}
    assert all(d.severity == types.DiagnosticSeverity.Warning for d in diags)
    change_doc(client, uri, text, 3)
    await wait_until(lambda: not pipe_slot(), 10, "the pipe-slot diagnostics to clear")


async def test_memory_off_in_the_config_is_values_only(client: LanguageClient) -> None:
    path = client.off / "passes_dump" / BROKEN  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    res = await wait_result(client, uri)
    assert res["status"] == "pass", res
    assert res["memory"] == {"checked": False, "hazards": []}
    assert not memory_errors(client, uri)
