"""Where the goldens for a dump are: ``pypto-lsp.toml`` / ``[tool.pypto-lsp]`` cases, then defaults.

No torch here: the language server reads configuration too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

DEFAULT_RTOL = 5e-2
DEFAULT_ATOL = 5e-2
DEFAULT_TIMEOUT_S = 30.0
CONFIG_NAMES = ("pypto-lsp.toml", "pyproject.toml")
_DUMP_NAME = re.compile(r"^\d+_(after_\w+|frontend)\.py$")


class ConfigError(Exception):
    """A config file that cannot be used; the message names the file and the key."""


@dataclass(slots=True)
class Case:
    """The goldens and tolerances that apply to one dump folder."""

    dumps: Path | None
    inputs: Path | None
    expected: Path | None
    entry: str | None = None
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory: bool = True  # run tiles where the IR places them and check for memory hazards
    backend: str | None = None  # memory capacities of this PyPTO backend ("910B", "950"); default: the largest
    source: str = "default"  # where it came from: a config file path, "golden/ folder", "settings", ...
    notes: list[str] = field(default_factory=list)

    @property
    def has_goldens(self) -> bool:
        return self.inputs is not None and self.expected is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "dumps": str(self.dumps) if self.dumps else None,
            "inputs": str(self.inputs) if self.inputs else None,
            "expected": str(self.expected) if self.expected else None,
            "entry": self.entry,
            "rtol": self.rtol,
            "atol": self.atol,
            "timeout_s": self.timeout_s,
            "memory": self.memory,
            "backend": self.backend,
            "source": self.source,
            "notes": self.notes,
        }


def dump_folder(path: Path) -> Path:
    """The folder holding the dumps for a dump file or folder argument."""
    path = path.resolve()
    if path.is_file():
        return path.parent
    if (path / "passes_dump").is_dir():
        return path / "passes_dump"
    return path


def discover_dumps(path: str | Path) -> list[Path]:
    """Dump files for PATH: a file, a ``passes_dump/`` folder, or an output folder holding one.

    Every ``*.py`` directly inside the folder, sorted by name (``00_frontend.py``
    first), as the reference does.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such file or folder: {p}")
    if p.is_file():
        if p.suffix != ".py":
            raise ValueError(f"a pass dump is a .py file: {p}")
        return [p]
    folder = p / "passes_dump" if (p / "passes_dump").is_dir() else p
    files = sorted((f for f in folder.iterdir() if f.suffix == ".py" and f.is_file()), key=lambda f: f.name)
    if not files:
        raise ValueError(f"no .py dumps in {folder}")
    return files


def _num(table: dict[str, Any], key: str, default: float, where: str) -> float:
    v = table.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0 or v == float("inf") and key != "timeout_s":
        raise ConfigError(f"{where}: '{key}' must be a non-negative number, got {v!r}")
    return float(v)


def _cases_in(config: Path) -> list[Case]:
    try:
        data = tomllib.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{config}: {exc}") from exc
    if config.name == "pyproject.toml":
        data = data.get("tool", {}).get("pypto-lsp")
        if data is None:
            return []
    raw = data.get("cases", [])
    if not isinstance(raw, list):
        raise ConfigError(f"{config}: 'cases' must be an array of tables ([[cases]])")
    base = config.parent
    out = []
    for i, c in enumerate(raw):
        where = f"{config} [[cases]] #{i + 1}"
        if not isinstance(c, dict):
            raise ConfigError(f"{where}: not a table")
        for key in ("dumps", "inputs", "expected"):
            if key in c and not isinstance(c[key], str):
                raise ConfigError(f"{where}: '{key}' must be a path string")
        if "dumps" not in c:
            raise ConfigError(f"{where}: missing 'dumps' (the passes_dump folder, relative to this file)")
        if "entry" in c and not (isinstance(c["entry"], str) and c["entry"].isidentifier()):
            raise ConfigError(f"{where}: 'entry' must be a function name, got {c['entry']!r}")
        if "memory" in c and not isinstance(c["memory"], bool):
            raise ConfigError(f"{where}: 'memory' must be true or false, got {c['memory']!r}")
        if "backend" in c:
            from ..ir.memory import BackendError, capacities

            try:
                capacities(c["backend"] if isinstance(c["backend"], str) else repr(c["backend"]))
            except BackendError as exc:
                raise ConfigError(f"{where}: {exc}") from exc
        unknown = set(c) - {"dumps", "inputs", "expected", "entry", "rtol", "atol", "timeout_s", "name", "memory", "backend"}
        case = Case(
            dumps=(base / c["dumps"]).resolve(),
            inputs=(base / c["inputs"]).resolve() if "inputs" in c else None,
            expected=(base / c["expected"]).resolve() if "expected" in c else None,
            entry=c.get("entry"),
            rtol=_num(c, "rtol", DEFAULT_RTOL, where),
            atol=_num(c, "atol", DEFAULT_ATOL, where),
            timeout_s=_num(c, "timeout_s", DEFAULT_TIMEOUT_S, where),
            memory=c.get("memory", True),
            backend=c.get("backend"),
            source=str(config),
        )
        if unknown:
            case.notes.append(f"ignored unknown keys: {', '.join(sorted(unknown))}")
        out.append(case)
    return out


def _contains(folder: Path, target: Path) -> bool:
    try:
        target.relative_to(folder)
        return True
    except ValueError:
        return False


def find_case(dump: str | Path, config: str | Path | None = None) -> Case:
    """The case that applies to ``dump`` (a file or folder).

    ``config`` forces one config file. Otherwise walk up from the dump for
    ``pypto-lsp.toml`` (or ``pyproject.toml`` with ``[tool.pypto-lsp]``) and take
    the first case whose ``dumps`` folder contains the dump. Without one: a
    ``golden/`` folder beside ``passes_dump/`` with ``inputs.pt`` + ``expected.pt``,
    or ``tensors.pt`` + ``expected.pt`` beside ``passes_dump/``.
    """
    target = Path(dump).resolve()
    folder = dump_folder(target)
    if config is not None:
        cases = _cases_in(Path(config))
        for c in cases:
            if c.dumps is not None and (_contains(c.dumps, target) or _contains(c.dumps, folder)):
                return c
        if len(cases) == 1:
            return cases[0]
        raise ConfigError(f"{config}: no [[cases]] entry covers {folder}")
    for d in [folder, *folder.parents]:
        for name in CONFIG_NAMES:
            cfg = d / name
            if cfg.is_file():
                for c in _cases_in(cfg):
                    if c.dumps is not None and (_contains(c.dumps, target) or _contains(c.dumps, folder)):
                        return c
    return default_case(folder)


def default_case(folder: Path) -> Case:
    parent = folder.parent
    for g, inputs_name in ((parent / "golden", "inputs"), (folder / "golden", "inputs")):
        for ext in (".pt", ".safetensors"):
            i, e = g / f"{inputs_name}{ext}", g / f"expected{ext}"
            if i.is_file() and e.is_file():
                return Case(folder, i, e, source=str(g))
    for ext in (".pt", ".safetensors"):
        i, e = parent / f"tensors{ext}", parent / f"expected{ext}"
        if i.is_file() and e.is_file():
            return Case(folder, i, e, source=str(parent))
    return Case(folder, None, None, source="none", notes=["no golden tensors found"])


def is_dump_path(path: Path, first_line: str | None = None) -> bool:
    """Files the tools act on: any ``.py`` under a ``passes_dump*`` folder, or one whose first
    line is ``# pypto.program:``."""
    if path.suffix != ".py":
        return False
    if any(part.startswith("passes_dump") for part in path.parent.parts):
        return True
    if first_line is None:
        try:
            with path.open("r", encoding="utf-8", errors="replace") as fh:
                first_line = fh.readline(256)
        except OSError:
            return False
    return first_line.startswith("# pypto.program:")
