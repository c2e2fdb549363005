"""Where the goldens for a dump are: ``pypto-lsp.toml`` / ``[tool.pypto-lsp]`` cases, then defaults.

No torch here: the language server reads configuration too.
"""

from __future__ import annotations

import errno
import re
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import tomllib

from ..ir.parser import MAX_BYTES, read_dump
from ..ir.passdiff import dump_order_key
from . import carriers

DEFAULT_RTOL = 5e-2
DEFAULT_ATOL = 5e-2
DEFAULT_TIMEOUT_S = 30.0
# A timeout at or above this many seconds (about 31 years), like 0 and inf, is no limit: the
# one meaning of a run timeout everywhere (CLI, editor and worker, pytest plugin); see time_limit
NO_LIMIT_FROM_S = 1e9
CONFIG_NAMES = ("pypto-lsp.toml", "pyproject.toml")  # looked for in the dump folder and every folder above
GOLDEN_SUFFIXES = (".pt", ".safetensors")  # golden bundle files
_DUMP_NAME = re.compile(r"^\d+_(after_\w+|frontend)\.py$")


def time_limit(timeout_s: float | None) -> float | None:
    """Seconds a run may take, or None for no limit: ``timeout_s`` 0, None, inf, NaN or at least
    :data:`NO_LIMIT_FROM_S` (which no clock could wait for: ``threading`` and ``asyncio`` raise
    OverflowError beyond ~9.2e9 s). Every timeout of the tools goes through here."""
    if timeout_s is None or isinstance(timeout_s, bool) or not timeout_s > 0 or timeout_s >= NO_LIMIT_FROM_S:
        return None
    return float(timeout_s)


class ConfigError(Exception):
    """A config file that cannot be used; the message names the file and the key."""


# ---------------------------------------------------------------------- [[cases]] keys
# One row per key a [[cases]] entry may have: its check, which returns the value to use or
# raises ConfigError naming the file, the entry and the key. Unknown keys are what this
# table does not hold (CASE_KEYS): noted on the case and warned about on their line.


def _resolve(base: Path, v: str, key: str, where: str) -> Path:
    """``base / v`` made absolute; ConfigError for what no file system takes (a NUL byte, a lone
    surrogate, a name too long)."""
    try:
        return (base / v).resolve()
    except (ValueError, OSError) as exc:
        raise ConfigError(f"{where}: '{key}' is not a usable path ({exc}): {v[:80]!r}") from exc


def _path_string(v: Any, key: str, where: str, base: Path) -> Path:
    if not isinstance(v, str):
        raise ConfigError(f"{where}: '{key}' must be a path string")
    return _resolve(base, v, key, where)


def _generate(v: Any, key: str, where: str, base: Path) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ConfigError(f"{where}: 'generate' must be a table ([cases.generate]: name = {{low = 0, high = 4}} | [values] | \"file.pt\")")
    return {k: str(_resolve(base, x, f"generate.{k}", where)) if isinstance(x, str) else x for k, x in v.items()}


def _seed(v: Any, key: str, where: str, base: Path) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{where}: 'seed' must be an integer, got {v!r}")
    return v


def _toml(check: carriers.Check) -> Any:
    """A run setting's check as a row of the table: its ValueError as a ConfigError naming the
    file and the entry."""

    def row(v: Any, key: str, where: str, base: Path) -> Any:
        try:
            return check(v, key)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from exc

    return row


def _address(v: Any, key: str, where: str, base: Path) -> str:
    if not (isinstance(v, str) and v.strip()):
        raise ConfigError(f"{where}: 'cluster' must be a Dask scheduler address such as \"tcp://host:8786\", got {v!r}")
    return v.strip()


def _label(v: Any, key: str, where: str, base: Path) -> Any:
    return v  # a case's name in tables and reports (see ci_formats.case_labels)


@dataclass(frozen=True, slots=True)
class RunSettings:
    """How a dump is run and compared, whatever asks: built once from the resolved
    configuration (:meth:`Case.settings`, the editor's settings, command-line flags) and
    handed on as one value -- to the engine (:meth:`engine_kwargs`), and to the worker
    inside every request (``worker.protocol``).

    The one place a run setting is declared: each field's metadata (:func:`carriers.setting`)
    is the check of its ``[[cases]]`` key (the field's name), its ``validate`` flag, its editor
    setting and its docs row; ``cli.py``, ``server/config.py`` and ``tools/gen_settings.py``
    (package.json, the docs' tables) read them from here."""

    rtol: float = field(
        default=DEFAULT_RTOL,
        metadata=carriers.setting(
            carriers.number,
            carriers.Doc("number ≥ 0", "relative tolerance (default 5e-2; `\\|a - e\\| <= atol + rtol·\\|e\\|`)"),
            flag=carriers.Flag("--rtol", {"type": float}, carriers.flag_number),
            editor=carriers.Editor(
                "rtol",
                {"type": "number", "default": DEFAULT_RTOL, "minimum": 0},
                "Relative tolerance of the comparison with the expected tensors (used when pypto-lsp.toml sets none).",
                markdown=False,
            ),
        ),
    )
    atol: float = field(
        default=DEFAULT_ATOL,
        metadata=carriers.setting(
            carriers.number,
            carriers.Doc("number ≥ 0", "absolute tolerance (default 5e-2)"),
            flag=carriers.Flag("--atol", {"type": float}, carriers.flag_number),
            editor=carriers.Editor(
                "atol",
                {"type": "number", "default": DEFAULT_ATOL, "minimum": 0},
                "Absolute tolerance of the comparison with the expected tensors (used when pypto-lsp.toml sets none).",
                markdown=False,
            ),
        ),
    )
    entry: str | None = field(  # None: the program's entry function
        default=None,
        metadata=carriers.setting(
            carriers.function_name,
            carriers.Doc("identifier", "entry function (default: PyPTO's rule, the first Orchestration function by name)"),
            flag=carriers.Flag("--entry", {"metavar": "NAME", "help": "entry function (default: PyPTO's rule)"}),
        ),
    )
    timeout_s: float = field(  # per run; 0, inf or >= NO_LIMIT_FROM_S: none (time_limit)
        default=DEFAULT_TIMEOUT_S,
        metadata=carriers.setting(
            carriers.seconds,
            carriers.Doc("number ≥ 0 or `inf`", "seconds per file before the run is stopped as a `TimeoutError` (0 or `inf`: no limit)"),
            flag=carriers.Flag("--timeout", {"type": float, "metavar": "S", "help": "seconds per file"}, carriers.flag_seconds),
            editor=carriers.Editor(
                "timeoutSeconds",
                {"type": "number", "default": 30, "minimum": 1},
                "A validation running longer than this is stopped and reported as a timeout.",
                markdown=False,
                aliases=("timeout_s",),
            ),
        ),
    )
    memory: bool = field(  # run tiles where the IR places them and check for memory hazards
        default=True,
        metadata=carriers.setting(
            carriers.switch,
            carriers.Doc("bool", "run tiles where the IR places them and report memory hazards (default `true`)"),
            flag=carriers.Flag(
                "--memory",
                {
                    **carriers.ON_OFF,
                    "help": "run tiles where the IR places them and report memory hazards (default: on, or the case's 'memory')",
                },
                carriers.on_off,
            ),
            editor=carriers.Editor(
                "memory",
                {"type": "boolean", "default": True},
                "Run tiles where the IR places them (`pl.MemRef` addresses, pipe slots) and report memory hazards: a tile read "
                "after another one overwrote its bytes, a tile inside a reserved pipe buffer (an error per finding, a "
                "`⚠ memory:` lens). Off: values only, addresses ignored.",
            ),
        ),
    )
    backend: str | None = field(  # memory capacities of this PyPTO backend; None: the largest
        default=None,
        metadata=carriers.setting(
            carriers.backend,
            carriers.Doc(
                "string",
                "the PyPTO backend whose per-core memory sizes bound the tiles (`910B`, `950`; default: the largest over backends)",
            ),
        ),
    )
    exact: bool = field(  # every loop tile by tile (exec.batching)
        default=False,
        metadata=carriers.setting(
            carriers.switch,
            carriers.Doc(
                "bool",
                "run every loop tile by tile, as written (default `false`: independent iterations and K-chunk accumulations run batched)",
            ),
            flag=carriers.Flag(
                "--exact", {"action": "store_true", "help": "run every loop tile by tile (no batched loops; default: the case's 'exact')"}
            ),
            editor=carriers.Editor(
                "exact",
                {"type": "boolean", "default": False},
                "Run every loop tile by tile, as written (also the case key `exact`). Off: a loop that only accumulates K-chunk "
                "matmuls runs as one batched matmul, and the two ends of such a cross-core pipe run batched (faster on large dumps; "
                "the same values bit for bit).",
            ),
        ),
    )
    max_alloc: int | None = field(  # bytes one allocation may take (ir.alloc_budget); None: the default
        default=None,
        metadata=carriers.setting(
            carriers.size,
            carriers.Doc(
                "size (`512M`, `4G`, bytes)",
                "the largest single allocation a dump may make, with its kernel's temporaries (default: `PYPTO_LSP_MAX_ALLOC`, "
                "else a quarter of the machine's memory)",
            ),
            flag=carriers.Flag(
                "--max-alloc",
                {
                    "metavar": "SIZE",
                    "help": "largest single allocation a dump may make, e.g. 2G (default: a quarter of the machine's memory)",
                },
                carriers.flag_size,
            ),
            editor=carriers.Editor(
                "maxAlloc",
                {"type": "string", "default": ""},
                "The largest single allocation a dump may make, with its kernel's temporaries (`512M`, `4G`, or bytes); a larger "
                "one is an error on its line, before it is made. Empty: a quarter of the machine's memory. A `max_alloc` in "
                "`pypto-lsp.toml` wins.",
            ),
        ),
    )
    # the device's sanitizer: task order, uninitialised memory, bounds, pipes (exec.sanitizer); "strict":
    # on, and reads of undefined values that reach nothing listed as information
    sanitize: bool | str = field(
        default=True,
        metadata=carriers.setting(
            carriers.sanitizer_mode,
            carriers.Doc(
                'bool or `"strict"`',
                "the device's sanitizer: task order, uninitialised memory, windows out of bounds, pipe rings (default `true`; "
                '`"strict"` also lists reads of undefined values that reach nothing, as information; [sanitizer](sanitizer.md))',
            ),
            flag=carriers.Flag(
                "--sanitize",
                {
                    "choices": ("on", "off", "strict"),
                    "help": "the device's sanitizer: races between tasks, uninitialised reads, windows out of bounds, full pipe rings "
                    "(default: on, or the case's 'sanitize'); strict: also list reads of undefined values that reach nothing, "
                    "as information",
                },
                carriers.on_off_strict,
            ),
            editor=carriers.Editor(
                "sanitize",
                {"type": ["boolean", "string"], "enum": [True, False, "strict"], "default": True},
                "The device's sanitizer: tasks the runtime may reorder (a wrong `arg_directions`), reads of memory nothing wrote "
                "(`tile.create`, `tensor.create` without `init_value`), windows past a tensor's end, pushes into a full pipe "
                'ring. Each finding fails its file. `"strict"`: also reads of undefined values that reach nothing, as '
                "information. A `sanitize` key in `pypto-lsp.toml` wins.",
            ),
        ),
    )
    ranks: int | None = field(  # a multi-rank program's rank count (exec.ranks); None: its HOST entry's stacked inputs say
        default=None,
        metadata=carriers.setting(
            carriers.rank_count,
            carriers.Doc(
                "integer ≥ 1",
                "a multi-rank program's rank count (`pld.system.world_size()`, the ranks its HOST entry launches on with "
                "`device=r`); default: the leading dim of the HOST entry's first stacked `[N_RANKS, ...]` input, else 2",
            ),
        ),
    )

    def override(self, **values: Any) -> RunSettings:
        """These settings with the values that are not None (command-line flags) put in."""
        return replace(self, **{k: v for k, v in values.items() if v is not None})

    def engine_kwargs(self) -> dict[str, Any]:
        """The keywords of ``validate.engine.run_text``: every setting by its name (``timeout`` in
        seconds or None for ``timeout_s``), so a new setting reaches every run as it is added."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "timeout_s"}
        return {**out, "timeout": time_limit(self.timeout_s)}

    def values_kwargs(self) -> dict[str, Any]:
        """The keywords of the traced runs, which compare values only (``validate.localize``,
        ``validate.errormap``)."""
        return {
            "rtol": self.rtol,
            "atol": self.atol,
            "entry": self.entry,
            "timeout": time_limit(self.timeout_s),
            "max_alloc": self.max_alloc,
        }


@dataclass(slots=True)
class Case:
    """The goldens and tolerances that apply to one dump folder."""

    dumps: Path | None
    inputs: Path | None
    expected: Path | None
    settings: RunSettings = field(default_factory=RunSettings)  # how its dumps run and compare: the TOML keys of RunSettings
    source: str = "default"  # where it came from: a config file path, "golden/ folder", "settings", ...
    notes: list[str] = field(default_factory=list)
    # without goldens (differential mode, validate.differential): values for parameters that
    # cannot be synthesized, by name (string values are absolute paths), and the seed
    generate: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    cluster: str | None = None  # a Dask scheduler's address (validate --cluster)
    cache_dir: Path | None = None  # the result cache's folder (else PYPTO_LSP_CACHE_DIR, else the user's cache)

    @property
    def has_goldens(self) -> bool:
        return self.inputs is not None and self.expected is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "dumps": str(self.dumps) if self.dumps else None,
            "inputs": str(self.inputs) if self.inputs else None,
            "expected": str(self.expected) if self.expected else None,
            **asdict(self.settings),
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

    Every ``*.py`` directly inside the folder in pipeline order: by the numeric prefix
    (``00_frontend.py`` first, ``89_after_Y.py`` before ``1001_after_X.py``), then by name.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such file or folder: {p}")
    if p.is_file():
        if p.suffix != ".py":
            raise ValueError(f"a pass dump is a .py file: {p}")
        return [p]
    folder = p / "passes_dump" if (p / "passes_dump").is_dir() else p
    files = sorted((f for f in folder.iterdir() if f.suffix == ".py" and f.is_file()), key=lambda f: dump_order_key(f.name))
    if not files:
        raise ValueError(f"no .py dumps in {folder}")
    return files


def earliest_dump(files: list[Path]) -> Path:
    """The dump differential mode takes as the reference: the first by name (``00_frontend.py``).
    No torch: the server names it in lenses (:mod:`.reference` runs it)."""
    return min(files, key=lambda f: f.name)


_CASE_KEYS: dict[str, Any] = {  # in the order they are checked
    "dumps": _path_string,
    "inputs": _path_string,
    "expected": _path_string,
    **{f.name: _toml(f.metadata["check"]) for f in fields(RunSettings)},  # every run setting, by its name
    "generate": _generate,
    "seed": _seed,
    "name": _label,
    "cluster": _address,  # validate on this Dask scheduler (validate.cluster)
    "cache_dir": _path_string,  # the result cache's folder, may be shared by many machines
}
_SETTINGS_KEYS = frozenset(f.name for f in fields(RunSettings))
CASE_KEYS = frozenset(_CASE_KEYS)


def _case(c: dict[str, Any], where: str, base: Path, source: str) -> Case:
    """One [[cases]] table as a Case: every key checked by its row of the table."""
    v: dict[str, Any] = {}
    for key, check in _CASE_KEYS.items():
        if key in c:
            v[key] = check(c[key], key, where, base)
        if key == "expected" and "dumps" not in c:  # the paths are checked: the one key required
            raise ConfigError(f"{where}: missing 'dumps' (the passes_dump folder, relative to this file)")
    case = Case(
        dumps=v["dumps"],
        inputs=v.get("inputs"),
        expected=v.get("expected"),
        settings=RunSettings(**{k: x for k, x in v.items() if k in _SETTINGS_KEYS}),
        source=source,
        generate=v.get("generate", {}),
        seed=v.get("seed"),
        cluster=v.get("cluster"),
        cache_dir=v.get("cache_dir"),
    )
    unknown = set(c) - CASE_KEYS
    if unknown:
        case.notes.append(f"ignored unknown keys: {', '.join(sorted(unknown))}")
    return case


def read_config(config: Path) -> str:
    """A config file's text: a regular file of at most the dumps' size limit (a FIFO or
    ``/dev/zero`` is refused, never read). Raises OSError or UnicodeDecodeError."""
    raw = read_dump(config)
    if len(raw) > MAX_BYTES:
        raise OSError(errno.EFBIG, f"over the {MAX_BYTES // 2**20} MiB limit", str(config))
    return raw.decode("utf-8")


def cases_in(config: Path) -> list[Case]:
    try:
        data = tomllib.loads(read_config(config))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{config}: {exc}") from exc
    ours = our_table(config, data)
    if ours is None:
        return []
    raw = ours.get("cases", [])
    if not isinstance(raw, list):
        raise ConfigError(f"{config}: 'cases' must be an array of tables ([[cases]])")
    out = []
    for i, c in enumerate(raw):
        where = f"{config} [[cases]] #{i + 1}"
        if not isinstance(c, dict):
            raise ConfigError(f"{where}: not a table")
        out.append(_case(c, where, config.parent, str(config)))
    return out


def our_table(config: Path, data: Any) -> dict[str, Any] | None:
    """What of a parsed config file is ours: all of a ``pypto-lsp.toml``, the ``[tool.pypto-lsp]``
    table of a ``pyproject.toml`` (None when it has none, or it is not a table)."""
    if config.name == "pyproject.toml":
        tool = data.get("tool") if isinstance(data, dict) else None
        data = tool.get("pypto-lsp") if isinstance(tool, dict) else None
    return data if isinstance(data, dict) else None


# a table header on a line of its own: `[name]` or `[[name]]`, then at most a comment
_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]*?)\s*\]\]?\s*(#.*)?$")


def table_headers(lines: list[str]) -> list[tuple[int, str, bool]]:
    """The table headers among a TOML text's ``lines``: (index, the name without quotes or
    spaces, whether it is an array of tables ``[[...]]``)."""
    out = []
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if m:
            out.append((i, m.group(1).replace('"', "").replace(" ", ""), line.lstrip().startswith("[[")))
    return out


@dataclass(frozen=True, slots=True)
class ConfigWarning:
    """A key the configuration ignores (a misspelling, most often), where it is written."""

    file: Path
    line: int  # 1-based
    key: str
    message: str

    def format(self) -> str:
        return f"{self.file}:{self.line}: warning: {self.message}"


def config_warnings(config: Path) -> list[ConfigWarning]:
    """Unknown keys in a ``pypto-lsp.toml`` (or the ``[tool.pypto-lsp]`` part of a
    ``pyproject.toml``), each with its line. A file that does not parse has none (its error
    is reported where it is used)."""
    try:
        text = read_config(config)
        data: Any = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    data = our_table(config, data)
    if data is None:
        return []
    prefix = "tool.pypto-lsp." if config.name == "pyproject.toml" else ""
    lines = text.splitlines()
    # where each table starts: header name -> the line numbers of its occurrences
    headers = [(i, name) for i, name, _ in table_headers(lines)]

    def find(key: str, table: str, nth: int) -> int:
        """The line of ``key = `` inside the nth occurrence of ``table`` ("" for the top)."""
        starts = [i for i, name in headers if name == table] if table else [-1]
        if config.name == "pyproject.toml" and not table:
            starts = [i for i, name in headers if name == prefix.rstrip(".")] or [-1]
        if nth >= len(starts):
            return 1
        start = starts[nth]
        end = next((i for i, _ in headers if i > start), len(lines))
        pat = re.compile(r"^\s*[\"']?" + re.escape(key) + r"[\"']?\s*[=.]")
        for i in range(start + 1, end):
            if pat.match(lines[i]):
                return i + 1
        if not table:  # a table of its own: ``[[case]]``, ``[tool.pypto-lsp.x]``
            full = prefix + key
            for i, name in headers:
                if name == full or name.startswith(full + "."):
                    return i + 1
        return start + 1 if start >= 0 else 1

    out: list[ConfigWarning] = []
    for k in data:
        if k != "cases":
            hint = _did_you_mean(k, {"cases"})
            out.append(ConfigWarning(config, find(k, "", 0), k, f"unknown key '{prefix}{k}' is ignored{hint}"))
    raw = data.get("cases", [])
    if isinstance(raw, list):
        for n, c in enumerate(raw):
            if not isinstance(c, dict):
                continue
            for k in c:
                if k not in CASE_KEYS:
                    hint = _did_you_mean(k, CASE_KEYS)
                    at = find(k, prefix + "cases", n)
                    out.append(ConfigWarning(config, at, k, f"unknown key '{k}' in [[{prefix}cases]] #{n + 1} is ignored{hint}"))
    return sorted(out, key=lambda w: w.line)


def _did_you_mean(key: str, known: frozenset[str] | set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


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
        cases = _by_goldens(cases_in(Path(config)))
        for c in cases:
            if c.dumps is not None and (_contains(c.dumps, target) or _contains(c.dumps, folder)):
                return c
        if len(cases) == 1:
            return cases[0]
        raise ConfigError(f"{config}: no [[cases]] entry covers {folder}")
    for cfg in config_files(folder):
        for c in _by_goldens(cases_in(cfg)):
            if c.dumps is not None and (_contains(c.dumps, target) or _contains(c.dumps, folder)):
                return c
    return default_case(folder)


def config_files(folder: Path) -> list[Path]:
    """The config files that may apply to ``folder``: the nearest first, ``pypto-lsp.toml`` before
    ``pyproject.toml`` in each folder on the way up."""
    return [d / name for d in [folder, *folder.parents] for name in CONFIG_NAMES if (d / name).is_file()]


def _by_goldens(cases: list[Case]) -> list[Case]:
    """Cases with goldens first (stable): ``golden freeze`` appends one after a ``generate``-only case."""
    return sorted(cases, key=lambda c: not c.has_goldens)


def default_case(folder: Path) -> Case:
    parent = folder.parent
    for g, inputs_name in ((parent / "golden", "inputs"), (folder / "golden", "inputs")):
        for ext in GOLDEN_SUFFIXES:
            i, e = g / f"{inputs_name}{ext}", g / f"expected{ext}"
            if i.is_file() and e.is_file():
                return Case(folder, i, e, source=str(g))
    for ext in GOLDEN_SUFFIXES:
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
