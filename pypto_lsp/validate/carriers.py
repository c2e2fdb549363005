"""What a run setting declares for the places that carry it, besides its ``[[cases]]`` key.

A run setting (a field of :class:`validate.config.RunSettings`) reaches a run from four places:
the ``[[cases]]`` key of ``pypto-lsp.toml`` (the field's name), a ``pypto-lsp validate`` flag, an
editor setting (``pypto-lsp.<key>``) and the worker request (which carries RunSettings whole).
Each field's metadata (:func:`setting`) says what each place needs: the check of its value, its
flag, its editor key with the JSON schema VS Code shows, its row in the docs. ``cli.py`` builds
the flags from it, ``server/config.py`` reads the editor keys with it, and
``tools/gen_settings.py`` writes the extension's ``package.json`` entries and the docs' tables
from it (``tests/unit/test_settings_carriers.py`` fails when they are out of date).

No torch, no argparse, no LSP: the language server reads these too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields
from typing import Any

from ..ir.alloc_budget import parse_size

# (value, key) -> the setting's value; a ValueError whose message names the key (the TOML
# reader puts the file and the entry in front of it, the editor reports it as it is)
Check = Callable[[Any, str], Any]


@dataclass(frozen=True, slots=True)
class Flag:
    """The setting's ``pypto-lsp validate`` flag."""

    name: str  # "--max-alloc"; argparse's dest comes from it ("max_alloc")
    # argparse's keywords besides the name and ``default`` (always None: not given): help,
    # metavar, type, choices, action ("store_true": a switch)
    options: Mapping[str, Any] = field(default_factory=dict)
    # (the parsed value, the flag's name) -> the setting's value, ValueError with the message
    # after "pypto-lsp validate: "; None: the value as argparse gives it
    convert: Callable[[Any, str], Any] | None = None

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")


@dataclass(frozen=True, slots=True)
class Editor:
    """The setting's editor setting, ``pypto-lsp.<key>`` (the LSP settings object's ``<key>``)."""

    key: str  # "maxAlloc"
    # package.json's entry without scope and description: type, default, minimum, enum ...
    schema: Mapping[str, Any]
    description: str  # what the settings UI shows (Markdown unless ``markdown`` is False)
    markdown: bool = True
    aliases: tuple[str, ...] = ()  # older keys still read (a key given wins over its aliases)


@dataclass(frozen=True, slots=True)
class Doc:
    """The setting's row in the docs' run-settings table (docs/configuration.md)."""

    type: str  # "number ≥ 0", "bool", "size (`512M`, `4G`, bytes)"
    meaning: str  # Markdown, one line


def setting(check: Check, doc: Doc, *, flag: Flag | None = None, editor: Editor | None = None) -> dict[str, Any]:
    """A RunSettings field's metadata: ``check`` the value of its ``[[cases]]`` key (and of its
    editor setting), ``doc`` its docs row, ``flag`` / ``editor`` its other carriers (None: none)."""
    return {"check": check, "doc": doc, "flag": flag, "editor": editor}


def carried(cls: type, kind: str) -> list[tuple[Field[Any], Any]]:
    """The fields of ``cls`` (RunSettings) with a ``kind`` carrier ("flag", "editor", "doc"),
    in field order: [(field, its Flag | Editor | Doc)]."""
    return [(f, f.metadata[kind]) for f in fields(cls) if f.metadata.get(kind) is not None]


# ---------------------------------------------------------------------- value checks


def number(v: Any, key: str) -> float:
    """A finite non-negative number."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0 or v == math.inf:
        raise ValueError(f"'{key}' must be a non-negative number, got {v!r}")
    return float(v)


def seconds(v: Any, key: str) -> float:
    """A non-negative number of seconds, ``inf`` too (no limit, see ``config.time_limit``)."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0:
        raise ValueError(f"'{key}' must be a non-negative number, got {v!r}")
    return float(v)


def switch(v: Any, key: str) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"'{key}' must be true or false, got {v!r}")
    return v


def sanitizer_mode(v: Any, key: str) -> bool | str:
    """``sanitize``: true, false or ``"strict"`` (on, and reads of undefined values that reach
    nothing listed as information; exec.sanitizer)."""
    if isinstance(v, bool) or v == "strict":
        return v
    raise ValueError(f"'{key}' must be true, false or \"strict\", got {v!r}")


def size(v: Any, key: str) -> int:
    try:
        return parse_size(v)
    except ValueError as exc:
        raise ValueError(f"'{key}' must be a size in bytes (or '512M', '4G'): {exc}") from exc


def function_name(v: Any, key: str) -> str:
    if not (isinstance(v, str) and v.isidentifier()):
        raise ValueError(f"'{key}' must be a function name, got {v!r}")
    return v


def backend(v: Any, key: str) -> Any:
    from ..ir.memory import BackendError, capacities

    try:
        capacities(v if isinstance(v, str) else repr(v))
    except BackendError as exc:
        raise ValueError(str(exc)) from exc
    return v


def rank_count(v: Any, key: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"'{key}' must be a whole number of ranks, at least 1, got {v!r}")
    return v


# ---------------------------------------------------------------------- flag conversions


def flag_number(v: float, flag: str) -> float:
    """``--rtol``: a finite number >= 0."""
    if not v >= 0:  # negative or NaN
        raise ValueError(f"{flag} must be a number >= 0, got {v}")
    if v == math.inf:  # inf, 1e400: no JSON number
        raise ValueError(f"{flag} must be a finite number, got {v}")
    return v


def flag_seconds(v: float, flag: str) -> float:
    """``--timeout``: a number >= 0, ``inf`` too."""
    if not v >= 0:
        raise ValueError(f"{flag} must be a number >= 0, got {v}")
    return v


def flag_size(v: str, flag: str) -> int:
    """``--max-alloc 2G``."""
    try:
        return parse_size(v)
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from exc


ON_OFF: Mapping[str, Any] = {"choices": ("on", "off")}


def on_off(v: str, flag: str) -> bool:
    """``--memory on|off``."""
    return v == "on"


def on_off_strict(v: str, flag: str) -> bool | str:
    """``--sanitize on|off|strict``."""
    return "strict" if v == "strict" else v == "on"
