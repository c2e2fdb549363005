"""The names the server and the VS Code extension share (``pypto_lsp/server/contract.py``) are spelled
the same on both sides: the extension's copies are read from its TypeScript sources and compared."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pypto_lsp.server import contract as C

EXT = Path(__file__).resolve().parents[2] / "vscode-extension"
_ENTRY = re.compile(r"^\s*(\w+)\s*:\s*'([^']*)'\s*,?\s*$", re.M)


def ts_object(path: str, name: str) -> dict[str, str]:
    """The string entries of ``export const NAME = { key: 'value', ... } as const`` in a TS file."""
    text = (EXT / path).read_text(encoding="utf-8")
    m = re.search(r"export const " + name + r"\s*=\s*\{(.*?)\}", text, re.S)
    assert m is not None, f"{name} is not in {path}"
    return dict(_ENTRY.findall(m.group(1)))


def ts_const(path: str, name: str) -> str:
    text = (EXT / path).read_text(encoding="utf-8")
    m = re.search(r"export const " + name + r"\s*=\s*'([^']*)'", text)
    assert m is not None, f"{name} is not in {path}"
    return m.group(1)


def test_server_commands_match_the_extension() -> None:
    ext = ts_object("src/core/protocol.ts", "SERVER_COMMANDS")
    assert sorted(ext.values()) == sorted(C.SERVER_COMMANDS)


def test_lens_commands_the_client_implements_match_the_extension() -> None:
    lens = ts_object("src/common/constants.ts", "LENS_CMD")
    pictures = ts_object("src/core/pictures.ts", "PICTURE_CMD")
    memmap = ts_const("src/core/memmap.ts", "SHOW_MEMORY_MAP")
    taskgraph = ts_const("src/core/taskgraph.ts", "SHOW_TASK_GRAPH")
    assert sorted([*lens.values(), pictures["showErrorMap"], memmap, taskgraph]) == sorted(C.CLIENT_COMMANDS)
    # and the extension declares each of them (a lens command VS Code does not know does nothing)
    declared = {c["command"] for c in json.loads((EXT / "package.json").read_text(encoding="utf-8"))["contributes"]["commands"]}
    assert set(C.CLIENT_COMMANDS) <= declared
    assert not set(C.SERVER_COMMANDS) & declared  # the server's own: executeCommand, not client commands


def test_requests_and_notifications_match_the_extension() -> None:
    assert ts_const("src/core/protocol.ts", "FILE_RESULT_NOTIFICATION") == C.FILE_RESULT_NOTIFICATION
    assert ts_const("src/core/pictures.ts", "PASS_CHART_REQUEST") == C.PASS_CHART
    assert ts_const("src/core/pictures.ts", "ERROR_MAP_REQUEST") == C.ERROR_MAP
    assert ts_const("src/core/memmap.ts", "MEMORY_MAP_REQUEST") == C.MEMORY_MAP
    assert ts_const("src/core/taskgraph.ts", "TASK_GRAPH_REQUEST") == C.TASK_GRAPH


def test_the_server_registers_every_contract_name() -> None:
    from pypto_lsp.server.app import create_server

    ls = create_server()
    fm = ls.protocol.fm
    assert set(C.SERVER_COMMANDS) <= set(fm.commands)
    assert set(C.REQUESTS) <= set(fm.features)
    assert not set(C.CLIENT_COMMANDS) & set(fm.commands)  # implemented by the client, never advertised
