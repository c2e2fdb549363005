"""Shared pieces of the end-to-end tests: the real server over stdio, driven by pytest-lsp.

Each test module starts its own server (``python -m pypto_lsp serve``) with a client
capability preset (VS Code or Neovim) and works on copies of real-format dumps in a temporary
folder. Every scenario runs on the repository's own ``examples/`` (so a fresh clone runs them
all); the same scenarios run again on the real compiler dumps in ``../shared/fixtures`` when that
folder is there (and are skipped, as extra coverage, when it is not). A :class:`Healthy`,
:class:`Broken` or :class:`CrossCore` case names, per source, the dumps and the text the tests
edit or point at. The summary at the end counts the scenarios that ran from ``examples/``.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.protocol import JsonRPCNotification, JsonRPCResponseMessage, default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FIXTURES = ROOT.parent / "shared" / "fixtures"
needs_fixtures = pytest.mark.skipif(
    not FIXTURES.is_dir(), reason=f"shared fixtures not found at {FIXTURES} (needed for the real dumps and goldens)"
)

# the two sources every scenario runs on; the second only where ../shared is
SOURCES = ["examples", "fixtures"]


def require(source: str) -> str:
    """Skip the ``fixtures`` run of a scenario when ``../shared/fixtures`` is absent."""
    if source == "fixtures" and not FIXTURES.is_dir():
        pytest.skip(f"extra coverage on the shared fixtures: not found at {FIXTURES}")
    return source


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
    """Copy a fixture or example (or some of its dumps) into ``dst``, writable."""
    dst.mkdir(parents=True, exist_ok=True)
    for item in src.iterdir():
        if item.is_dir() and item.name.startswith("passes_dump"):
            (dst / item.name).mkdir(exist_ok=True)
            for f in sorted(item.iterdir()):
                if files is None or any(f.name.startswith(p) for p in files):
                    shutil.copyfile(f, dst / item.name / f.name)
        elif item.is_dir() and item.name == "golden":
            shutil.copytree(item, dst / item.name, dirs_exist_ok=True)
        elif item.is_file() and item.suffix in (".pt", ".md", ".json", ".toml"):
            shutil.copyfile(item, dst / item.name)
    for p in dst.rglob("*"):
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return dst


# ---------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Healthy:
    """A program whose every dump passes; ``last`` has an AIV kernel and an Orchestration with a ``pl.scope``."""

    folder: Path
    inputs: str  # the goldens, relative to a copy of ``folder``
    expected: str
    output: str  # the output tensor
    last: str  # prefix of the last dump
    late: str  # prefix of another late dump (both contain ``pl.tile.row_expand_div(``)
    incore: str  # the kernel's name and the orchestration's
    orch: str
    local: str  # a row-reduction result in ``last`` ...
    local_shape: str  # ... and its shape
    out_param: str  # the output parameter in ``last``
    exp_last: str  # ``pl.tile.exp(X)`` in ``last`` and, with the pre-SSA name, in the first dump
    exp_first: str
    div_first: str  # the ``row_expand_div`` call of the first dump
    block_shape: str  # the shape of its operands' blocks, for an operand that cannot broadcast


SOFTMAX = {
    "examples": Healthy(
        folder=EXAMPLES / "softmax",
        inputs="golden/inputs.pt",
        expected="golden/expected.pt",
        output="probs",
        last="46_",
        late="32_",
        incore="scaled_softmax_incore_0",
        orch="scaled_softmax",
        local="mx__ssa_v0",
        local_shape="[32, 1]",
        out_param="probs__ssa_v0",
        exp_last="pl.tile.exp(centered__ssa_v0)",
        exp_first="pl.tile.exp(centered)",
        div_first="pl.tile.row_expand_div(e, denom)",
        block_shape="[32, 16]",
    ),
    "fixtures": Healthy(
        folder=FIXTURES / "example_softmax",
        inputs="tensors.pt",
        expected="expected.pt",
        output="output",
        last="49_",
        late="48_",
        incore="tile_softmax_incore_0",
        orch="tile_softmax",
        local="row_max__ssa_v0",
        local_shape="[64, 1]",
        out_param="output__ssa_v0",
        exp_last="pl.tile.exp(shifted__ssa_v0)",
        exp_first="pl.tile.exp(shifted)",
        div_first="pl.tile.row_expand_div(exp_shifted, row_sum)",
        block_shape="[32, 16]",
    ),
}


@dataclass(frozen=True)
class Broken:
    """Dumps with one injected bug: ``passes[2]`` is the first divergent pass, ``passes[3]`` fails too."""

    folder: Path
    inputs: Path  # the good program's goldens
    expected: Path
    output: str
    passes: tuple[str, str, str, str]  # prefixes: pass, pass, first divergent, fail
    pass_name: str  # the pass that wrote ``passes[2]``
    bug: str  # text on the bug's line in ``passes[2]`` ...
    fix: str  # ... and what it was before the bug
    value: str  # the first value that differs
    value_diff: str  # how the lens above it starts its max |Δ|


BROKEN = {
    "examples": Broken(
        folder=EXAMPLES / "broken_softmax",
        inputs=EXAMPLES / "softmax" / "golden" / "inputs.pt",
        expected=EXAMPLES / "softmax" / "golden" / "expected.pt",
        output="probs",
        passes=("09_", "11_", "22_", "32_"),
        pass_name="ExpandMixedKernel",
        bug="pl.tile.row_sum(centered__ssa_v0, ",
        fix="pl.tile.row_sum(e__ssa_v0, ",
        value="denom__ssa_v0",
        value_diff="max |Δ| 1432 at [17, 0]",
    ),
    "fixtures": Broken(
        folder=FIXTURES / "broken" / "qwen3_910b_wrong_slice_offset",
        inputs=FIXTURES / "qwen3_scope3_910b" / "tensors.pt",
        expected=FIXTURES / "qwen3_scope3_910b" / "expected.pt",
        output="out",
        passes=("33_", "34_", "35_", "36_"),
        pass_name="AllocateMemoryAddr",
        bug="pl.tile.load(hidden_states__ssa_v0, [b0__ssa_v0, 0]",
        fix="pl.tile.load(hidden_states__ssa_v0, [b0__ssa_v0, o0__ssa_v0]",
        value="t__tile",
        value_diff="max |Δ| 0.207 at [",
    ),
}


@dataclass(frozen=True)
class CrossCore:
    """A cube -> vector program: ``file`` passes, and deleting its one ``tpush_to_aiv`` deadlocks the pop."""

    folder: Path
    file: str  # prefix of the dump
    popped: str  # the tile the vector kernel pops


CROSS_CORE = {
    "examples": CrossCore(folder=EXAMPLES / "mixed_matmul", file="25_", popped="acc__tile_Vec"),
    "fixtures": CrossCore(folder=FIXTURES / "cross_core_c2v_leftright", file="49_", popped="t__tile_Vec"),
}


def broken_workspace(case: Broken, dst: Path, files: list[str] | None = None) -> Path:
    """The broken dumps with a pypto-lsp.toml pointing at the good program's goldens."""
    copy_tree(case.folder, dst, files)
    (dst / "pypto-lsp.toml").write_text(
        f'[[cases]]\ndumps = "passes_dump"\ninputs = "{case.inputs}"\nexpected = "{case.expected}"\n', encoding="utf-8"
    )
    return dst


def big_workspace(case: Broken, dst: Path, at_least: int = 96) -> Path:
    """A long pass list (folder runs that take long enough to cancel): the fixture as it is; the
    example's few dumps repeated in order, renumbered, until there are ``at_least``, each copy's
    program class renamed (identical texts would be validated once and the run end at once)."""
    broken_workspace(case, dst)
    folder = dst / "passes_dump"
    files = sorted(folder.glob("*.py"))
    if len(files) >= at_least:
        return dst
    texts = [(f.name.split("_", 1)[1], f.read_text(encoding="utf-8")) for f in files]
    for f in files:
        f.unlink()
    for k in range(at_least):
        name, text = texts[k % len(texts)]
        text = re.sub(r"^class (\w+):", rf"class \1_{k}:", text, count=1, flags=re.M)
        (folder / f"{k:02d}_{name}").write_text(text, encoding="utf-8")
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


Setup = Callable[[LanguageClient, Any, pytest.TempPathFactory], Path]


def client_fixture(
    setup: Setup,
    *,
    params: list[Any] | None = None,
    ids: Any = None,
    preset: str | Callable[[Any], str] = VSCODE,
    options: dict[str, Any] | None = None,
    ready: Callable[[LanguageClient], Any] | None = None,
) -> Any:
    """The e2e ``client`` fixture (one per scenario file, module-scoped): ``setup(lsp_client, param,
    tmp_path_factory)`` prepares the workspace and returns its root; the server is started on it
    (``preset``: the client's capabilities, or a function of the param), ``ready`` awaited (open a
    dump, wait for its result ...), and the session shut down after the module."""

    @pytest_lsp.fixture(config=make_config(), scope="module", params=params, ids=ids)
    async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
        param = getattr(request, "param", None)
        root = setup(lsp_client, param, tmp_path_factory)
        lsp_client.init_result = await start(lsp_client, preset(param) if callable(preset) else preset, root, options)  # type: ignore[attr-defined]
        if ready is not None:
            await ready(lsp_client)
        yield
        await lsp_client.shutdown_session()

    return client


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


# ---------------------------------------------------------------------- the count


_OUTCOMES: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not report.nodeid.startswith("tests/e2e/"):
        return
    if report.when == "call" or report.outcome != "passed":
        _OUTCOMES.setdefault(report.nodeid, report.outcome)
        if report.outcome != "passed":
            _OUTCOMES[report.nodeid] = report.outcome


def scenario_counts(outcomes: dict[str, str]) -> dict[str, Any]:
    """Per scenario (a test function, its parameters aside): did its run from ``examples/`` pass?

    A run on the shared fixtures has ``fixtures`` among its parameters; every other run (on
    ``examples/`` or on nothing shared, such as the fake-worker tests) is one a clone can do.
    """
    scenarios: dict[str, list[str]] = {}
    extra: list[str] = []
    for nodeid, outcome in outcomes.items():
        name, _, params = nodeid.partition("[")
        if "fixtures" in params.rstrip("]").split("-"):
            extra.append(outcome)
            continue
        scenarios.setdefault(name, []).append(outcome)
    own = [o for runs in scenarios.values() for o in runs]
    return {
        "not_run": sorted(name for name, runs in scenarios.items() if "passed" not in runs and "failed" not in runs),
        "scenarios": len(scenarios),
        "runs": len(own),
        "passed": own.count("passed"),
        "failed": own.count("failed"),
        "skipped": own.count("skipped"),
        "extra_runs": len(extra),
        "extra_skipped": extra.count("skipped"),
    }


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _OUTCOMES:
        return
    c = scenario_counts(_OUTCOMES)
    terminalreporter.write_line(
        f"pypto-lsp e2e: {c['scenarios']} scenarios, {c['runs']} runs without ../shared: "
        f"{c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped; "
        f"{c['extra_runs']} extra runs on the shared fixtures ({c['extra_skipped']} skipped)"
    )
    for name in c["not_run"]:
        terminalreporter.write_line(f"  no run without ../shared: {name}")
