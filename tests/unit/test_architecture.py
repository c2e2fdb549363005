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


def _private_uses(path: Path, package: str) -> list[str]:
    """``from .x import _name`` and ``mod._name`` (``mod`` an imported pypto_lsp module) in one file."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = path.relative_to(ROOT).with_suffix("")
    here = ".".join(rel.parts[:-1]) if rel.name != "__init__" else ".".join(rel.parts[:-1])
    parts = here.split(".")

    def absolute(module: str | None, level: int) -> str:
        base = parts[: len(parts) - level + 1] if level else []
        return ".".join([*base, *([module] if module else [])]) if level else (module or "")

    modules: set[str] = set()  # local names bound to pypto_lsp modules
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            src = absolute(node.module, node.level)
            if not src.startswith(package):
                continue
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    out.append(f"{rel}:{node.lineno}: from {src} import {a.name}")
                else:
                    modules.add(a.asname or a.name)  # may be a module (from . import context)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(package):
                    modules.add(a.asname or a.name.split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            out.append(f"{rel}:{node.lineno}: {node.value.id}.{node.attr}")
    return out


def test_no_module_imports_another_modules_private_name() -> None:
    found = [u for f in sorted((ROOT / "pypto_lsp").rglob("*.py")) for u in _private_uses(f, "pypto_lsp")]
    assert found == [], "\n".join(found)


def test_only_the_exec_floor_and_above_import_torch() -> None:
    graph = grimp.build_graph("pypto_lsp", cache_dir=None, include_external_packages=True)
    users = sorted(graph.find_modules_that_directly_import("torch"))
    allowed = ("pypto_lsp.exec", "pypto_lsp.validate", "pypto_lsp.worker", "pypto_lsp.debug", "pypto_lsp.cli", "pypto_lsp.pytest_plugin")
    assert users and all(m.startswith(allowed) for m in users), [m for m in users if not m.startswith(allowed)]
    assert not any(m.startswith(("pypto_lsp.ir", "pypto_lsp.server")) for m in users)


def test_no_module_is_over_800_lines() -> None:
    """A module past ~800 lines does two jobs: split it (ARCHITECTURE.md names where each part went)."""
    long = {
        str(f.relative_to(ROOT)): n
        for f in (ROOT / "pypto_lsp").rglob("*.py")
        if (n := len(f.read_text(encoding="utf-8").splitlines())) > 800
    }
    assert long == {}, long
