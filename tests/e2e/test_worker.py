"""The validation worker: the server never imports torch; a killed worker is replaced; timeouts and crashes.

The first tests drive the real server; the :class:`WorkerClient` tests use a tiny fake
worker speaking the same protocol, so hangs and crashes are deterministic and fast.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import LanguageClient

from pypto_lsp.server import worker_client as WC
from pypto_lsp.validate.config import RunSettings
from pypto_lsp.worker import protocol as P

from .conftest import (
    EXAMPLES,
    SOFTMAX,
    SOURCES,
    client_fixture,
    copy_tree,
    debug_info,
    dump,
    open_doc,
    require,
    results_for,
    save_doc,
    wait_result,
    wait_until,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module")]


def _workspace(lsp_client: LanguageClient, param: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    case = lsp_client.case = SOFTMAX[require(param)]  # type: ignore[attr-defined]
    ws = copy_tree(case.folder, tmp_path_factory.mktemp("softmax"), [case.last])
    lsp_client.ws = ws  # type: ignore[attr-defined]
    return ws


client = client_fixture(_workspace, params=SOURCES)


async def test_server_process_never_imports_torch(client: LanguageClient) -> None:
    path = dump(client.ws, client.case.last)  # type: ignore[attr-defined]
    uri = open_doc(client, path)
    res = await wait_result(client, uri)
    assert res["status"] == "pass"  # a full validation round trip happened
    info = await debug_info(client)
    assert info["torch_loaded"] is False, info
    assert isinstance(info["worker_pid"], int) and info["worker_pid"] != info["pid"]


async def test_killed_worker_is_replaced_and_the_next_save_validated(client: LanguageClient) -> None:
    path = dump(client.ws, client.case.last)  # type: ignore[attr-defined]
    uri = path.as_uri()
    old = (await debug_info(client))["worker_pid"]
    os.kill(old, signal.SIGKILL)
    await asyncio.sleep(0.1)
    n = len(results_for(client, uri))
    save_doc(client, path, path.read_text() + "# touched\n", uri, version=2)
    res = await wait_result(client, uri, after=n, timeout=90)
    assert res["status"] == "pass", res
    info = await debug_info(client)
    assert info["worker_pid"] not in (None, old)
    assert info["worker_spawns"] >= 2
    assert info["torch_loaded"] is False


# ---------------------------------------------------------------------- WorkerClient with a fake worker

FAKE = textwrap.dedent(
    """
    import json, os, sys, time
    out = sys.stdout
    def send(m):
        out.write(json.dumps(m) + "\\n"); out.flush()
    send({"method": "ready", "params": {"pid": os.getpid(), "torch": "fake"}})
    for line in sys.stdin:
        m = json.loads(line)
        if m["method"] == "cancel":
            continue
        send({"method": "started", "params": {"id": m["id"]}})
        what = m["params"].get("do")
        if what == "hang":
            time.sleep(3600)
        elif what == "crash":
            os._exit(9)
        send({"id": m["id"], "result": {"pid": os.getpid(), "echo": m["params"]}})
    """
)


@pytest.fixture
def fake_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE)
    monkeypatch.setattr(WC, "MARGIN_S", 0.2)
    return [sys.executable, str(script)]


async def test_a_hung_run_times_out_and_the_worker_is_replaced(fake_worker: list[str]) -> None:
    wc = WC.WorkerClient(cmd=fake_worker)
    try:
        first = await wc.request("ping", {"do": "echo"}, 5)
        with pytest.raises(P.WorkerError) as e:
            await wc.request("validate", {"do": "hang"}, 0.3)
        assert e.value.kind == P.E_TIMEOUT
        again = await wc.request("ping", {"do": "echo"}, 5)
        assert again["pid"] != first["pid"]
        assert wc.stats.timeouts == 1 and wc.stats.spawns == 2
    finally:
        await wc.stop()


async def test_a_crash_fails_the_running_request_only(fake_worker: list[str]) -> None:
    wc = WC.WorkerClient(cmd=fake_worker)
    try:
        await wc.start()
        crash = asyncio.ensure_future(wc.request("validate", {"do": "crash"}, 5))
        queued = asyncio.ensure_future(wc.request("validate", {"do": "echo", "n": 2}, 5))
        with pytest.raises(P.WorkerError) as e:
            await crash
        assert e.value.kind == P.E_CRASH
        # the request that had not started went to the next worker
        assert (await asyncio.wait_for(queued, 20))["echo"]["n"] == 2
        assert wc.stats.crashes == 1
    finally:
        await wc.stop()


async def test_an_abandoned_request_is_dropped_and_its_hang_still_caught(fake_worker: list[str]) -> None:
    wc = WC.WorkerClient(cmd=fake_worker)
    try:
        await wc.start()
        hung = asyncio.ensure_future(wc.request("validate", {"do": "hang"}, 0.3))
        await asyncio.sleep(0.2)
        hung.cancel()  # superseded by a newer save
        with pytest.raises(asyncio.CancelledError):
            await hung
        # the worker is still stuck in it: the watchdog kills it and the next request is served
        res = await asyncio.wait_for(wc.request("ping", {"do": "echo"}, 5), 20)
        assert res["echo"]["do"] == "echo"
        assert wc.stats.timeouts == 1
    finally:
        await wc.stop()


async def test_a_worker_that_cannot_start_is_reported() -> None:
    wc = WC.WorkerClient(cmd=[sys.executable, "-c", "import sys; sys.exit(3)"])
    with pytest.raises(P.WorkerError) as e:
        await wc.request("ping", {}, 5)
    assert e.value.kind == P.E_UNAVAILABLE
    await wc.stop()


async def test_protocol_round_trip() -> None:
    params = P.ValidateParams("f.py", "text", P.Golden("i.pt", "e.pt"), RunSettings(0.01, 0.02, entry="main", timeout_s=3, backend="910B"))
    msg = P.decode(P.encode(P.request(4, P.VALIDATE, params)))
    assert msg["id"] == 4 and msg["method"] == P.VALIDATE
    settings = {
        "rtol": 0.01,
        "atol": 0.02,
        "entry": "main",
        "timeout_s": 3,
        "memory": True,
        "backend": "910B",
        "exact": False,
        "max_alloc": None,
        "sanitize": True,
        "ranks": None,
    }
    assert msg["params"]["settings"] == settings
    assert P.from_wire(P.ValidateParams, msg["params"]) == params
    folder = P.ValidateFolderParams(["a.py"], P.Golden("", "", differential="/d"), RunSettings(memory=False), texts={"a.py": "x"})
    assert P.from_wire(P.ValidateFolderParams, P.decode(P.encode(P.request(5, P.VALIDATE_FOLDER, folder)))["params"]) == folder
    assert P.decode(P.encode(P.response(4, {"x": float("nan")})))["result"] == {"x": None}


async def test_a_malformed_request_is_a_bad_request_naming_each_field() -> None:
    import io

    from pypto_lsp.worker.service import Worker

    out = io.BytesIO()
    worker = Worker(out)
    bad = {"file": "f.py", "golden": {"inputs": "i.pt"}, "settings": {"rtol": "loose", "atol": 0.1}}
    worker.handle({"id": 9, "method": P.VALIDATE, "params": bad})
    answer = P.decode(out.getvalue().splitlines()[-1])
    assert answer["id"] == 9 and answer["error"]["kind"] == P.E_BAD_REQUEST
    message = answer["error"]["message"]
    for where in ("$.text", "$.golden.expected", "$.settings.rtol"):
        assert where in message, message
    with pytest.raises(ValueError, match=r"required field missing @ \$\.settings"):
        P.from_wire(
            P.LocalizeParams,
            {"previous_file": "a", "previous_text": "", "file": "b", "text": "", "golden": {"inputs": "i", "expected": "e"}},
        )


async def test_an_endless_loop_times_out_and_the_worker_is_renewed(client: LanguageClient) -> None:
    from lsprotocol import types

    ws = client.ws  # type: ignore[attr-defined]
    src = dump(ws, client.case.last).read_text()  # type: ignore[attr-defined]
    # a loop that never ends: the run's own timeout fires, then the worker (with a thread
    # still spinning in it) is replaced
    src = src.replace(
        "        with pl.scope():\n",
        "        i: pl.Scalar[pl.INDEX] = 0\n        while i < 1:\n            i: pl.Scalar[pl.INDEX] = i + 0\n        with pl.scope():\n",
    )
    assert "while i < 1" in src
    path = ws / "passes_dump" / "50_after_Loop.py"
    path.write_text(src)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"pypto-lsp": {"timeoutSeconds": 1}}))
    old = (await debug_info(client))["worker_pid"]
    uri = open_doc(client, path)
    res = await wait_result(client, uri, timeout=60)
    assert res["status"] == "error" and "timeout" in res["error"]["kind"].lower(), res["error"]
    diags = await wait_until(
        lambda: [d for d in client.diagnostics.get(uri, []) if d.severity == types.DiagnosticSeverity.Error], 10, "a diagnostic"
    )
    assert "timeout" in diags[0].message.lower()
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"pypto-lsp": {"timeoutSeconds": 30}}))
    # the next run is served by a fresh worker
    other = dump(ws, client.case.last)  # type: ignore[attr-defined]
    n = len(results_for(client, other.as_uri()))
    res = await execute_validate(client, other)
    assert res["status"] == "pass"
    info = await debug_info(client)
    assert info["worker_pid"] not in (None, old), (old, info)
    assert len(results_for(client, other.as_uri())) > n


async def execute_validate(client: LanguageClient, path: Path) -> dict:  # type: ignore[type-arg]
    from .conftest import execute

    return await execute(client, "pypto-lsp.validateFile", path.as_uri())  # type: ignore[no-any-return]


def _localize_params(previous: str, text: str, timeout_s: float = 30.0) -> P.LocalizeParams:
    golden = EXAMPLES / "elementwise" / "golden"
    return P.LocalizeParams(
        previous_file="09.py",
        previous_text=previous,
        file="11.py",
        text=text,
        golden=P.Golden(str(golden / "inputs.pt"), str(golden / "expected.pt")),
        settings=RunSettings(0.05, 0.05, timeout_s=timeout_s),
    )


async def test_the_real_worker_localizes_and_survives_a_run_that_never_ends() -> None:
    dumps = EXAMPLES / "broken_elementwise" / "passes_dump"
    prev = (dumps / "09_after_OutlineIncoreScopes.py").read_text()
    cur = (dumps / "11_after_ConvertTensorToTileOps.py").read_text()
    wc = WC.WorkerClient()  # the real worker process
    try:
        found = await wc.localize(_localize_params(prev, cur))
        assert found is not None and (found["line"], found["name"]) == (10, "y_chunk__tile")
        assert await wc.localize(_localize_params(prev, "not a dump")) is None
        # the previous pass never ends: its traced run times out, the answer says nothing,
        # and the worker (a thread still spinning in it) is replaced for the next request
        endless = prev.replace(
            "        for r__idx_v0,",
            "        i: pl.Scalar[pl.INDEX] = 0\n        while i < 1:\n            i: pl.Scalar[pl.INDEX] = i + 0\n        for r__idx_v0,",
            1,
        )
        assert "while i < 1" in endless
        first = await wc.ping()
        assert await wc.localize(_localize_params(endless, endless.replace("i + 0", "i + 0 * 2"), timeout_s=1.0)) is None
        again = await wc.ping()
        assert again["pid"] != first["pid"]
        found = await wc.localize(_localize_params(prev, cur))
        assert found is not None and found["line"] == 10
    finally:
        await wc.stop()


async def test_the_real_worker_compares_a_returned_result_with_an_empty_expected_bundle(tmp_path: Path) -> None:
    """An expected bundle without tensors next to a program that returns its result (issue 28):
    the worker takes the folder's earliest dump, run on the bundle's inputs, as the reference."""
    import torch

    torch.save({}, tmp_path / "empty.pt")
    dumps = EXAMPLES / "returns" / "passes_dump"
    golden = P.Golden(str(EXAMPLES / "returns" / "golden" / "inputs.pt"), str(tmp_path / "empty.pt"))
    tile = dumps / "11_after_ConvertTensorToTileOps.py"
    wc = WC.WorkerClient()
    try:
        for text, want in ((tile.read_text(), "pass"), (tile.read_text().replace("(chunk__tile, 0.5)", "(chunk__tile, 0.25)"), "fail")):
            res = await wc.validate(P.ValidateParams(str(tile), text, golden, RunSettings(0.05, 0.05, timeout_s=60), use_cache=False))
            assert res["status"] == want and set(res["tensors"]) == {"return"}, res
    finally:
        await wc.stop()
