"""``validate_passes``: the library's entry point for a folder of dumps (or one dump).

Above :mod:`.engine` (one text), :mod:`.folders` (many files, with the result cache) and
:mod:`.reference` (what the run compares with: the arguments, else the folder's configuration,
else the earliest dump as the reference): it picks the tolerances and hands the files to
:func:`.folders.validate_files`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

from .config import Case, RunSettings, discover_dumps, find_case
from .folders import validate_files
from .process_setup import configure_process
from .reference import resolve
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
    configure_process()
    for label, v in (("rtol", rtol), ("atol", atol)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0):
            raise ValueError(f"{label} must be a number >= 0, got {v!r}")
    files = discover_dumps(path)
    case: Case | None = None
    if inputs is None or expected is None:
        case = find_case(files[0], config)
    # the case's settings (no case: the defaults without a timeout), with the arguments given instead
    settings = (case.settings if case else RunSettings(timeout_s=0)).override(rtol=rtol, atol=atol, entry=entry, timeout_s=timeout)
    compared = resolve(path, case, settings, inputs=inputs, expected=expected)
    return validate_files(
        files,
        compared.inputs,
        compared.expected,
        settings=settings,
        use_cache=False,
        on_result=on_result,
        bundle_paths=compared.bundle_paths,
        should_stop=cancel.is_set if cancel is not None else None,
    )
