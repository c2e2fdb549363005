"""Settings: ``initializationOptions`` and ``workspace/didChangeConfiguration``, merged with ``pypto-lsp.toml``.

The client sends ``{"pypto-lsp": {runOn, rtol, atol, timeoutSeconds, golden: {inputs, expected},
validation, cache}}`` (``initializationOptions`` may also be the inner object). What a dump
uses is resolved per dump folder:

* goldens, entry: the ``pypto-lsp.toml`` ``[[cases]]`` entry covering the folder (or a
  ``golden/`` / ``tensors.pt`` beside it, see :func:`validate.config.find_case`); the
  settings' golden paths only when nothing there applies;
* tolerances and timeout: a value the toml case sets explicitly wins over the settings,
  which win over the defaults (the project's file knows its numbers better than a global
  editor setting); the allocation budget likewise: the case's ``max_alloc``, else the
  ``maxAlloc`` setting, else the worker's default (ir.alloc_budget).

Settings must be valid as a whole value: a bad one is reported and the previous kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..ir.alloc_budget import env_problem, parse_size
from ..validate import config as vconfig

SECTION = "pypto-lsp"
RUN_ON = ("onSave", "onType", "manual")


@dataclass(frozen=True, slots=True)
class Settings:
    run_on: str = "onSave"
    rtol: float | None = None
    atol: float | None = None
    timeout_s: float | None = None
    golden_inputs: str | None = None
    golden_expected: str | None = None
    validation: bool = True
    cache: bool = True
    memory: bool = True  # run tiles where the IR places them and report memory hazards
    max_alloc: int | None = None  # 'maxAlloc': bytes one allocation may take (ir.alloc_budget)
    exact: bool = False  # every loop tile by tile (no batched loops)
    sanitize: bool = True  # the device's sanitizer (task order, uninitialised memory, bounds, pipes)

    def to_json(self) -> dict[str, Any]:
        return {
            "runOn": self.run_on,
            "rtol": self.rtol,
            "atol": self.atol,
            "timeoutSeconds": self.timeout_s,
            "golden": {"inputs": self.golden_inputs, "expected": self.golden_expected},
            "validation": self.validation,
            "cache": self.cache,
            "memory": self.memory,
            "maxAlloc": self.max_alloc,
            "exact": self.exact,
            "sanitize": self.sanitize,
        }


def _unwrap(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    inner = raw.get(SECTION)
    if isinstance(inner, dict):
        return inner
    return raw


def _tol(v: Any, key: str, problems: list[str]) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0 or v != v:
        problems.append(f"'{key}' must be a non-negative number, got {v!r}")
        return None
    return float(v)


def merge(base: Settings, raw: Any) -> tuple[Settings, list[str]]:
    """``base`` updated with the keys present in ``raw``; unknown keys and bad values are reported."""
    d = _unwrap(raw)
    if d is None:
        return base, ([] if raw is None else [f"settings must be an object, got {type(raw).__name__}"])
    problems: list[str] = []
    upd: dict[str, Any] = {}
    if "runOn" in d:
        if d["runOn"] in RUN_ON:
            upd["run_on"] = d["runOn"]
        else:
            problems.append(f"'runOn' must be one of {', '.join(RUN_ON)}, got {d['runOn']!r}")
    for key, attr in (("rtol", "rtol"), ("atol", "atol"), ("timeoutSeconds", "timeout_s"), ("timeout_s", "timeout_s")):
        if key in d and not (key == "timeout_s" and "timeoutSeconds" in d):
            v = _tol(d[key], key, problems)
            if v is not None or d[key] is None:
                upd[attr] = v
    g = d.get("golden")
    if g is not None:
        if not isinstance(g, dict):
            problems.append(f"'golden' must be an object {{inputs, expected}}, got {g!r}")
        else:
            for key, attr in (("inputs", "golden_inputs"), ("expected", "golden_expected")):
                if key in g:
                    v = g[key]
                    if v is None or (isinstance(v, str) and v.strip() == ""):
                        upd[attr] = None
                    elif isinstance(v, str):
                        upd[attr] = v
                    else:
                        problems.append(f"'golden.{key}' must be a path string, got {v!r}")
    for key in ("validation", "cache", "memory", "exact", "sanitize"):
        if key in d:
            if isinstance(d[key], bool):
                upd[key] = d[key]
            else:
                problems.append(f"'{key}' must be true or false, got {d[key]!r}")
    if "maxAlloc" in d:
        bad = len(problems)
        size = _size(d["maxAlloc"], problems)
        if len(problems) == bad:  # a bad size keeps the previous one
            upd["max_alloc"] = size
    known = {
        *(
            "runOn",
            "rtol",
            "atol",
            "timeoutSeconds",
            "timeout_s",
            "golden",
            "validation",
            "cache",
            "memory",
            "exact",
            "maxAlloc",
            "sanitize",
        ),
        *("interpreter", "trace"),
    }
    unknown = sorted(k for k in d if k not in known)
    if unknown:
        problems.append(f"ignored unknown settings: {', '.join(unknown)}")
    return replace(base, **upd), problems


def _size(v: Any, problems: list[str]) -> int | None:
    """``maxAlloc``: bytes, or a size string ("512M", "4G"); null or "" for the default."""
    if v is None or v == "":
        return None
    try:
        return parse_size(v)
    except ValueError as exc:
        problems.append(f"'maxAlloc' must be a size in bytes (or '512M', '4G'): {exc}")
        return None


@dataclass(frozen=True, slots=True)
class Resolved:
    """Everything a validation of one dump depends on, snapshotted when a run starts."""

    folder: Path
    inputs: Path | None
    expected: Path | None
    settings: vconfig.RunSettings  # how a dump of this folder is run and compared (what every worker request carries)
    golden_source: str  # a config file, a folder, "settings" or "none"
    validation: bool
    run_on: str
    use_cache: bool
    error: str | None = None  # a config file that cannot be used
    notes: tuple[str, ...] = field(default_factory=tuple)
    # no goldens: the folder's earliest dump (its stem) on synthesized inputs is the reference
    reference: str | None = None

    @property
    def has_goldens(self) -> bool:
        """Something to compare with: golden bundles, or (differential mode) the earliest dump."""
        return (self.inputs is not None and self.expected is not None) or self.reference is not None

    @property
    def compared_label(self) -> str | None:
        """``00_frontend (no goldens)`` in differential mode (lenses say it), else None."""
        return f"{self.reference} (no goldens)" if self.reference is not None and self.inputs is None else None

    def run_settings(self) -> vconfig.RunSettings:
        """How a dump of this folder is run and compared (what every worker request carries)."""
        return self.settings

    def key(self) -> tuple[Any, ...]:
        """What makes two results comparable: the goldens and every run setting but the timeout (a
        smaller budget may stop a run that passed; a result that timed out is never kept)."""
        return (str(self.inputs), str(self.expected), self.reference, replace(self.settings, timeout_s=0))

    def to_json(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "golden": {"inputs": str(self.inputs) if self.inputs else None, "expected": str(self.expected) if self.expected else None},
            "golden_source": self.golden_source,
            "compared_with": self.compared_label or ("goldens" if self.inputs is not None else None),
            "entry": self.settings.entry,
            "rtol": self.settings.rtol,
            "atol": self.settings.atol,
            "timeout_s": self.settings.timeout_s,
            "validation": self.validation,
            "runOn": self.run_on,
            "cache": self.use_cache,
            "error": self.error,
            "notes": list(self.notes),
            "maxAlloc": self.settings.max_alloc,
        }


def _settings_path(p: str, root: Path | None) -> Path:
    path = Path(p).expanduser()
    if not path.is_absolute() and root is not None:
        path = root / path
    return path.resolve()


def resolve(dump: Path, settings: Settings, root: Path | None) -> Resolved:
    """The configuration one dump is validated with (reads config files; no torch)."""
    folder = dump.parent if dump.suffix == ".py" else dump
    error: str | None = None
    case: vconfig.Case | None
    try:
        case = vconfig.find_case(dump)
    except vconfig.ConfigError as exc:
        error, case = str(exc), None
    except OSError as exc:
        error, case = f"cannot read the configuration: {exc}", None
    from_file = case is not None and case.source not in ("none",) and case.source.endswith(".toml")
    inputs = case.inputs if case is not None else None
    expected = case.expected if case is not None else None
    source = case.source if case is not None else "none"
    notes = tuple(case.notes) if case is not None else ()
    if (inputs is None or expected is None) and settings.golden_inputs and settings.golden_expected:
        inputs = _settings_path(settings.golden_inputs, root)
        expected = _settings_path(settings.golden_expected, root)
        source = "settings"

    reference = None
    if (inputs is None or expected is None) and error is None:
        # differential mode: the earliest dump of the folder is the reference (validate.reference runs it)
        dumps = list(folder.glob("*.py")) if folder.is_dir() else []
        reference = vconfig.earliest_dump(dumps).stem if dumps else None
        source = source if source != "none" else "differential"

    cs = case.settings if case is not None else None  # the case's run settings

    def pick(case_value: float | None, default: float, setting: float | None) -> float:
        if from_file and case_value is not None and case_value != default:
            return case_value
        return setting if setting is not None else (case_value if case_value is not None else default)

    return Resolved(
        folder=folder,
        inputs=inputs,
        expected=expected,
        # the case's run settings (a setting without an editor counterpart: the case's value),
        # with the editor's settings merged in where it has one
        settings=replace(
            cs if cs is not None else vconfig.RunSettings(),
            entry=cs.entry if cs is not None else None,
            rtol=pick(cs.rtol if cs else None, vconfig.DEFAULT_RTOL, settings.rtol),
            atol=pick(cs.atol if cs else None, vconfig.DEFAULT_ATOL, settings.atol),
            timeout_s=pick(cs.timeout_s if cs else None, vconfig.DEFAULT_TIMEOUT_S, settings.timeout_s),
            memory=settings.memory and (cs.memory if cs is not None else True),
            backend=cs.backend if cs is not None else None,
            max_alloc=cs.max_alloc if cs is not None and cs.max_alloc is not None else settings.max_alloc,
            exact=settings.exact or (cs.exact if cs is not None else False),
            sanitize=settings.sanitize and (cs.sanitize if cs is not None else True),
        ),
        golden_source=source,
        validation=settings.validation,
        run_on=settings.run_on,
        use_cache=settings.cache,
        error=error,
        notes=notes,
        reference=reference,
    )


class ConfigCache:
    """Resolved configuration per dump folder, until a settings or config file change."""

    def __init__(self) -> None:
        self.settings = Settings()
        self.root: Path | None = None
        self._by_folder: dict[Path, Resolved] = {}

    def update(self, raw: Any) -> list[str]:
        self.settings, problems = merge(self.settings, raw)
        self.clear()
        env = env_problem()  # the worker inherits it: say so rather than run with the default budget
        if env is not None and self.settings.max_alloc is None:
            problems.append(f"{env}; the default allocation budget applies (set 'maxAlloc' or fix the variable)")
        return problems

    def clear(self) -> None:
        self._by_folder.clear()

    def get(self, dump: Path) -> Resolved:
        folder = dump.parent
        hit = self._by_folder.get(folder)
        if hit is None:
            hit = resolve(dump, self.settings, self.root)
            self._by_folder[folder] = hit
        return hit
