"""What a run compares with, decided once for every caller (the CLI, the library, the pytest
plugin, the worker and the debugger).

The rule (docs/goldens.md):

* golden bundles given (arguments, ``--inputs/--expected``), else the case's, are loaded;
* an expected bundle without tensors (a program that returns its result, say): the folder's
  earliest dump run on those inputs is the reference, with a note saying so;
* no goldens, or ``differential`` asked for: the earliest dump run on synthesized inputs (the
  case's ``generate`` table and ``seed``) is the reference;
* the entry, the timeout, ``exact`` and the allocation budget of the reference run are the run's
  (:class:`.config.RunSettings`).

Errors are :class:`.golden.GoldenError`: a bundle that cannot be loaded, or a
:class:`.differential.GenerateError` (inputs that cannot be synthesized) or
:class:`.differential.DifferentialError` (the earliest dump does not run).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from . import differential as dif
from .config import Case, ConfigError, RunSettings, discover_dumps, dump_folder, find_case
from .folders import bundle_identity
from .golden import GoldenError, load_bundle

Bundle = Mapping[str, torch.Tensor]


@dataclass(slots=True)
class Compared:
    """The tensors a run starts from and compares with, and where they came from."""

    inputs: dict[str, torch.Tensor]
    expected: dict[str, torch.Tensor]
    # the golden bundle files, when the results may be keyed by them (else by the tensors)
    bundle_paths: tuple[str, str] | None = None
    reference: dif.Reference | None = None  # differential mode: the earliest dump's run
    note: str | None = None  # to tell the user once (an empty expected bundle)

    @property
    def differential(self) -> bool:
        return self.reference is not None

    @property
    def label(self) -> str:
        """``goldens``, or ``00_frontend (no goldens)``."""
        return self.reference.label if self.reference is not None else "goldens"

    def describe(self) -> str:
        return self.reference.describe() if self.reference is not None else self.label

    def to_json(self) -> dict[str, Any]:
        """The ``compared_with`` entry of a report."""
        if self.reference is not None:
            return self.reference.to_json()
        return dif.goldens_json(*(self.bundle_paths or (None, None)))


def resolve(
    path: str | Path,
    case: Case | None,
    settings: RunSettings,
    *,
    inputs: Bundle | str | Path | None = None,
    expected: Bundle | str | Path | None = None,
    differential: bool = False,
    seed: int | None = None,
    use_cache: bool = True,
) -> Compared:
    """What the dumps at ``path`` (a dump, its folder or the folder above) are compared with.

    ``inputs``/``expected``: bundles (tensors or files) given by the caller; each one not given
    is the ``case``'s. ``differential``: the synthesized reference even when there are goldens.
    ``seed``: of the synthesized inputs, instead of the case's. ``use_cache``: the on-disk cache
    of synthesized references.
    """
    given_in = inputs if inputs is not None else (case.inputs if case is not None else None)
    given_exp = expected if expected is not None else (case.expected if case is not None else None)
    if differential or (given_in is None and given_exp is None):
        if case is None:
            raise GoldenError(f"no golden tensors for {path}")
        ref = dif.for_case(
            _folder_dumps(path),
            case,
            entry=settings.entry,
            timeout=settings.timeout_s,
            use_cache=use_cache,
            seed=seed,
            exact=settings.exact,
            max_alloc=settings.max_alloc,
        )
        return Compared(ref.inputs, ref.expected, reference=ref)
    if given_in is None or given_exp is None:
        raise GoldenError(f"no golden tensors for {path}: pass --inputs/--expected, or add a pypto-lsp.toml [[cases]] entry")
    ins, exp = _bundle(given_in), _bundle(given_exp)
    paths = (str(given_in), str(given_exp)) if isinstance(given_in, str | Path) and isinstance(given_exp, str | Path) else None
    if exp or not ins:
        return Compared(ins, exp, bundle_paths=paths)
    # an expected bundle without tensors: the earliest dump run on these inputs is the reference
    given = str(given_in) if isinstance(given_in, str | Path) else "the inputs given"
    try:
        ref = dif.on_inputs(
            _folder_dumps(path),
            dict(ins),
            given,
            entry=settings.entry,
            timeout=settings.timeout_s,
            exact=settings.exact,
            max_alloc=settings.max_alloc,
        )
    except (OSError, ValueError) as exc:
        raise dif.DifferentialError(str(exc)) from exc
    note = f"the expected bundle {given_exp} holds no tensors: differential mode" if paths else None
    # results are keyed by the tensors, not by the empty bundle
    return Compared(ins, ref.expected, reference=ref, note=note)


_MEMO: dict[tuple[Any, ...], tuple[Bundle, Bundle, str]] = {}


def memoized_differential(folder: str | Path) -> tuple[Bundle, Bundle, str]:
    """(inputs, expected, identity) for the language server's worker, which asked for differential
    mode: the reference of ``folder`` with its case's table, seed and entry; kept in memory until
    the earliest dump or the case changes."""
    try:
        files = discover_dumps(folder)
        case = find_case(files[0])
        st = files[0].stat()
    except (OSError, ValueError, ConfigError) as exc:
        raise dif.DifferentialError(f"no reference for {folder}: {exc}") from exc
    key = (
        str(files[0]),
        st.st_mtime_ns,
        st.st_size,
        json.dumps(case.generate, sort_keys=True, default=str),
        case.seed,
        case.settings.entry,
    )
    hit = _MEMO.get(key)
    if hit is None:
        c = resolve(files[0], case, case.settings, differential=True)
        hit = (c.inputs, c.expected, "differential:" + bundle_identity(None, c.inputs, c.expected))
        if len(_MEMO) > 8:
            _MEMO.clear()
        _MEMO[key] = hit
    return hit


def _folder_dumps(path: str | Path) -> list[Path]:
    """Every dump of the folder ``path`` is in (the reference is its earliest); a dump file alone
    when its folder cannot be listed."""
    try:
        return discover_dumps(dump_folder(discover_dumps(path)[0]))
    except (OSError, ValueError) as exc:
        if Path(path).is_file():
            return [Path(path)]
        raise GoldenError(f"no reference for {path}: {exc}") from exc


def _bundle(v: Bundle | str | Path) -> dict[str, torch.Tensor]:
    if isinstance(v, str | Path):
        return load_bundle(v)
    return v if isinstance(v, dict) else dict(v)
