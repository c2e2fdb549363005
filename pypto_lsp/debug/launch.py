"""What a ``launch`` request resolves to: the dump's text, the goldens (or the differential
reference), the run settings and the pass before it (whose values the tiles are shown against)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..ir.parser import MAX_BYTES, read_dump
from ..validate import config as cfg
from ..validate.config import RunSettings
from ..validate.engine import Compiled, compile_text, resolve_args

__all__ = ["LaunchError", "Prepared", "prepare", "read_text", "launch_filters"]


class LaunchError(Exception):
    """A launch that cannot start: the message says why (shown by the client)."""


@dataclass(slots=True)
class Prepared:
    path: Path
    text: str
    inputs: dict[str, torch.Tensor]
    expected: dict[str, torch.Tensor]
    settings: RunSettings
    compared_with: str  # "goldens <paths>" or "<earliest dump> (no goldens)"
    previous: Path | None = None  # the pass before this one in its folder
    previous_text: str | None = None
    comp: Compiled | None = None  # compiled once, traced, as the run uses it
    notes: list[str] = field(default_factory=list)


def _path(v: Any, key: str, base: Path | None = None) -> Path | None:
    if v is None or v == "":
        return None
    if not isinstance(v, str):
        raise LaunchError(f"launch: '{key}' must be a path string, got {type(v).__name__}")
    p = Path(v).expanduser()
    if not p.is_absolute() and base is not None:
        p = base / p
    return p


def read_text(path: Path) -> str:
    """A dump's text: a regular file within the size limit ``check``/``validate`` apply."""
    raw = read_dump(path)
    if len(raw) > MAX_BYTES:
        raise OSError(f"over the {MAX_BYTES // 2**20} MiB limit of a dump")
    return raw.decode("utf-8-sig")


def prepare(args: dict[str, Any]) -> Prepared:
    """Resolve a launch request's arguments (raises :class:`LaunchError` with the reason)."""
    from ..validate import differential as dif
    from ..validate.golden import GoldenError
    from ..validate.reference import resolve

    program = _path(args.get("program"), "program")
    if program is None:
        raise LaunchError("launch: 'program' (a pass dump file) is required")
    program = program.resolve()
    if not program.is_file():
        raise LaunchError(f"launch: no such dump file: {program}")
    try:
        text = read_text(program)
    except (OSError, UnicodeDecodeError) as exc:
        raise LaunchError(f"launch: cannot read {program}: {exc}") from exc
    cwd = _path(args.get("cwd"), "cwd")
    config = _path(args.get("config"), "config", cwd)
    inputs_p = _path(args.get("inputs"), "inputs", cwd)
    expected_p = _path(args.get("expected"), "expected", cwd)
    if (inputs_p is None) != (expected_p is None):
        raise LaunchError("launch: 'inputs' and 'expected' go together")
    entry = args.get("entry") or None
    if entry is not None and not isinstance(entry, str):
        raise LaunchError("launch: 'entry' must be a function name")
    try:
        case = cfg.find_case(program, config)
    except (cfg.ConfigError, ValueError, OSError) as exc:
        raise LaunchError(f"launch: {exc}") from exc
    settings = case.settings.override(entry=entry)
    try:
        folder = cfg.dump_folder(program)
        files = cfg.discover_dumps(folder)
    except (FileNotFoundError, ValueError, OSError):
        files = [program]
    notes: list[str] = []
    try:
        compared = resolve(program, case, settings, inputs=inputs_p, expected=expected_p)
    except (dif.DifferentialError, dif.GenerateError) as exc:  # the synthesized reference
        raise LaunchError(f"launch: no goldens, and {exc}") from exc
    except GoldenError as exc:
        raise LaunchError(f"launch: {exc}") from exc
    inputs, expected = compared.inputs, compared.expected
    if compared.bundle_paths is not None:
        compared_label = "goldens " + " / ".join(Path(p).name for p in compared.bundle_paths)
    else:
        compared_label = compared.label
    if compared.note is not None:
        notes.append(compared.note)
    previous = None
    order = [f.resolve() for f in files]
    if program in order and order.index(program) > 0:
        previous = order[order.index(program) - 1]
    comp = compile_text(  # as the run compiles it (one cache entry): traced, sanitized as the case says
        text,
        str(program),
        settings.entry,
        trace=True,
        memory=settings.memory,
        backend=settings.backend,
        exact=settings.exact,
        sanitize=bool(settings.sanitize),
    )
    if comp.generated is None:
        err = comp.error
        at = f" (line {err.line})" if err is not None and err.line else ""
        raise LaunchError(f"launch: {program.name} cannot run{at}: {err.message if err else 'no code'}")
    if comp.program is not None and comp.generated.entry is not None:
        try:
            resolve_args(comp.program, comp.generated.entry, inputs)
        except (KeyError, GoldenError) as exc:
            raise LaunchError(f"launch: the inputs do not fit {program.name}: {exc.args[0] if exc.args else exc}") from exc
    prev_text = None
    if previous is not None:
        try:
            prev_text = read_text(previous)
        except (OSError, UnicodeDecodeError):
            prev_text = None
    return Prepared(program, text, inputs, expected, settings, compared_label, previous, prev_text, comp, notes)


def launch_filters(args: dict[str, Any]) -> set[str]:
    """The exception stops a launch asks for (``stopOnNaN`` ...; ``stopOnDeadlock`` unless false)."""
    out = {f for flag, f in (("stopOnNaN", "nan"), ("stopOnFirstDifference", "difference"), ("stopOnFinding", "finding")) if args.get(flag)}
    if args.get("stopOnDeadlock", True) is not False:
        out.add("deadlock")
    return out
