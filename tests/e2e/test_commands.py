"""workspace/executeCommand: validateFile, validateFolder (progress, cancellation), firstDivergentPass, showGeneratedCode, showConfig."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import (
    BROKEN,
    SOFTMAX,
    SOURCES,
    VSCODE,
    Broken,
    big_workspace,
    broken_workspace,
    copy_tree,
    debug_info,
    dump,
    execute,
    make_config,
    open_doc,
    require,
    wait_result,
    wait_until,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module")]


@pytest_lsp.fixture(config=make_config(), scope="module", params=SOURCES)
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    source = require(request.param)
    root = tmp_path_factory.mktemp("commands")
    case = lsp_client.case = BROKEN[source]  # type: ignore[attr-defined]
    lsp_client.broken = broken_workspace(case, root / "broken", list(case.passes))  # type: ignore[attr-defined]
    lsp_client.softmax = copy_tree(SOFTMAX[source].folder, root / "softmax")  # type: ignore[attr-defined]
    lsp_client.last = SOFTMAX[source].last  # type: ignore[attr-defined]
    lsp_client.big = big_workspace(case, root / "big")  # type: ignore[attr-defined]
    # no cache: the cancellation test needs runs that take time
    await start_session(lsp_client, root)
    yield
    await lsp_client.shutdown_session()


async def start_session(client: LanguageClient, root) -> None:  # type: ignore[no-untyped-def]
    from .conftest import start

    await start(client, VSCODE, root, {"pypto-lsp": {"cache": False}})


def case(client: LanguageClient) -> Broken:
    return client.case  # type: ignore[attr-defined,no-any-return]


async def test_validate_file(client: LanguageClient) -> None:
    p0, p1, p2, p3 = case(client).passes
    path = dump(client.broken, p2)  # type: ignore[attr-defined]
    res = await execute(client, "pypto-lsp.validateFile", path.as_uri())
    assert res["uri"] == path.as_uri()
    assert res["status"] == "fail" and res["tensors"][case(client).output]["pass"] is False
    # a closed file that fails gets its diagnostics too
    await wait_until(lambda: client.diagnostics.get(path.as_uri()), 10, "diagnostics for the closed file")
    # nothing was known of p1: the server validates it in the background (it passes), so p2 is
    # the first divergent pass and gets its first differing value without a folder run
    await wait_until(
        lambda: [d for d in client.diagnostics.get(path.as_uri(), []) if d.code == "first-differing-value"], 30, "first differing value"
    )
    prev = dump(client.broken, p1)  # type: ignore[attr-defined]
    assert any(r["uri"] == prev.as_uri() and r["status"] == "pass" for r in client.file_results)  # type: ignore[attr-defined]


async def test_validate_folder_reports_progress_and_first_divergent(client: LanguageClient) -> None:
    p0, p1, p2, p3 = case(client).passes
    folder = client.broken / "passes_dump"  # type: ignore[attr-defined]
    before = set(client.progress_reports)
    res = await execute(client, "pypto-lsp.validateFolder", folder.as_uri())
    names = [f["file"].rsplit("/", 1)[-1][:3] for f in res["files"]]
    assert names == [p0, p1, p2, p3], names
    assert [f["status"] for f in res["files"]] == ["pass", "pass", "fail", "fail"]
    assert res["first_divergent"] == dump(client.broken, p2).as_uri()  # type: ignore[attr-defined]
    assert res["cancelled"] is False
    # work-done progress: begin, one report per pass "k/N <file>", end
    tokens = [t for t in client.progress_reports if t not in before]
    assert len(tokens) == 1
    reports = client.progress_reports[tokens[0]]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].cancellable
    msgs = [r.message for r in reports if isinstance(r, types.WorkDoneProgressReport)]
    assert msgs == [f"{k}/4 {n}" for k, n in enumerate(sorted(p.name for p in folder.iterdir()), start=1)], msgs
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    # diagnostics only for the files that fail
    assert client.diagnostics.get(dump(client.broken, p3).as_uri())  # type: ignore[attr-defined]
    assert dump(client.broken, p0).as_uri() not in client.diagnostics  # type: ignore[attr-defined]


async def test_the_first_divergent_pass_shows_what_it_changed(client: LanguageClient) -> None:
    # p2 is the first failing pass and p1 passes: the lines p2's pass changed (with
    # addresses normalised away) are marked, and the hand-made bug is one of them
    p0, p1, p2, p3 = case(client).passes
    folder = client.broken / "passes_dump"  # type: ignore[attr-defined]
    await execute(client, "pypto-lsp.validateFolder", folder.as_uri())
    path35 = dump(client.broken, p2)  # type: ignore[attr-defined]
    await wait_until(
        lambda: [d for d in client.diagnostics.get(path35.as_uri(), []) if d.code == "changed-in-divergent-pass"], 20, "change hints"
    )
    hints = [d for d in client.diagnostics[path35.as_uri()] if d.code == "changed-in-divergent-pass"]
    lines = path35.read_text().splitlines()
    bug = next(i for i, line in enumerate(lines) if case(client).bug in line)
    assert any(h.range.start.line <= bug <= h.range.end.line for h in hints), [h.range for h in hints]
    assert len(hints) <= 5 and all(h.severity == types.DiagnosticSeverity.Information for h in hints)
    assert case(client).pass_name in hints[0].message
    # p3 fails too but is not the first divergent pass: no hints there
    path36 = dump(client.broken, p3)  # type: ignore[attr-defined]
    assert not [d for d in client.diagnostics.get(path36.as_uri(), []) if d.code == "changed-in-divergent-pass"]


async def test_the_first_divergent_pass_shows_the_first_value_that_differs(client: LanguageClient) -> None:
    # the worker re-runs p1 and p2 traced: the first value p2 computes unlike p1 is the
    # hand-made bug, marked as a warning with p1's statement as related information
    c = case(client)
    p0, p1, p2, p3 = c.passes
    folder = client.broken / "passes_dump"  # type: ignore[attr-defined]
    await execute(client, "pypto-lsp.validateFolder", folder.as_uri())
    path35 = dump(client.broken, p2)  # type: ignore[attr-defined]
    await wait_until(
        lambda: [d for d in client.diagnostics.get(path35.as_uri(), []) if d.code == "first-differing-value"], 30, "first differing value"
    )
    (d,) = [d for d in client.diagnostics[path35.as_uri()] if d.code == "first-differing-value"]
    lines = path35.read_text().splitlines()
    assert c.bug in lines[d.range.start.line]
    assert d.severity == types.DiagnosticSeverity.Warning
    assert f"first value that differs from {p1}" in d.message and f"'{c.value}'" in d.message
    assert d.related_information and d.related_information[0].location.uri == dump(client.broken, p1).as_uri()  # type: ignore[attr-defined]
    # then the next candidates (statements whose operands agree but whose results do not), in p2
    also = [r for r in d.related_information if r.location.uri == path35.as_uri()]
    assert len(also) <= 2 and all(r.message.startswith("also a candidate: '") for r in also), d.related_information
    assert all(r.location.range.start.line > d.range.start.line for r in also)
    # p3 fails too but is not the first divergent pass
    path36 = dump(client.broken, p3)  # type: ignore[attr-defined]
    assert not [d for d in client.diagnostics.get(path36.as_uri(), []) if d.code == "first-differing-value"]
    # opened, it also has lenses: one at the top that reveals the line, one above the statement
    uri = open_doc(client, path35)
    lenses: list[types.CodeLens] = []

    async def fetch() -> list[types.CodeLens]:
        nonlocal lenses
        got = await client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
        lenses = [x for x in got or [] if x.command is not None and x.command.title.startswith("⚑")]
        return lenses

    for _ in range(60):
        if len(await fetch()) == 2:
            break
        await asyncio.sleep(0.25)
    top, above = sorted(lenses, key=lambda x: x.range.start.line)
    assert top.range.start.line == 0 and top.command is not None and above.command is not None
    assert top.command.command == "pypto-lsp.revealLine" and list(top.command.arguments or []) == [uri, d.range.start.line]
    assert f"line {d.range.start.line + 1} '{c.value}'" in top.command.title
    assert above.range.start.line == d.range.start.line and c.value_diff in above.command.title, above.command.title


async def test_first_divergent_pass(client: LanguageClient) -> None:
    p0, p1, p2, p3 = case(client).passes
    path = dump(client.broken, p0)  # type: ignore[attr-defined]
    loc = await execute(client, "pypto-lsp.firstDivergentPass", path.as_uri())
    assert loc["uri"] == dump(client.broken, p2).as_uri()  # type: ignore[attr-defined]
    line = loc["range"]["start"]["line"]
    text = dump(client.broken, p2).read_text().splitlines()[line]  # type: ignore[attr-defined]
    assert "pl.tile.store" in text or "pl.tensor.assemble" in text or "return" in text, text


async def test_first_divergent_pass_of_a_healthy_folder_is_null(client: LanguageClient) -> None:
    path = dump(client.softmax, "00_")  # type: ignore[attr-defined]
    assert await execute(client, "pypto-lsp.firstDivergentPass", path.as_uri()) is None


async def test_cancel_request_stops_a_folder_run(client: LanguageClient) -> None:
    folder = client.big / "passes_dump"  # type: ignore[attr-defined]
    total = len(list(folder.glob("*.py")))
    seen = len(client.file_results)  # type: ignore[attr-defined]
    msg_id = "cancel-me-1"
    fut = asyncio.ensure_future(
        client.protocol.send_request_async(
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(command="pypto-lsp.validateFolder", arguments=[folder.as_uri()]),
            msg_id=msg_id,
        )
    )
    await wait_until(lambda: len([r for r in client.file_results[seen:] if "/big/" in r["uri"]]) >= 2, 60, "two results")  # type: ignore[attr-defined]
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    with pytest.raises(Exception) as e:
        await asyncio.wait_for(fut, 30)
    assert "cancel" in str(e.value).lower(), e.value
    await asyncio.sleep(1.5)
    done = len([r for r in client.file_results[seen:] if "/big/" in r["uri"]])  # type: ignore[attr-defined]
    assert done < total, f"{done} of {total} files validated after the cancel"
    await asyncio.sleep(1.0)
    assert len([r for r in client.file_results[seen:] if "/big/" in r["uri"]]) == done, "results kept coming"  # type: ignore[attr-defined]
    # the worker is fine afterwards
    path = dump(client.softmax, client.last)  # type: ignore[attr-defined]
    assert (await execute(client, "pypto-lsp.validateFile", path.as_uri()))["status"] == "pass"


async def test_progress_cancel_stops_a_folder_run(client: LanguageClient) -> None:
    folder = client.big / "passes_dump"  # type: ignore[attr-defined]
    total = len(list(folder.glob("*.py")))
    before = set(client.progress_reports)
    task = asyncio.ensure_future(execute(client, "pypto-lsp.validateFolder", folder.as_uri()))

    def token() -> str | None:
        new = [t for t in client.progress_reports if t not in before]
        if new and any(isinstance(r, types.WorkDoneProgressReport) for r in client.progress_reports[new[0]]):
            return new[0]  # type: ignore[no-any-return]
        return None

    tok = await wait_until(token, 60, "a progress report")
    client.protocol.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=tok))
    res = await asyncio.wait_for(task, 30)
    assert res["cancelled"] is True
    assert 0 < len(res["files"]) < total
    assert isinstance(client.progress_reports[tok][-1], types.WorkDoneProgressEnd)


async def test_show_generated_code(client: LanguageClient) -> None:
    path = dump(client.softmax, client.last)  # type: ignore[attr-defined]
    open_doc(client, path)
    await wait_result(client, path.as_uri())
    src = await execute(client, "pypto-lsp.showGeneratedCode", path.as_uri())
    assert isinstance(src, str) and "import pypto_lsp.exec.runtime" in src
    assert (await debug_info(client))["torch_loaded"] is False


async def test_show_config(client: LanguageClient) -> None:
    c = case(client)
    path = dump(client.broken, c.passes[2])  # type: ignore[attr-defined]
    cfg = await execute(client, "pypto-lsp.showConfig", path.as_uri())
    resolved = {k: str(Path(v).resolve()) for k, v in cfg["golden"].items()}  # ../shared may be a link
    assert resolved == {"inputs": str(c.inputs.resolve()), "expected": str(c.expected.resolve())}
    assert cfg["golden_source"].endswith("pypto-lsp.toml")
    assert cfg["rtol"] == 0.05 and cfg["atol"] == 0.05
    assert cfg["interpreter"] == sys.executable
    assert cfg["versions"]["torch"].startswith("2.") and cfg["versions"]["pygls"].startswith("2.")
    assert cfg["versions"]["pypto-lsp"]
    assert cfg["settings"]["cache"] is False


async def test_bad_arguments_are_an_error_not_a_crash(client: LanguageClient) -> None:
    with pytest.raises(Exception):
        await execute(client, "pypto-lsp.validateFile", 42)
    with pytest.raises(Exception):
        await execute(client, "pypto-lsp.validateFolder", (client.softmax / "nope").as_uri())  # type: ignore[attr-defined]
    not_a_dump = client.softmax / "helper.py"  # type: ignore[attr-defined]
    not_a_dump.write_text("x = 1\n")
    with pytest.raises(Exception, match="not a pass dump"):
        await execute(client, "pypto-lsp.validateFile", not_a_dump.as_uri())
    assert (await debug_info(client))["torch_loaded"] is False


async def test_shutdown_with_a_folder_run_in_flight(client: LanguageClient) -> None:
    """Last in this module: the server answers shutdown and exits while a folder run is going."""
    folder = client.big / "passes_dump"  # type: ignore[attr-defined]
    seen = len(client.file_results)  # type: ignore[attr-defined]
    run = asyncio.ensure_future(execute(client, "pypto-lsp.validateFolder", folder.as_uri()))
    await wait_until(lambda: len(client.file_results) > seen, 60, "a first result")  # type: ignore[attr-defined]
    await asyncio.wait_for(client.shutdown_async(None), 20)
    client.exit(None)
    assert client._server is not None
    assert await asyncio.wait_for(client._server.wait(), 20) == 0
    run.cancel()
    client.capabilities = None  # the fixture's shutdown has been done here
