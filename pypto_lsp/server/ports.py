"""What the protocol-free core needs from the editor side: one small interface, implemented by the LSP layer.

The core (:mod:`.core`, :mod:`.validation`) says *what* changed; the implementation
(:class:`.lsp.PyptoServer`) decides how the client hears of it (``publishDiagnostics``,
``codeLens/refresh``, a notification, ``window/logMessage``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from ..validate.config import ConfigWarning
from .documents import DocView


class Client(Protocol):
    def publish(self, view: DocView) -> None:
        """The diagnostics of ``view``'s document may have changed."""

    def clear(self, uri: str) -> None:
        """Show nothing for ``uri`` (a closed document keeps its result, not its squiggles)."""

    def shown(self, uri: str) -> bool:
        """Whether the client shows diagnostics of ``uri`` now."""

    def refresh_lenses(self) -> None:
        """Some lens may have changed."""

    def file_result(self, payload: dict[str, Any]) -> None:
        """A file was validated (``contract.FILE_RESULT_NOTIFICATION``)."""

    def config_warnings(self, path: Path, warnings: list[ConfigWarning], lines: list[str]) -> None:
        """The unknown keys of one config file (an empty list clears them)."""

    def log(self, message: str, level: int = ...) -> None:
        """To the log, and from INFO up to the client."""
