"""Settings: ``initializationOptions`` and ``workspace/didChangeConfiguration``, merged with ``pypto-lsp.toml``.

The client sends ``{"pypto-lsp": {runOn, golden: {inputs, expected}, validation, cache, ...}}``
(``initializationOptions`` may also be the inner object), and every run setting that declares
an editor key (``rtol``, ``atol``, ``timeoutSeconds``, ``maxAlloc``, ...: the ``editor`` metadata
of :class:`validate.config.RunSettings`, read here generically). What a dump uses is resolved
per dump folder:

* goldens, entry: the ``pypto-lsp.toml`` ``[[cases]]`` entry covering the folder (or a
  ``golden/`` / ``tensors.pt`` beside it, see :func:`validate.config.find_case`); the
  settings' golden paths only when nothing there applies;
* every run setting: a value the case sets (other than the default) wins over the editor's
  setting, which wins over the case's value (the default); the project's file knows its numbers
  better than a global editor setting. The allocation budget's default is the worker's
  (ir.alloc_budget).

Settings must be valid as a whole value: a bad one is reported and the previous kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..ir.alloc_budget import env_problem
from ..validate import config as vconfig
from ..validate.carriers import Editor, carried

SECTION = "pypto-lsp"
RUN_ON = ("onSave", "onType", "manual")
# the run settings the editor may set: (RunSettings field, its Editor), in field order
_EDITOR = [(f.name, f.metadata["check"], e) for f, e in carried(vconfig.RunSettings, "editor")]
_EDITOR_FIELDS = frozenset(name for name, _, _ in _EDITOR)
_DEFAULTS = {f.name: f.default for f in fields(vconfig.RunSettings)}
# the client's own settings, never an error when sent (the extension sends the section whole)
_CLIENT_KEYS = ("interpreter", "trace")


@dataclass(frozen=True, slots=True)
class Settings:
    run_on: str = "onSave"
    golden_inputs: str | None = None
    golden_expected: str | None = None
    validation: bool = True
    cache: bool = True
    # the run settings the editor sets, by RunSettings field name ('maxAlloc' -> max_alloc); a
    # field not here is not set: the case's value applies
    run: Mapping[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        """A run setting the editor may set (``settings.max_alloc``): its value, None when not set."""
        if name in _EDITOR_FIELDS:
            return self.run.get(name)
        raise AttributeError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "runOn": self.run_on,
            "golden": {"inputs": self.golden_inputs, "expected": self.golden_expected},
            "validation": self.validation,
            "cache": self.cache,
            **{e.key: self.run.get(name) for name, _, e in _EDITOR},
        }


def _unwrap(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    inner = raw.get(SECTION)
    if isinstance(inner, dict):
        return inner
    return raw


def _unset(v: Any, e: Editor) -> bool:
    """null, or "" for a setting typed as a string (its default in VS Code): not set."""
    return v is None or (v == "" and e.schema.get("type") == "string")


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
    for key in ("validation", "cache"):
        if key in d:
            if isinstance(d[key], bool):
                upd[key] = d[key]
            else:
                problems.append(f"'{key}' must be true or false, got {d[key]!r}")
    run = dict(base.run)
    known = {"runOn", "golden", "validation", "cache", *_CLIENT_KEYS}
    for name, check, e in _EDITOR:  # every run setting with an editor key, by its check
        known.update((e.key, *e.aliases))
        given = next((k for k in (e.key, *e.aliases) if k in d), None)  # the key, else an alias
        if given is None:
            continue
        if _unset(d[given], e):
            run.pop(name, None)
            continue
        try:
            run[name] = check(d[given], given)
        except ValueError as exc:  # a bad value keeps the previous one
            problems.append(str(exc))
    if run != base.run:
        upd["run"] = run
    unknown = sorted(k for k in d if k not in known)
    if unknown:
        problems.append(f"ignored unknown settings: {', '.join(unknown)}")
    return replace(base, **upd), problems


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

    # the case's run settings; where it keeps a setting's default, the editor's value if it sets one
    cs = case.settings if case is not None else vconfig.RunSettings()
    editor = {k: v for k, v in settings.run.items() if getattr(cs, k) == _DEFAULTS[k]}
    return Resolved(
        folder=folder,
        inputs=inputs,
        expected=expected,
        settings=replace(cs, **editor),
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
