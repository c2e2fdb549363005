"""Shared pieces of the end-to-end tests: the real server over stdio, driven by pytest-lsp.

Each test module starts its own server (``python -m pypto_lsp serve``) with a client
capability preset (VS Code or Neovim) and works on copies of the shared fixtures in a
temporary folder (the fixtures are read-only test data).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.protocol import JsonRPCNotification, JsonRPCResponseMessage, default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
needs_fixtures = pytest.mark.skipif(
    not FIXTURES.is_dir(), reason=f"shared fixtures not found at {FIXTURES} (needed for the real dumps and goldens)"
)

# one result cache per test session, never the user's
CACHE_DIR = tempfile.mkdtemp(prefix="pypto-lsp-e2e-cache-")
SERVER_ENV = {**os.environ, "PYPTO_LSP_CACHE_DIR": CACHE_DIR, "PYTHONUNBUFFERED": "1"}
SERVER_CMD = [sys.executable, "-m", "pypto_lsp", "serve"]
FILE_RESULT = "pypto-lsp/fileResult"
VSCODE = "visual-studio-code"
NEOVIM = "neovim"


def make_config() -> ClientServerConfig:
    return ClientServerConfig(server_command=SERVER_CMD, server_env=SERVER_ENV, client_factory=make_client)


def _raw_converter() -> Any:
    """pygls turns untyped params/results into namedtuples (renaming keys such as 'pass'): keep the JSON."""
    conv = default_converter()
    conv.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(**obj))
    conv.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))
    return conv


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=_raw_converter)
    register_lsp_features(client)
    client.file_results = []  # type: ignore[attr-defined]

    client.lens_refreshes = 0  # type: ignore[attr-defined]
    client.registrations = []  # type: ignore[attr-defined]

    @client.feature(FILE_RESULT)
    def on_file_result(params: Any) -> None:
        client.file_results.append(_plain(params))  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def on_lens_refresh(params: Any) -> None:
        client.lens_refreshes += 1  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def on_register(params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)  # type: ignore[attr-defined]

    return client


def _plain(v: Any) -> Any:
    """pygls hands unknown notification params over as attrs-ish objects or dicts: make them dicts."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple) and not hasattr(v, "_fields"):
        return [_plain(x) for x in v]
    if hasattr(v, "_asdict"):
        return {k: _plain(x) for k, x in v._asdict().items()}
    return v


# ---------------------------------------------------------------------- workspaces


def copy_tree(src: Path, dst: Path, files: list[str] | None = None) -> Path:
    """Copy a fixture (or some of its dumps) into ``dst``, writable."""
    dst.mkdir(parents=True, exist_ok=True)
    for item in src.iterdir():
        if item.is_dir() and item.name.startswith("passes_dump"):
            (dst / item.name).mkdir(exist_ok=True)
            for f in sorted(item.iterdir()):
                if files is None or any(f.name.startswith(p) for p in files):
                    shutil.copyfile(f, dst / item.name / f.name)
        elif item.is_file() and item.suffix in (".pt", ".md", ".json", ".toml"):
            shutil.copyfile(item, dst / item.name)
    for p in dst.rglob("*"):
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return dst


def qwen3_broken_workspace(dst: Path, files: list[str] | None = None) -> Path:
    """The broken qwen3 dumps with a pypto-lsp.toml pointing at the good program's goldens."""
    copy_tree(FIXTURES / "broken" / "qwen3_910b_wrong_slice_offset", dst, files)
    golden = FIXTURES / "qwen3_scope3_910b"
    (dst / "pypto-lsp.toml").write_text(
        f'[[cases]]\ndumps = "passes_dump"\ninputs = "{golden / "tensors.pt"}"\nexpected = "{golden / "expected.pt"}"\n',
        encoding="utf-8",
    )
    return dst


def dump(ws: Path, prefix: str) -> Path:
    hits = sorted((ws / "passes_dump").glob(f"{prefix}*.py"))
    assert hits, f"no dump {prefix}* in {ws}"
    return hits[0]


# ---------------------------------------------------------------------- session helpers


async def start(client: LanguageClient, preset: str, root: Path, options: dict[str, Any] | None = None) -> types.InitializeResult:
    caps = pytest_lsp.client_capabilities(preset)
    return await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            initialization_options=options,
            client_info=types.ClientInfo(name=f"pytest-lsp ({preset})"),
        )
    )


def open_doc(client: LanguageClient, path: Path, text: str | None = None, version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(
                uri=uri, language_id="python", version=version, text=path.read_text(encoding="utf-8") if text is None else text
            )
        )
    )
    return uri


def change_doc(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def save_doc(client: LanguageClient, path: Path, text: str, uri: str, version: int) -> None:
    """Edit the buffer, write it to disk and save, as an editor does."""
    change_doc(client, uri, text, version)
    path.write_text(text, encoding="utf-8")
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))


async def wait_until(cond: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    t0 = time.monotonic()
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.05)


async def wait_result(client: LanguageClient, uri: str, after: int = 0, timeout: float = 60.0) -> dict[str, Any]:
    """The next ``pypto-lsp/fileResult`` for ``uri`` beyond the first ``after`` results."""

    def find() -> dict[str, Any] | None:
        hits = [r for r in client.file_results if r.get("uri") == uri]  # type: ignore[attr-defined]
        return hits[after] if len(hits) > after else None

    return await wait_until(find, timeout, f"a file result for {uri}")  # type: ignore[no-any-return]


def results_for(client: LanguageClient, uri: str) -> list[dict[str, Any]]:
    return [r for r in client.file_results if r.get("uri") == uri]  # type: ignore[attr-defined]


async def lens_titles(client: LanguageClient, uri: str) -> list[str]:
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    return [lens.command.title for lens in lenses or [] if lens.command is not None]


async def debug_info(client: LanguageClient) -> dict[str, Any]:
    return _plain(await client.protocol.send_request_async("pypto-lsp/debugInfo", {}))  # type: ignore[no-any-return]


async def execute(client: LanguageClient, command: str, *args: Any) -> Any:
    return _plain(await client.workspace_execute_command_async(types.ExecuteCommandParams(command=command, arguments=list(args))))
