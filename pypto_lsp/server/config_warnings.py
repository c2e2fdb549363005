"""Misspelt keys in ``pypto-lsp.toml`` / ``[tool.pypto-lsp]``: warnings on the config file itself.

A key the configuration does not know (``rtoll = 5``) is ignored; silently, the tolerance the
user meant would not apply. When a dump folder's configuration is used, every config file on
the way up from it is checked (:func:`validate.config.config_warnings`) and its unknown keys are
published as warning diagnostics on their lines -- once per file version, and cleared when fixed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ..validate import config as vconfig
from .documents import path_to_uri
from .results import SOURCE

if TYPE_CHECKING:
    from .app import PyptoServer


def publish_config_warnings(ls: PyptoServer, folder: Path) -> None:
    """Publish (or clear) the unknown-key warnings of the config files that apply to ``folder``."""
    seen: dict[Path, tuple[int, int, int]] = ls.config_warned
    for cfg in vconfig.config_files(folder):
        try:
            st = cfg.stat()
        except OSError:
            continue
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if seen.get(cfg) == stamp:
            continue
        warnings = vconfig.config_warnings(cfg)
        had = ls.config_warned_any.get(cfg, False)
        seen[cfg] = stamp
        ls.config_warned_any[cfg] = bool(warnings)
        if not warnings and not had:
            continue  # nothing shown, nothing to show
        try:
            lines = cfg.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            lines = []
        diags = []
        for w in warnings:
            text = lines[w.line - 1] if 0 < w.line <= len(lines) else ""
            start = max(text.find(w.key), 0)
            end = start + len(w.key) if w.key in text else len(text)
            diags.append(
                types.Diagnostic(
                    range=types.Range(types.Position(w.line - 1, start), types.Position(w.line - 1, end)),
                    message=w.message,
                    severity=types.DiagnosticSeverity.Warning,
                    code="unknown-config-key",
                    source=SOURCE,
                )
            )
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=path_to_uri(cfg), diagnostics=diags))
        if warnings:
            ls.log(f"{cfg}: {len(warnings)} unknown key(s) ignored: {', '.join(w.key for w in warnings)}", 30)
