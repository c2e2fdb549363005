"""textDocument/publishDiagnostics from validation: a numeric mismatch on the output write, re-checked after edit + save."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import (
    BROKEN,
    SOFTMAX,
    SOURCES,
    Broken,
    Healthy,
    broken_workspace,
    client_fixture,
    copy_tree,
    dump,
    lens_titles,
    open_doc,
    require,
    results_for,
    save_doc,
    wait_result,
    wait_until,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module")]


def _workspace(lsp_client: LanguageClient, param: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = require(param)
    root = tmp_path_factory.mktemp("diagnostics")
    case = lsp_client.case = BROKEN[source]  # type: ignore[attr-defined]
    ws = broken_workspace(case, root / "broken", list(case.passes[2:]))
    lsp_client.ws = ws  # type: ignore[attr-defined]
    lsp_client.healthy = SOFTMAX[source]  # type: ignore[attr-defined]
    lsp_client.softmax = copy_tree(SOFTMAX[source].folder, root / "softmax", ["00_"])  # type: ignore[attr-defined]
    return root


client = client_fixture(_workspace, params=SOURCES)


def case(client: LanguageClient) -> Broken:
    return client.case  # type: ignore[attr-defined,no-any-return]


def errors(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if d.severity == types.DiagnosticSeverity.Error]


async def test_fail_lens_and_mismatch_on_the_output_write(client: LanguageClient) -> None:
    name = case(client).output
    path = dump(client.ws, case(client).passes[2])  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    res = await wait_result(client, uri)
    assert res["status"] == "fail", res
    out = res["tensors"][name]
    assert out["pass"] is False and out["max_abs_diff"] > 0.05
    titles = await lens_titles(client, uri)
    assert any(t.startswith(f"✗ {name} max|Δ| {out['max_abs_diff']:.2e} > atol 5e-2 · ") for t in titles), titles

    diags = await wait_until(lambda: errors(client, uri), 10, "the mismatch diagnostic")
    mismatch = [d for d in diags if d.code == "numeric-mismatch"]
    assert mismatch, diags
    write_lines = {line - 1 for pair in res["writes"].values() for line in range(pair[0][0], pair[0][1] + 1)} | {
        line - 1 for spans in res["writes"].values() for s in spans for line in range(s[0], s[1] + 1)
    }
    lines = path.read_text().splitlines()
    for d in mismatch:
        assert d.range.start.line in write_lines, (d.range, res["writes"])
        assert any(w in lines[d.range.start.line] for w in ("pl.tile.store", "pl.tensor.assemble", "return", "self.")), lines[
            d.range.start.line
        ]
        assert f"'{name}'" in d.message and "atol 5e-2" in d.message and "rtol 5e-2" in d.message
        assert f"{out['max_abs_diff']:.2e}" in d.message
        assert d.source == "pypto-lsp"
        assert not d.related_information  # nothing earlier is known to diverge


async def test_related_information_points_at_the_first_divergent_pass(client: LanguageClient) -> None:
    first = dump(client.ws, case(client).passes[2]).as_uri()  # type: ignore[attr-defined]
    path = dump(client.ws, case(client).passes[3])  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    res = await wait_result(client, uri)
    assert res["status"] == "fail"
    assert res["first_divergent"] == first
    diags = await wait_until(lambda: [d for d in errors(client, uri) if d.code == "numeric-mismatch"], 10, "the mismatch diagnostic")
    rel = diags[0].related_information
    assert rel and rel[0].location.uri == first, rel


async def test_edit_and_save_rechecks(client: LanguageClient) -> None:
    c = case(client)
    path = dump(client.ws, c.passes[2])  # type: ignore[attr-defined]
    uri = path.as_uri()
    before = len(results_for(client, uri))
    text = path.read_text()
    assert c.bug in text
    save_doc(client, path, text.replace(c.bug, c.fix), uri, version=2)
    res = await wait_result(client, uri, after=before)
    assert res["status"] == "pass", res
    assert res["tensors"][c.output]["max_abs_diff"] < 0.01
    await wait_until(lambda: not errors(client, uri), 10, "the mismatch diagnostic to go")
    titles = await lens_titles(client, uri)
    assert any(t.startswith(f"✓ {c.output} max|Δ| ") for t in titles), titles
    # the first divergent pass moved on: p3 now points at itself (no related information to p2)
    path36 = dump(client.ws, c.passes[3])  # type: ignore[attr-defined]
    res36 = results_for(client, path36.as_uri())[-1]
    assert res36["status"] == "fail"


async def test_a_newer_save_supersedes_an_older_run(client: LanguageClient) -> None:
    c = case(client)
    path = dump(client.ws, c.passes[2])  # type: ignore[attr-defined]
    uri = path.as_uri()
    fixed = path.read_text()
    assert c.fix in fixed
    n = len(results_for(client, uri))
    save_doc(client, path, fixed.replace(c.fix, c.bug), uri, version=3)  # would fail...
    save_doc(client, path, fixed + "# saved again\n", uri, version=4)  # ...but this one wins
    # The run of version 3 may legitimately finish (e.g. from the result cache) before the
    # version-4 save reaches the server; what must hold is that nothing older is published
    # after the newest result, and that the file ends up checked against version 4.
    await wait_until(lambda: "pass" in [r["status"] for r in results_for(client, uri)[n:]], 60, "the version-4 result")
    await asyncio.sleep(1.5)
    statuses = [r["status"] for r in results_for(client, uri)[n:]]
    assert statuses[-1] == "pass" and statuses.count("pass") == 1, f"a superseded run was published after the newer one: {statuses}"
    assert statuses in (["pass"], ["fail", "pass"]), statuses
    assert not errors(client, uri)


async def test_a_runtime_error_lands_on_its_line(client: LanguageClient) -> None:
    path = dump(client.softmax, "00_")  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    assert (await wait_result(client, uri))["status"] == "pass"
    text = path.read_text()
    healthy: Healthy = client.healthy  # type: ignore[attr-defined]
    # operands whose shapes cannot broadcast: the checker lets it through, torch raises at run time
    lhs = healthy.div_first.split("(", 1)[1].split(",")[0]
    bad = f"pl.tile.add({lhs}, pl.tile.create({healthy.block_shape}, dtype=pl.FP32, target_memory=pl.Mem.Vec))"
    assert healthy.div_first in text
    new = text.replace(healthy.div_first, bad)
    target = next(i for i, line in enumerate(new.splitlines()) if bad in line)
    n = len(results_for(client, uri))
    save_doc(client, path, new, uri, version=2)
    res = await wait_result(client, uri, after=n)
    assert res["status"] == "error", res
    assert res["error"]["line"] == target + 1, res["error"]
    diags = await wait_until(lambda: errors(client, uri), 10, "the runtime error diagnostic")
    assert [d.range.start.line for d in diags] == [target], [(d.range.start.line, d.message) for d in diags]
    assert "RuntimeError" in diags[0].message and "size of tensor" in diags[0].message
    titles = await lens_titles(client, uri)
    assert f"✗ error: RuntimeError (line {target + 1})" in titles, titles
