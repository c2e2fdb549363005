"""The sanitizer in the editor, over stdio: a race between two tasks (the consumer takes its producer's
buffer as ``no_dep``) is an error diagnostic on the later call's line, with the earlier call as related
information, a ``⚠ race`` lens, and a hover on either line; the same file with the sanitizer switched
off in the settings passes. Hand-written dumps with goldens made here (no ../shared needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import client_fixture, lens_titles, open_doc, results_for, wait_result, wait_until
from .test_taskgraph_lsp import RACE, workspace

pytestmark = [pytest.mark.asyncio(loop_scope="module")]


def _workspace(lsp_client: LanguageClient, _param: object, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sanitizer")
    lsp_client.ws = workspace(root / "race")  # type: ignore[attr-defined]
    return root


client = client_fixture(_workspace, options={"pypto-lsp": {"cache": False}})


def sanitizer_errors(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if str(d.code).startswith("sanitizer-")]


async def test_a_race_is_a_diagnostic_on_the_later_call_with_the_earlier_one_related(client: LanguageClient) -> None:
    path: Path = client.ws / "passes_dump" / RACE  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    res = await wait_result(client, uri)
    assert res["status"] == "fail" and all(t["pass"] for t in res["tensors"].values()), res  # the numbers agree
    (h,) = [h for h in res["memory"]["hazards"] if h["kind"] == "race"]
    assert (h["line"], h["other_line"], h["race"]) == (22, 21, "RAW")
    (d,) = await wait_until(lambda: sanitizer_errors(client, uri), 10, "the sanitizer diagnostic")
    assert d.code == "sanitizer-race" and d.severity == types.DiagnosticSeverity.Error
    assert d.range.start.line == 21 and d.message.startswith("sanitizer race: RAW race on 'mid'")
    assert "max |Δ|" in d.message  # the other order was run
    assert d.related_information and d.related_information[0].location.range.start.line == 20
    assert any(t.startswith("⚠ race: mid between line 21 and line 22") for t in await lens_titles(client, uri))
    for line in (21, 20):  # the finding's line, and the other call's
        hover = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, 10)))
        assert hover is not None and "**sanitizer race**" in hover.contents.value  # type: ignore[union-attr]


async def test_the_setting_switches_it_off(client: LanguageClient) -> None:
    path: Path = client.ws / "passes_dump" / RACE  # type: ignore[attr-defined]
    uri = path.as_uri()
    before = len(results_for(client, uri))
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"pypto-lsp": {"cache": False, "sanitize": False}})
    )
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command="pypto-lsp.validateFile", arguments=[uri]))
    res = await wait_result(client, uri, after=before)
    assert res["status"] == "pass", res
    assert not [h for h in res["memory"]["hazards"] if h["kind"] == "race"]
