"""The allocation budget in the editor (issue 12, item 6): a dump that would allocate 40 GB gets an
error diagnostic on that line from the real worker (no allocation, no OOM), and a smaller budget
set in ``pypto-lsp.toml`` (``max_alloc``) or in the settings (``maxAlloc``) reaches the worker."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import (
    EXAMPLES,
    client_fixture,
    copy_tree,
    debug_info,
    dump,
    open_doc,
    results_for,
    wait_result,
    wait_until,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module")]

SOFTMAX = EXAMPLES / "softmax"
BIG = "        big: pl.Tensor[[100000, 100000], pl.FP32] = pl.tensor.create([100000, 100000], dtype=pl.FP32)\n"
TOML = '[[cases]]\ndumps = "passes_dump"\ninputs = "golden/inputs.pt"\nexpected = "golden/expected.pt"\n'


def with_big_tensor(path: Path) -> int:
    """Insert the [100000, 100000] FP32 creation before the entry's return; its 1-based line."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = max(i for i, line in enumerate(lines) if line.strip().startswith("return"))
    path.write_text("".join([*lines[:at], BIG, *lines[at:]]), encoding="utf-8")
    return at + 1


def _workspace(lsp_client: LanguageClient, _param: object, tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = copy_tree(SOFTMAX, tmp_path_factory.mktemp("budget"), ["00_", "46_"])
    (ws / "pypto-lsp.toml").write_text(TOML, encoding="utf-8")
    lsp_client.ws = ws  # type: ignore[attr-defined]
    lsp_client.big_line = with_big_tensor(dump(ws, "00_"))  # type: ignore[attr-defined]
    return ws


client = client_fixture(_workspace)


def errors_on(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if d.severity == types.DiagnosticSeverity.Error]


async def test_a_40gb_tensor_is_an_error_on_its_line_not_an_oom(client: LanguageClient) -> None:
    path = dump(client.ws, "00_")  # type: ignore[attr-defined]
    line = client.big_line  # type: ignore[attr-defined]
    pid = (await debug_info(client)).get("worker", {}).get("pid")
    uri = open_doc(client, path)
    res = await wait_result(client, uri)
    assert res["status"] == "error" and res["error"]["kind"] == "alloc-budget", res
    assert res["error"]["line"] == line and "37.3 GiB" in res["error"]["message"], res["error"]
    diags = await wait_until(lambda: errors_on(client, uri), 10, "an error diagnostic")
    assert [d.range.start.line for d in diags] == [line - 1], diags
    assert "exceeds the allocation budget" in diags[0].message
    # the worker allocated nothing: the same process answers the next run
    other = open_doc(client, dump(client.ws, "46_"))  # type: ignore[attr-defined]
    assert (await wait_result(client, other))["status"] == "pass"
    if pid is not None:
        assert (await debug_info(client)).get("worker", {}).get("pid") == pid


def config_changed(client: LanguageClient, text: str) -> None:
    toml = client.ws / "pypto-lsp.toml"  # type: ignore[attr-defined]
    toml.write_text(text, encoding="utf-8")
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(changes=[types.FileEvent(uri=toml.as_uri(), type=types.FileChangeType.Changed)])
    )


def settings(client: LanguageClient, **values: object) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"pypto-lsp": values}))


async def test_a_smaller_budget_from_the_toml_then_the_settings_takes_effect(client: LanguageClient) -> None:
    path = dump(client.ws, "46_")  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    n = len(results_for(client, uri))
    if n == 0:
        n = 1
        assert (await wait_result(client, uri))["status"] == "pass"
    # 8 KiB: the [32, 128] FP32 tiles of the softmax (16 KiB) no longer fit
    config_changed(client, TOML + 'max_alloc = "8K"\n')
    res = await wait_result(client, uri, after=n)
    assert res["status"] == "error" and res["error"]["kind"] == "alloc-budget", res
    assert "budget of 8.0 KiB" in res["error"]["message"] and res["error"]["line"], res["error"]
    line = res["error"]["line"]
    diags = await wait_until(lambda: errors_on(client, uri), 10, "an error diagnostic")
    assert diags[0].range.start.line == line - 1
    # back to the default: passes again (the cached pass under the default budget is not the 8K error)
    config_changed(client, TOML)
    assert (await wait_result(client, uri, after=n + 1))["status"] == "pass"
    # the editor's setting, when the toml says nothing
    settings(client, maxAlloc="8K")
    res = await wait_result(client, uri, after=n + 2)
    assert res["status"] == "error" and "budget of 8.0 KiB" in res["error"]["message"], res
    # the toml's value wins over the setting
    config_changed(client, TOML + 'max_alloc = "1M"\n')
    assert (await wait_result(client, uri, after=n + 3))["status"] == "pass"
    # a bad setting is reported and the previous value kept
    settings(client, maxAlloc="lots")
    await wait_until(lambda: any("'maxAlloc' must be" in m.message for m in client.log_messages), 10, "a settings warning")
    config_changed(client, TOML)
    res = await wait_result(client, uri, after=n + 4)
    assert res["status"] == "error" and "budget of 8.0 KiB" in res["error"]["message"], res
    settings(client, maxAlloc=None)
    assert (await wait_result(client, uri, after=n + 5))["status"] == "pass"
