"""Configuration: no goldens (the earliest dump is the reference, the lens says so), settings goldens and tolerances, runOn."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import (
    SOFTMAX,
    SOURCES,
    Healthy,
    client_fixture,
    copy_tree,
    dump,
    execute,
    lens_titles,
    open_doc,
    require,
    results_for,
    save_doc,
    wait_result,
    wait_until,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module")]


def _workspace(lsp_client: LanguageClient, source: str, tmp: pytest.TempPathFactory) -> Path:
    case: Healthy = SOFTMAX[require(source)]
    ws = copy_tree(case.folder, tmp.mktemp("noconfig"), [case.late, case.last])
    golden = tmp.mktemp("golden")
    for rel in (case.inputs, case.expected):
        (ws / rel).rename(golden / Path(rel).name)  # the dumps have no goldens beside them now
    (ws / "pypto-lsp.toml").unlink(missing_ok=True)  # nor a config that names them
    lsp_client.ws, lsp_client.golden, lsp_client.case = ws, golden, case  # type: ignore[attr-defined]
    return ws


client = client_fixture(_workspace, params=SOURCES)


def settings(client: LanguageClient, **values: object) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"pypto-lsp": values}))


async def test_without_goldens_the_earliest_dump_is_the_reference(client: LanguageClient) -> None:
    """No goldens anywhere: validated against the folder's earliest dump on synthesized inputs, and the lens says so."""
    case: Healthy = client.case  # type: ignore[attr-defined]
    path = dump(client.ws, case.last)  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    res = await wait_result(client, uri)
    assert res["status"] == "pass", res
    earliest = dump(client.ws, case.late).stem  # type: ignore[attr-defined]
    titles = await lens_titles(client, uri)
    verdict = [t for t in titles if t.startswith(f"✓ {case.output} max|Δ| ")]
    assert verdict and f" vs {earliest} (no goldens) (atol 5e-2) · " in verdict[0], titles
    assert "Configure golden tensors…" in titles  # still offered
    assert not [d for d in client.diagnostics.get(uri, []) if d.code == "no-golden"]
    cfg = await execute(client, "pypto-lsp.showConfig", uri)
    assert cfg["compared_with"] == f"{earliest} (no goldens)" and cfg["golden"]["inputs"] is None
    res = await execute(client, "pypto-lsp.validateFile", uri)
    assert res["status"] == "pass"


async def test_golden_paths_from_settings(client: LanguageClient) -> None:
    case: Healthy = client.case  # type: ignore[attr-defined]
    path = dump(client.ws, case.last)  # type: ignore[attr-defined]
    uri = path.as_uri()
    golden: Path = client.golden  # type: ignore[attr-defined]
    n = len(results_for(client, uri))
    settings(client, golden={"inputs": str(golden / Path(case.inputs).name), "expected": str(golden / Path(case.expected).name)})
    res = await wait_result(client, uri, after=n)
    assert res["status"] == "pass"
    cfg = await execute(client, "pypto-lsp.showConfig", uri)
    assert cfg["golden_source"] == "settings" and cfg["compared_with"] == "goldens"
    titles = await lens_titles(client, uri)
    assert any(t.startswith(f"✓ {case.output}") and " vs " not in t for t in titles), titles


async def test_tolerances_from_settings(client: LanguageClient) -> None:
    path = dump(client.ws, client.case.last)  # type: ignore[attr-defined]
    uri = path.as_uri()
    n = len(results_for(client, uri))
    settings(client, atol=1e-12, rtol=0)
    res = await wait_result(client, uri, after=n)
    assert res["status"] == "fail" and res["atol"] == 1e-12
    titles = await lens_titles(client, uri)
    assert any(t.startswith(f"✗ {client.case.output} max|Δ| ") and "> atol 1e-12" in t for t in titles), titles  # type: ignore[attr-defined]
    n += 1
    settings(client, atol=0.05, rtol=0.05)
    assert (await wait_result(client, uri, after=n))["status"] == "pass"


async def test_run_on_manual_and_bad_values(client: LanguageClient) -> None:
    path = dump(client.ws, client.case.last)  # type: ignore[attr-defined]
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

    path = dump(client.ws, client.case.late)  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    n = len(results_for(client, uri))
    if n == 0:
        await wait_result(client, uri)
        n = 1
    settings(client, runOn="onType")
    text = path.read_text()
    assert "pl.tile.row_expand_div(" in text
    change_doc(client, uri, text.replace("pl.tile.row_expand_div(", "pl.tile.row_expand_mul("), 2)
    res = await wait_result(client, uri, after=n)
    assert res["status"] == "fail", res
    settings(client, runOn="onSave")


async def test_configure_golden_tensors_writes_the_case_and_checks_again(client: LanguageClient) -> None:
    """The editor's "Configure Golden Tensors" ends in ``pypto-lsp.writeGoldenCase``: the server writes
    the ``[[cases]]`` entry (the one case writer), the open dump is checked against it at once; a
    second time updates the same entry in place; a missing file is refused, nothing written."""
    from pygls.exceptions import JsonRpcException

    case: Healthy = client.case  # type: ignore[attr-defined]
    ws: Path = client.ws  # type: ignore[attr-defined]
    golden: Path = client.golden  # type: ignore[attr-defined]
    path = dump(ws, case.last)
    n = len(results_for(client, path.as_uri()))
    uri = open_doc(client, path, version=10)  # open (again; the same text): an open dump is what is checked again
    if n == 0:
        await wait_result(client, uri)
    assert (await execute(client, "pypto-lsp.showConfig", uri))["golden_source"] in ("settings", "differential")  # no case yet
    toml = ws / "pypto-lsp.toml"
    assert not toml.exists()
    inputs, expected = golden / Path(case.inputs).name, golden / Path(case.expected).name
    n = len(results_for(client, uri))
    got = await execute(
        client,
        "pypto-lsp.writeGoldenCase",
        {"dumps": path.parent.as_uri(), "inputs": str(inputs), "expected": inputs.parent.joinpath(expected.name).as_uri()},
    )
    assert got == {"config": str(toml), "uri": toml.as_uri(), "written": "added"}
    # the goldens are outside the workspace: written absolute; the dumps relative to the toml
    assert (
        toml.read_text() == f'[[cases]]\ndumps = "{path.parent.name}"\ninputs = "{inputs.as_posix()}"\nexpected = "{expected.as_posix()}"\n'
    )
    res = await wait_result(client, uri, after=n)  # checked again without a save
    assert res["status"] == "pass", res
    cfg = await execute(client, "pypto-lsp.showConfig", uri)
    assert cfg["golden_source"] == str(toml) and cfg["golden"]["inputs"] == str(inputs), cfg
    # a second time, with a comment of the user's: updated in place, the comment kept
    toml.write_text(toml.read_text().replace('inputs = "', '# theirs\ninputs = "'))
    got = await execute(client, "pypto-lsp.writeGoldenCase", {"dumps": str(path), "inputs": str(inputs), "expected": str(expected)})
    assert got["written"] == "updated" and toml.read_text().count("[[cases]]") == 1 and "# theirs\n" in toml.read_text()
    before = toml.read_text()
    with pytest.raises(JsonRpcException, match="does not exist"):
        await execute(
            client, "pypto-lsp.writeGoldenCase", {"dumps": str(path.parent), "inputs": str(golden / "nope.pt"), "expected": str(expected)}
        )
    with pytest.raises(JsonRpcException, match="absolute path"):
        await execute(client, "pypto-lsp.writeGoldenCase", {"dumps": "passes_dump", "inputs": str(inputs), "expected": str(expected)})
    assert toml.read_text() == before
