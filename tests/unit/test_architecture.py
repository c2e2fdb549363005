"""The import rules of ARCHITECTURE.md hold: no import cycle anywhere in ``pypto_lsp``; the floors
ir -> exec -> validate -> worker -> server; the server never imports torch or exec; its core is
protocol-free; feature handlers never import each other nor ``app``.

The contracts live in pyproject.toml (``[tool.importlinter]``) and are checked by import-linter
over grimp's graph of every import, deferred and ``TYPE_CHECKING`` ones included: the same as
``lint-imports`` run in the repository."""

from __future__ import annotations

from pathlib import Path

import grimp
import tomllib
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_hold(capsys: object) -> None:
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def test_the_contracts_cover_every_server_module() -> None:
    """A new module of pypto_lsp/server must take a place in the server's floors (else nothing
    says what it may import)."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    floors = next(c for c in conf if c.get("containers") == ["pypto_lsp.server"])
    placed = {name.strip() for layer in floors["layers"] for name in layer.replace("|", ":").split(":")}
    graph = grimp.build_graph("pypto_lsp", cache_dir=None)
    children = {m.rsplit(".", 1)[1] for m in graph.find_children("pypto_lsp.server")}
    assert children == placed


def test_features_never_import_app() -> None:
    graph = grimp.build_graph("pypto_lsp", cache_dir=None)
    for m in graph.find_descendants("pypto_lsp.server.features"):
        assert not graph.chain_exists(m, "pypto_lsp.server.app"), m
