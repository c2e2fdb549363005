"""Misspelt keys in ``pypto-lsp.toml`` / ``[tool.pypto-lsp]``: which config files have warnings to show.

A key the configuration does not know (``rtoll = 5``) is ignored; silently, the tolerance the
user meant would not apply. When a dump folder's configuration is used, every config file on
the way up from it is checked (:func:`validate.config.config_warnings`) -- once per file
version -- and its unknown keys go to the client (:meth:`.ports.Client.config_warnings`) as
warnings on their lines, cleared when fixed. Protocol-free.
"""

from __future__ import annotations

from pathlib import Path

from ..validate import config as vconfig


class ConfigWarnings:
    """Remembers which config file versions were checked, and whether they had warnings."""

    def __init__(self) -> None:
        self._seen: dict[Path, tuple[int, int, int]] = {}  # file -> (mtime, size, inode) when checked
        self._had: dict[Path, bool] = {}

    def changed(self, folder: Path) -> list[tuple[Path, list[vconfig.ConfigWarning], list[str]]]:
        """(file, its warnings, its lines) for each config file of ``folder`` whose warnings must be
        (re)published: a new version with warnings, or one that had some and has none now."""
        out = []
        for cfg in vconfig.config_files(folder):
            try:
                st = cfg.stat()
            except OSError:
                continue
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            if self._seen.get(cfg) == stamp:
                continue
            warnings = vconfig.config_warnings(cfg)
            had = self._had.get(cfg, False)
            self._seen[cfg] = stamp
            self._had[cfg] = bool(warnings)
            if not warnings and not had:
                continue  # nothing shown, nothing to show
            try:
                lines = cfg.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines = []
            out.append((cfg, warnings, lines))
        return out
