"""``validate_passes``: the library's entry point for a folder of dumps (or one dump).

Above :mod:`.engine` (one text), :mod:`.run` (many files, with the result cache) and
:mod:`.differential` (the reference without goldens): it picks the goldens and tolerances
(arguments, else the folder's configuration, else the earliest dump as the reference) and
hands the files to :func:`.run.validate_files`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

from .config import Case, RunSettings, discover_dumps, dump_folder, find_case
from .differential import for_case, on_inputs
from .engine import configure_torch
from .folders import validate_files
from .golden import GoldenError, load_bundle
from .report import FileResult, Report


def validate_passes(
    path: str | Path,
    inputs: Mapping[str, torch.Tensor] | str | Path | None = None,
    expected: Mapping[str, torch.Tensor] | str | Path | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    entry: str | None = None,
    timeout: float | None = None,
    *,
    config: str | Path | None = None,
    on_result: Callable[[FileResult], None] | None = None,
    cancel: threading.Event | None = None,
) -> Report:
    """Validate every dump under ``path`` (a file, a ``passes_dump/`` folder or its parent).

    ``inputs``/``expected`` are dicts of tensors or bundle paths; when omitted
    they come from the config/golden folder found for ``path``, else from the folder's
    earliest dump run on synthesized inputs (:mod:`.differential`). An expected bundle
    without tensors means the earliest dump run on ``inputs`` is the reference (docs/goldens.md).
    Fresh input copies per file; a failing file never stops the run.
    """
    configure_torch()
    for label, v in (("rtol", rtol), ("atol", atol)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0):
            raise ValueError(f"{label} must be a number >= 0, got {v!r}")
    files = discover_dumps(path)
    case: Case | None = None
    if inputs is None or expected is None:
        case = find_case(files[0], config)
        if not case.has_goldens and inputs is None and expected is None:
            # no goldens: the folder's earliest dump on synthesized inputs is the reference
            ref = for_case(discover_dumps(dump_folder(files[0])), case, entry=entry or case.entry, timeout=timeout or case.timeout_s)
            inputs, expected = ref.inputs, ref.expected
        elif not case.has_goldens:
            raise GoldenError(f"no golden tensors for {path}: pass --inputs/--expected, or add a pypto-lsp.toml [[cases]] entry")
    ins = _bundle(inputs if inputs is not None else (case.inputs if case else None))
    exp = _bundle(expected if expected is not None else (case.expected if case else None))
    if not exp and ins:
        # an expected bundle without tensors (a program returning its result): differential on these inputs
        given = str(inputs if isinstance(inputs, str | Path) else (case.inputs if case and inputs is None else "the inputs given"))
        eff_entry = entry or (case.entry if case else None)
        exp = on_inputs(discover_dumps(dump_folder(files[0])), dict(ins), given, entry=eff_entry, timeout=timeout).expected
        inputs = expected = None  # results are keyed by the tensors, not by the bundle files
    # the case's settings (no case: the defaults without a timeout), with the arguments given instead
    settings = (case.settings() if case else RunSettings(timeout_s=0)).override(rtol=rtol, atol=atol, entry=entry, timeout_s=timeout)
    return validate_files(
        files,
        ins,
        exp,
        settings=settings,
        use_cache=False,
        on_result=on_result,
        bundle_paths=(str(inputs), str(expected)) if isinstance(inputs, str | Path) and isinstance(expected, str | Path) else None,
        should_stop=cancel.is_set if cancel is not None else None,
    )


def _bundle(v: Mapping[str, torch.Tensor] | str | Path | None) -> Mapping[str, torch.Tensor]:
    if v is None:
        return {}
    if isinstance(v, str | Path):
        return load_bundle(v)
    return v
