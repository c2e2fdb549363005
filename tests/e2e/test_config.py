"""Configuration: no goldens (the earliest dump is the reference, the lens says so), settings goldens and tolerances, runOn."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import (
    FIXTURES,
    VSCODE,
    copy_tree,
    dump,
    execute,
    lens_titles,
    make_config,
    needs_fixtures,
    open_doc,
    results_for,
    save_doc,
    start,
    wait_result,
    wait_until,
)

pytestmark = [needs_fixtures, pytest.mark.asyncio(loop_scope="module")]


@pytest_lsp.fixture(config=make_config(), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    ws = copy_tree(FIXTURES / "example_softmax", tmp_path_factory.mktemp("noconfig"), ["48_", "49_"])
    golden = tmp_path_factory.mktemp("golden")
    for name in ("tensors.pt", "expected.pt"):
        (ws / name).rename(golden / name)  # the dumps have no goldens beside them now
    lsp_client.ws, lsp_client.golden = ws, golden  # type: ignore[attr-defined]
    await start(lsp_client, VSCODE, ws)
    yield
    await lsp_client.shutdown_session()


def settings(client: LanguageClient, **values: object) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"pypto-lsp": values}))


async def test_without_goldens_the_earliest_dump_is_the_reference(client: LanguageClient) -> None:
    """No goldens anywhere: validated against the folder's earliest dump on synthesized inputs, and the lens says so."""
    path = dump(client.ws, "49_")  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    res = await wait_result(client, uri)
    assert res["status"] == "pass", res
    earliest = dump(client.ws, "48_").stem  # type: ignore[attr-defined]
    titles = await lens_titles(client, uri)
    verdict = [t for t in titles if t.startswith("✓ output max|Δ| ")]
    assert verdict and f" vs {earliest} (no goldens) (atol 5e-2) · " in verdict[0], titles
    assert "Configure golden tensors…" in titles  # still offered
    assert not [d for d in client.diagnostics.get(uri, []) if d.code == "no-golden"]
    cfg = await execute(client, "pypto-lsp.showConfig", uri)
    assert cfg["compared_with"] == f"{earliest} (no goldens)" and cfg["golden"]["inputs"] is None
    res = await execute(client, "pypto-lsp.validateFile", uri)
    assert res["status"] == "pass"


async def test_golden_paths_from_settings(client: LanguageClient) -> None:
    path = dump(client.ws, "49_")  # type: ignore[attr-defined]
    uri = path.as_uri()
    golden: Path = client.golden  # type: ignore[attr-defined]
    n = len(results_for(client, uri))
    settings(client, golden={"inputs": str(golden / "tensors.pt"), "expected": str(golden / "expected.pt")})
    res = await wait_result(client, uri, after=n)
    assert res["status"] == "pass"
    cfg = await execute(client, "pypto-lsp.showConfig", uri)
    assert cfg["golden_source"] == "settings" and cfg["compared_with"] == "goldens"
    titles = await lens_titles(client, uri)
    assert any(t.startswith("✓ output") and " vs " not in t for t in titles), titles


async def test_tolerances_from_settings(client: LanguageClient) -> None:
    path = dump(client.ws, "49_")  # type: ignore[attr-defined]
    uri = path.as_uri()
    n = len(results_for(client, uri))
    settings(client, atol=1e-12, rtol=0)
    res = await wait_result(client, uri, after=n)
    assert res["status"] == "fail" and res["atol"] == 1e-12
    titles = await lens_titles(client, uri)
    assert any(t.startswith("✗ output max|Δ| ") and "> atol 1e-12" in t for t in titles), titles
    n += 1
    settings(client, atol=0.05, rtol=0.05)
    assert (await wait_result(client, uri, after=n))["status"] == "pass"


async def test_run_on_manual_and_bad_values(client: LanguageClient) -> None:
    path = dump(client.ws, "49_")  # type: ignore[attr-defined]
    uri = path.as_uri()
    settings(client, runOn="manual", rtol="lots")  # a bad value is reported and ignored
    await wait_until(lambda: any("'rtol' must be" in m.message for m in client.log_messages), 10, "a settings warning")
    n = len(results_for(client, uri))
    save_doc(client, path, path.read_text() + "# edited\n", uri, version=2)
    await asyncio.sleep(1.5)
    assert len(results_for(client, uri)) == n, "validated although runOn is manual"
    res = await execute(client, "pypto-lsp.validateFile", uri)
    assert res["status"] == "pass" and res["rtol"] == 0.05
    settings(client, runOn="onSave")


async def test_run_on_type_validates_without_a_save(client: LanguageClient) -> None:
    from .conftest import change_doc

    path = dump(client.ws, "48_")  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    n = len(results_for(client, uri))
    if n == 0:
        await wait_result(client, uri)
        n = 1
    settings(client, runOn="onType")
    text = path.read_text()
    change_doc(client, uri, text.replace("pl.tile.row_expand_div(", "pl.tile.row_expand_mul("), 2)
    res = await wait_result(client, uri, after=n)
    assert res["status"] == "fail", res
    settings(client, runOn="onSave")
